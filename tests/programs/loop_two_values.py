"""A looping element (output multiple) emitting two values per iteration."""
from floem import CallableSegment, Element, Input, Int, Output, Uint, main


class Squares(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int, Uint(64))

    def impl(self):
        self.run_c(r'''
            int n = inp();
            output multiple;
            for (int i = 1; i <= n; i++)
                out(i, (uint64_t)i * i);
        ''')


class Show(Element):
    def configure(self):
        self.inp = Input(Int, Uint(64))

    def impl(self):
        self.run_c(r'''
            (int i, uint64_t sq) = inp();
            printf("%d squared is %llu\n", i, (unsigned long long)sq);
        ''')


class squares(CallableSegment):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.inp >> Squares() >> Show()


squares("squares")

main(r'''
    squares(4);
    squares(1);
''')
