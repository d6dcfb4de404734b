"""Fan-out to two elements that run in program order, then a join of their results."""
from floem import CallableSegment, Element, Input, Int, Output, main


class Square(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            printf("square %d\n", x);
            output { out(x * x); }
        ''')


class Negate(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            printf("negate %d\n", x);
            output { out(-x); }
        ''')


class Sum(Element):
    """A join: runs once both inputs of the same packet have arrived."""

    def configure(self):
        self.a = Input(Int)
        self.b = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = a();
            int y = b();
            printf("sum %d %d\n", x, y);
            output { out(x + y); }
        ''')


class square_minus(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        total = Sum()
        self.inp >> Square() >> total.a
        self.inp >> Negate() >> total.b
        total >> self.out


square_minus("square_minus")

main(r'''
    printf("result %d\n", square_minus(4));
    printf("result %d\n", square_minus(-3));
''')
