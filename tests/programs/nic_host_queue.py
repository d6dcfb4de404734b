"""A program with a NIC segment and a queue only the host uses: the NIC process lays the
host queue out in shared memory too (it must know its entry size) but never touches it."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue,
                   Segment, State, main, target)


class Packet(State):
    x = Field(Int)


class Take(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c("state->x = inp(); output { out(); }")


class Double(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c("state->x *= 2; output { out(); }")


class Give(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->x); }")


to_nic = Queue("to_nic", size=16)
to_host = Queue("to_host", size=16)
on_host = Queue("on_host", size=16)


class Flows(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Take() >> to_nic

        class on_nic(Segment):
            def impl(self):
                to_nic >> Double() >> to_host

        class keep(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Take() >> on_host

        def getter(queue):
            class get(CallableSegment):
                def configure(self):
                    self.inp = Input(Int)
                    self.out = Output(Int)

                def impl(self):
                    self.inp >> queue.qid
                    queue >> Give() >> self.out
            return get

        push("push")
        keep("keep")
        on_nic("on_nic", device=target.NIC)
        getter(to_host)("from_nic", default_return="-1")
        getter(on_host)("from_host", default_return="-1")


Flows()

main(r'''
    for (int i = 1; i <= 3; i++) {
        push(i);
        keep(10 * i);
    }
    for (int got = 0; got < 3; ) {
        int v = from_nic(0);
        if (v != -1) {
            printf("nic %d\n", v);
            got++;
        }
    }
    for (int v; (v = from_host(0)) != -1; )
        printf("host %d\n", v);
''')
