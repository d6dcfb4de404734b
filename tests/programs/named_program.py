"""A program built inside `with Program(...)`, with include, depend and cflags."""
from floem import CallableSegment, Element, Input, Int, Output, Program

with Program("named") as p:
    p.include('#include "named_program_helper.h"')
    p.depend("named_program_helper.c")
    p.cflags("-DSCALE=3")

    class Scale(Element):
        def configure(self):
            self.inp = Input(Int)
            self.out = Output(Int)

        def impl(self):
            self.run_c("int x = inp(); output { out(helper_scale(x)); }")

    class scale(CallableSegment):
        def configure(self):
            self.inp = Input(Int)
            self.out = Output(Int)

        def impl(self):
            self.inp >> Scale() >> self.out

    scale("scale")
    p.main(r'''
        printf("scale(14) = %d\n", scale(14));
    ''')
