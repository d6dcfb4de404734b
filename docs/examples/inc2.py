"""A first element, two instances of it in a chain, and a callable segment called from main."""
from floem import CallableSegment, Element, Input, Int, Output, main


class Inc(Element):
    """Adds one to its input."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            output { out(x + 1); }
        ''')


class inc2(CallableSegment):
    """The C function `int inc2(int)`."""

    def configure(self):
        self.inp = Input(Int)      # the argument
        self.out = Output(Int)     # the return value

    def impl(self):
        self.inp >> Inc() >> Inc() >> self.out


inc2("inc2")

main(r'''
    for (int i = 0; i < 3; i++)
        printf("inc2(%d) = %d\n", i, inc2(i));
''')
