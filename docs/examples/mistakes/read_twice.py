"""Deliberately wrong: reads its input port twice (a port is read at most once)."""
from floem import CallableSegment, Element, Input, Int, Output, main


class Square(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            int y = inp();
            output { out(x * y); }
        ''')


class square(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Square() >> self.out


square("square")
main(r'printf("%d\n", square(7));')
