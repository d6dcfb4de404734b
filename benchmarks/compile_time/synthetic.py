"""A synthetic app for the compile-time benchmark: N elements in a chain or a fan-out.

    -D shape=chain    a thread segment: a source, then N increments one after another
    -D shape=fanout   a thread segment: a source whose output port feeds N increments
    -D n=N            how many increments (default 1000)
"""
from floem import Element, Input, Int, Output, Segment, param

SHAPE = param("shape", "chain", choices=["chain", "fanout"])
N = param("n", 1000)


class Count(Element):
    """Emits 0, 1, 2, ... (the segment's source)."""

    def configure(self):
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            static _Thread_local int next;
            output { out(next++); }
        ''')


class Inc(Element):
    """Adds one."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            output { out(x + 1); }
        ''')


class Sink(Element):
    """Keeps the last value where the compiler cannot drop it."""

    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c(r'''
            static volatile int last;
            last = inp();
            (void)last;
        ''')


class Shape(Segment):
    def impl(self):
        source = Count()
        if SHAPE == "chain":
            x = source
            for _ in range(N):
                x = x >> Inc()
            x >> Sink()
        else:
            for _ in range(N):
                source >> Inc() >> Sink()


Shape("shape")
