"""A 200-byte per-packet field never read after the queue is not sent (see --report)."""
from floem import (Array, CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket,
                   Queue, State, Uint, main)


class Packet(State):
    key = Field(Int)
    scratch = Field(Array(Uint(8), 200))


class Fill(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            int key = inp();
            memset(state->scratch, key, sizeof state->scratch);
            state->key = key + state->scratch[199];
            output { out(); }
        ''')


class Key(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->key); }")


q = Queue("q", size=4)


class Packets(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Fill() >> q

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> q.qid
                q >> Key() >> self.out

        push("push")
        pop("pop", default_return="-1")


Packets()

main(r'''
    push(3);
    push(4);
    int first = pop(0), second = pop(0), third = pop(0);
    printf("%d %d %d\n", first, second, third);
''')
