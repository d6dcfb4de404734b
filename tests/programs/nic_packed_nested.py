"""Host -> NIC -> host with a packed per-packet state holding a nested state that is not
packed: the nested state's 32-bit member is aligned within it, but the nested state itself
sits at an odd offset of the packed state, so the NIC program must never make an aligned
pointer to it (a MIPS64 NIC enforces alignment)."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue,
                   Segment, State, Uint, main, target)


class Inner(State):
    seq = Field(Uint(32))
    op = Field(Uint(8))
    packed = False


class Packet(State):
    tag = Field(Uint(8))
    inner = Field(Inner)


class Make(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            int x = inp();
            state->tag = (uint8_t)x;
            state->inner.seq = (uint32_t)x * 100000000u;
            state->inner.op = (uint8_t)(x * 40);
            output { out(); }
        ''')


class Transform(Element):
    """Runs on the NIC."""

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            state->inner.seq = state->inner.seq / 3 + state->tag;
            state->inner.op ^= 0x5a;
            output { out(); }
        ''')


class Show(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            printf("tag=%u seq=%u op=%u\n", state->tag, state->inner.seq, state->inner.op);
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
    for (int i = 1; i <= 4; i++)
        push(i);
    for (int shown = 0; shown < 4; )
        shown += pop(0);
''')
