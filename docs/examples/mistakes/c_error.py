"""Deliberately wrong: the C body uses a variable it never declares; gcc finds it."""
from floem import CallableSegment, Element, Input, Int, Output, main


class Scale(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            output { out(x * factor); }
        ''')


class scale(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Scale() >> self.out


scale("scale")
main(r'printf("%d\n", scale(7));')
