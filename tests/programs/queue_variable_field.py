"""A variable-size field (Field(..., size=...)) crosses a queue with its bytes."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Pointer,
                   Queue, Segment, State, Uint, main, Persistent)


class Message(State):
    len = Field(Int)
    text = Field(Pointer(Uint(8)), size="state->len")


class Done(State):
    count = Field(Int)
    packed = False


class Compose(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            static char buffer[64];
            int n = inp();
            snprintf(buffer, sizeof buffer, "message number %d", n);
            state->text = (uint8_t *)buffer;
            state->len = (int)strlen(buffer) + 1;
            output { out(); }
        ''')


class Print(Element):
    done = Persistent(Done)

    def states(self, done):
        self.done = done

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            printf("%d bytes: %s\n", state->len, (const char *)state->text);
            __atomic_fetch_add(&done->count, 1, __ATOMIC_RELEASE);
        ''')


done = Done("done")
messages = Queue("messages", size=8)


class Messages(Flow):
    state = PerPacket(Message)

    def impl(self):
        class send(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Compose() >> messages

        class show(Segment):
            def impl(self):
                messages >> Print(states=[done])

        send("send")
        show("show")


Messages()

main(r'''
    for (int i = 1; i <= 12; i += 5)
        send(i);
    while (__atomic_load_n(&done->count, __ATOMIC_ACQUIRE) < 3)
        usleep(1000);
''')
