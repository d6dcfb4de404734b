"""Host -> NIC -> host: 8-, 16-, 32- and 64-bit per-packet fields transformed on the NIC."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue,
                   Segment, Sint, State, Uint, main, target)


class Packet(State):
    a = Field(Uint(8))
    b = Field(Uint(16))
    c = Field(Uint(32))
    d = Field(Sint(64))


class Make(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            int x = inp();
            state->a = (uint8_t)(x * 50);
            state->b = (uint16_t)(x * 3000);
            state->c = (uint32_t)x * 100000000u;
            state->d = -(int64_t)x * 5000000000LL;
            output { out(); }
        ''')


class Transform(Element):
    """Runs on the NIC: arithmetic on every field, in the NIC's byte order."""

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            state->a += 7;
            state->b ^= 0x0ff0;
            state->c = state->c / 3 + 1;
            state->d = state->d * 2 + 1;
            output { out(); }
        ''')


class Show(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            printf("a=%u b=%u c=%u d=%lld\n", state->a, state->b, state->c, (long long)state->d);
            output { out(1); }
        ''')


to_nic = Queue("to_nic", size=16)
to_host = Queue("to_host", size=16)


class RoundTrip(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Make() >> to_nic

        class on_nic(Segment):
            def impl(self):
                to_nic >> Transform() >> to_host

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> to_host.qid
                to_host >> Show() >> self.out

        push("push")
        on_nic("on_nic", device=target.NIC)
        pop("pop", default_return="0")


RoundTrip()

main(r'''
    for (int i = 1; i <= 6; i++)
        push(i);
    for (int shown = 0; shown < 6; )
        shown += pop(0);
''')
