"""Floem demo: a packet generator thread, per-packet state, shared counters, a callable query.

    segment generate (thread):  Generate -> Classify -+-> CountSmall
                                                      +-> CountLarge
    callable query(kind):       Lookup -> return

Run it:  floem run examples/demo/counters.py
"""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket,
                   Persistent, Segment, State, Uint, main)

PACKETS = 1000


class Stats(State):
    """Counters shared by the counting elements and the query (persistent state)."""

    small = Field(Int)
    large = Field(Int)
    bytes = Field(Uint(64))
    done = Field(Int)
    packed = False


class Packet(State):
    """What each packet carries from element to element (per-packet state)."""

    id = Field(Int)
    size = Field(Int)


class Generate(Element):
    """Source: makes packets 1..PACKETS with pseudo-random sizes, then idles."""

    def configure(self):
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            static int next = 1;
            int id = next <= %d ? next++ : 0;
            if (id) {
                state->id = id;
                state->size = 64 + (id * 7919) %% 1437;
            }
            output switch { case id: out(); }
        ''' % PACKETS)


class Classify(Element):
    def configure(self):
        self.inp = Input()
        self.small = Output()
        self.large = Output()

    def impl(self):
        self.run_c(r'''
            output switch {
                case state->size < 512: small();
                else: large();
            }
        ''')


class Count(Element):
    """Adds the packet to the shared counters; `field` picks which counter."""

    stats = Persistent(Stats)

    def states(self, stats):
        self.stats = stats

    def configure(self, field):
        self.inp = Input()
        self.field = field

    def impl(self):
        self.run_c(r'''
            stats->%s++;
            stats->bytes += state->size;
            if (state->id == %d)
                __atomic_store_n(&stats->done, 1, __ATOMIC_RELEASE);
        ''' % (self.field, PACKETS))


class Lookup(Element):
    stats = Persistent(Stats)

    def states(self, stats):
        self.stats = stats

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int kind = inp();
            output { out(kind == 0 ? stats->small : stats->large); }
        ''')


stats = Stats("stats")


class Traffic(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class generate(Segment):
            def impl(self):
                classify = Classify()
                Generate() >> classify
                classify.small >> Count(field="small", states=[stats])
                classify.large >> Count(field="large", states=[stats])

        generate("generate")


class query(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Lookup(states=[stats]) >> self.out


Traffic()
query("query")

main(r'''
    while (!__atomic_load_n(&stats->done, __ATOMIC_ACQUIRE))
        usleep(1000);
    printf("small packets: %d\n", query(0));
    printf("large packets: %d\n", query(1));
    printf("bytes: %llu\n", (unsigned long long)stats->bytes);
''')
