"""A lossy queue from a NIC segment to the host, with room for every packet: it must not
drop any, as on the CPU (`-D device=cpu`). Found by the differential test: through the
sync layer, the NIC dropped the packets it enqueued before its manager had read which host
entries are free; a lossy NIC enqueue now drops only when the latest read found the host
still holding the entry (floem_sync_enq_full)."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue,
                   Segment, State, main, param, target)

device = param("device", "nic", choices=["cpu", "nic"], help="where the source runs")


class Packet(State):
    n = Field(Int)


class Burst(Element):
    """Makes 256 packets as fast as it can, then sleeps."""

    def configure(self):
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            static int next;
            if (next == 256) {
                usleep(1000);
                return;
            }
            state->n = next++;
            output { out(); }
        ''')


class Number(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->n); }")


room = Queue("room", size=256, lossless=False)


class Lossy(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class burst(Segment):
            def impl(self):
                Burst() >> room

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> room.qid
                room >> Number() >> self.out

        burst("burst", device=target.NIC if device == "nic" else target.CPU)
        pop("pop", default_return="-1")


Lossy()

main(r'''
    /* Every packet arrives within milliseconds; a dropped one never does, so stop
       waiting after ten seconds and print what came. */
    int got = 0, sum = 0;
    for (int polls = 0; got < 256 && polls < 100000; polls++) {
        int n = pop(0);
        if (n == -1) {
            usleep(100);
            continue;
        }
        got++;
        sum += n;
    }
    printf("received %d packets, sum %d\n", got, sum);
''')
