"""Elements may have names the generated C derives for other elements' functions: `split`
has an output port `drop` (its C function would be split_drop) beside an element named
`split_drop`, and join `sum` (whose inputs record would be sum_in, whose input `a` entry
sum_in_a) beside elements named `sum_in` and `sum_in_a`. Found by the differential test."""
from floem import CallableSegment, Element, Input, Int, Output, main


class Split(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)
        self.drop = Output(Int)

    def impl(self):
        self.run_c("int x = inp(); output switch { case x > 0: out(x); else: drop(x); }")


class Show(Element):
    def configure(self, what):
        self.what = what
        self.inp = Input(Int)

    def impl(self):
        self.run_c(f'printf("{self.what} %d\\n", inp());')


class Add(Element):
    def configure(self, amount):
        self.amount = amount
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(f"int x = inp(); output {{ out(x + {self.amount}); }}")


class Sum(Element):
    def configure(self):
        self.a = Input(Int)
        self.b = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("int x = a(); int y = b(); output { out(x + y); }")


class push(CallableSegment):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        split = Split("split")
        self.inp >> split
        total = Sum("sum")
        split.out >> Add("sum_in", configure=[10]) >> total.a
        split.out >> Add("sum_in_a", configure=[100]) >> total.b
        total >> Show("kept", configure=["kept"])
        split.drop >> Show("split_drop", configure=["dropped"])


push("push")

main(r"""
    push(1);
    push(-2);
""")
