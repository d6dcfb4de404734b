"""A NIC element updates host-resident persistent state through DMA; main reads it back."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket,
                   Persistent, Queue, Segment, State, Uint, main, target)


class Stats(State):
    packets = Field(Uint(32))
    bytes = Field(Uint(64))
    last = Field(Int)


class Packet(State):
    size = Field(Int)


class Make(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c("state->size = inp(); output { out(); }")


class Account(Element):
    """On the NIC, `stats` is a host address: read, update and write it back by DMA."""

    stats = Persistent(Stats)

    def states(self, stats):
        self.stats = stats

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            Stats local;
            dma_read(stats, sizeof local, &local);
            floem_wire_Stats(&local);
            local.packets += 1;
            local.bytes += (uint64_t)state->size;
            local.last = state->size;
            floem_wire_Stats(&local);
            /* Everything but the count, then the count: main waits for the count. */
            size_t rest = offsetof(Stats, bytes);
            dma_write((char *)stats + rest, sizeof local - rest, (char *)&local + rest);
            dma_write(stats, sizeof local.packets, &local);
        ''')


stats = Stats("stats")
packets = Queue("packets", size=8)


class Accounting(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class send(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Make() >> packets

        class account(Segment):
            def impl(self):
                packets >> Account(states=[stats])

        send("send")
        account("account", device=target.NIC)


Accounting()

main(r'''
    for (int i = 1; i <= 100; i++)
        send(i * 10);
    while (__atomic_load_n(&stats->packets, __ATOMIC_ACQUIRE) < 100)
        usleep(1000);
    printf("packets=%u bytes=%llu last=%d\n", stats->packets,
           (unsigned long long)stats->bytes, stats->last);
''')
