"""The NIC target: the host hands values to a NIC segment through a queue and reads the results back."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket,
                   Persistent, Queue, Segment, State, Uint, main, target)


class Msg(State):
    """Fields of 8, 16, 32 and 64 bits: they cross host <-> NIC in a defined byte order."""

    seq = Field(Uint(16))
    value = Field(Uint(32))
    total = Field(Uint(64))
    on_nic = Field(Uint(8))


class Running(State):
    """Used by NIC elements only, so it lives in NIC memory: a plain pointer there."""

    sum = Field(Uint(64))


class Make(Element):
    """On the host: numbers the value and fills the per-packet state."""

    def configure(self):
        self.inp = Input(Uint(32))
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            static uint16_t seq = 0;
            state->seq = ++seq;
            state->value = inp();
            output { out(); }
        ''')


class Accumulate(Element):
    """Adds the value to a running total; says where it ran (impl_nic is the NIC's body)."""

    running = Persistent(Running)

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            running->sum += state->value;
            state->total = running->sum;
            state->on_nic = 0;
            output { out(); }
        ''')

    def impl_nic(self):
        self.run_c(r'''
            running->sum += state->value;
            state->total = running->sum;
            state->on_nic = 1;
            output { out(); }
        ''')


class Show(Element):
    """On the host: prints the result; returns 1 to say one was shown."""

    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            printf("#%u: value %u, total %llu, added on the %s\n", state->seq, state->value,
                   (unsigned long long)state->total, state->on_nic ? "NIC" : "host");
            output { out(1); }
        ''')


to_nic = Queue("to_nic", size=8)
to_host = Queue("to_host", size=8)


class Offload(Flow):
    state = PerPacket(Msg)

    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(Uint(32))

            def impl(self):
                self.inp >> Make() >> to_nic

        class add(Segment):
            def impl(self):
                to_nic >> Accumulate() >> to_host

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> to_host.qid               # dequeue from instance arg0 (here 0)
                to_host >> Show() >> self.out

        push("push")
        add("add", device=target.NIC)
        pop("pop", default_return="0")              # 0: nothing to show yet


Offload()

main(r'''
    for (int i = 1; i <= 4; i++)
        push(i * 1000000000u);
    for (int shown = 0; shown < 4; )
        shown += pop(0);
''')
