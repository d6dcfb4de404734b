"""A source emitting several packets per call that never touches the per-packet state, whose
fields are written before they are read: each packet's state is a local of the source's
output port (plan_code: fresh state); the fields of every packet arrive where they are read."""
from floem import (Element, Field, Flow, Input, Int, Output, PerPacket, Persistent, Segment,
                   State, main)


class Packet(State):
    id = Field(Int)
    square = Field(Int)


class Totals(State):
    count = Field(Int)
    ids = Field(Int)
    squares = Field(Int)
    packed = False


class Numbers(Element):
    """Emits 0, 1, 2, 3 per call, three calls in all."""

    def configure(self):
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            static int calls;
            output multiple;
            if (calls++ < 3)
                for (int i = 0; i < 4; i++)
                    out(i);
        ''')


class Square(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            int i = inp();
            state->id = i;
            state->square = i * i;
            output { out(); }
        ''')


class Add(Element):
    totals = Persistent(Totals)

    def states(self, totals):
        self.totals = totals

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            inp();
            totals->ids += state->id;
            totals->squares += state->square;
            __atomic_fetch_add(&totals->count, 1, __ATOMIC_RELEASE);
        ''')


totals = Totals("totals")


class Fresh(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class numbers(Segment):
            def impl(self):
                Numbers() >> Square() >> Add(states=[totals])

        numbers("numbers")


Fresh()

main(r'''
    while (__atomic_load_n(&totals->count, __ATOMIC_ACQUIRE) < 12)
        usleep(1000);
    printf("packets %d, ids %d, squares %d\n", totals->count, totals->ids, totals->squares);
''')
