"""Callable segments for a legacy C program: `floem build simple_math.py -o build`.

Every segment lives in process "simple_math", so the build writes
`build/simple_math.h` and `build/libsimple_math.{a,so}` for legacy.c to link.

    add(a, b)       Add            -> return a + b      (two argument values)
    inc2(x)         Inc -> Inc     -> return x + 2      (returns a value)
    exact_sqrt(x)   ExactSqrt      -> return r          (-1 when x is not a perfect square)
    accumulate(x)   Accumulate     -> return running sum (persistent state across calls)
"""
from floem import CallableSegment, Element, Field, Input, Int, Output, Persistent, State


class Add(Element):
    """Adds the two values of its input."""

    def configure(self):
        self.inp = Input(Int, Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            (int a, int b) = inp();
            output { out(a + b); }
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


class ExactSqrt(Element):
    """Emits the square root of x only when x is a perfect square; otherwise nothing."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            int r = 0;
            while (x >= 0 && (long long)(r + 1) * (r + 1) <= x)
                r++;
            output switch {
                case x >= 0 && r * r == x: out(r);
            }
        ''')


class Total(State):
    """The running sum kept by `accumulate` between calls."""

    sum = Field(Int)


class Accumulate(Element):
    """Adds x to the shared total and emits the new total."""

    total = Persistent(Total)

    def states(self, total):
        self.total = total

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            total->sum += x;
            output { out(total->sum); }
        ''')


total = Total("total")


class add(CallableSegment):
    def configure(self):
        self.inp = Input(Int, Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Add() >> self.out


class inc2(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Inc() >> Inc() >> self.out


class exact_sqrt(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> ExactSqrt() >> self.out


class accumulate(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Accumulate(states=[total]) >> self.out


add("add", process="simple_math")
inc2("inc2", process="simple_math")
exact_sqrt("exact_sqrt", process="simple_math", default_return="-1")
accumulate("accumulate", process="simple_math")
