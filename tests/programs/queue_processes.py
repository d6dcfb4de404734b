"""Segments in two executables (process=...) sharing a queue and persistent state."""
from floem import (Element, Field, Flow, Input, Int, Output, PerPacket, Persistent, Queue,
                   Segment, State, main)


class Packet(State):
    n = Field(Int)


class Totals(State):
    received = Field(Int)
    sum = Field(Int)
    packed = False


class Produce(Element):
    def configure(self):
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            static int next = 1;
            int n = next <= 1000 ? next++ : 0;
            state->n = n;
            output switch { case n: out(); }
        ''')


class Consume(Element):
    totals = Persistent(Totals)

    def states(self, totals):
        self.totals = totals

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            totals->sum += state->n;
            __atomic_fetch_add(&totals->received, 1, __ATOMIC_RELEASE);
        ''')


totals = Totals("totals")
link = Queue("link", size=64)


class Pipeline(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class producer(Segment):
            def impl(self):
                Produce() >> link

        class consumer(Segment):
            def impl(self):
                link >> Consume(states=[totals])

        producer("producer", process="sender")
        consumer("consumer")


Pipeline()

main(r'''
    while (__atomic_load_n(&totals->received, __ATOMIC_ACQUIRE) < 1000)
        usleep(1000);
    printf("received %d packets, sum %d\n", totals->received, totals->sum);
''')
