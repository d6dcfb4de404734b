"""A composite of two increments inside a chain: add1 >> Twice >> double."""
from floem import CallableSegment, Composite, Element, Input, Int, Output, main


class Add(Element):
    def configure(self, n=1):
        self.inp = Input(Int)
        self.out = Output(Int)
        self.n = n

    def impl(self):
        self.run_c("int x = inp(); output { out(x + %d); }" % self.n)


class Twice(Composite):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Add() >> Add() >> self.out


class Double(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("int x = inp(); output { out(2 * x); }")


class compute(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Add(n=100) >> Twice() >> Double() >> self.out


compute("compute")

main(r'''
    printf("compute(1) = %d\n", compute(1));   /* ((1 + 100) + 2) * 2 */
    printf("compute(5) = %d\n", compute(5));
''')
