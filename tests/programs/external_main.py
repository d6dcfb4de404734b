"""external_main: an existing C program (external_main_program.c, with its own main) is the
executable; it calls a callable segment and reads results a thread segment queued for it."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Queue,
                   Segment, State, external_main)


class Number(State):
    n = Field(Int)


class Inc(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("int x = inp(); output { out(x + 1); }")


class Squares(Element):
    """Source: 1, 4, 9, 16, 25, then nothing."""

    def configure(self):
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            static int next = 1;
            bool more = next <= 5;
            if (more) {
                state->n = next * next;
                next++;
            } else {
                usleep(1000);
            }
            output switch { case more: out(); }
        ''')


class Take(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->n); }")


class inc2(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Inc() >> Inc() >> self.out


results = Queue("results", size=8)


class Produce(Flow):
    state = PerPacket(Number)

    def impl(self):
        class produce(Segment):
            def impl(self):
                Squares() >> results

        class next_square(CallableSegment):
            """int next_square(int qid): the next queued square, or -1."""

            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> results.qid
                results >> Take() >> self.out

        produce("produce")
        next_square("next_square", default_return="-1")


inc2("inc2")
Produce()
external_main("external_main_program.c")
