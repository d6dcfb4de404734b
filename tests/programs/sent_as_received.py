"""Counters of elements that send on every packet they get (no counter of their own: the
port sends what came in) beside one that may leave early with `return`, and a fan-out."""
from floem import CallableSegment, Element, Input, Int, Output, main


class Double(Element):
    """Sends every packet on, once."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("int x = inp(); output { out(2 * x); }")


class Odd(Element):
    """Leaves without sending when its value is even: `return` before the output block."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            if (x % 4 == 0)
                return;
            output { out(x); }
        ''')


class Show(Element):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c(r'printf("show %d\n", inp());')


class chain(CallableSegment):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        first = Double()
        self.inp >> first
        first >> Double() >> Show()
        first >> Odd() >> Show()


chain("chain")

main(r'''
    for (int i = 0; i < 4; i++)
        chain(i);
''')
