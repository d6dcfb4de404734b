"""Connecting elements: a configurable element, a composite, an output switch, fan-out, a join."""
from floem import CallableSegment, Composite, Element, Input, Int, Output, main


class Add(Element):
    """Adds `n` (a configure parameter) to its input."""

    def configure(self, n=1):
        self.inp = Input(Int)
        self.out = Output(Int)
        self.n = n

    def impl(self):
        self.run_c("int x = inp(); output { out(x + %d); }" % self.n)


class AddTwice(Composite):
    """Two Add elements behind one input and one output port."""

    def configure(self, n):
        self.inp = Input(Int)
        self.out = Output(Int)
        self.n = n

    def impl(self):
        self.inp >> Add(n=self.n) >> Add(n=self.n) >> self.out


class Sign(Element):
    """Sends negative numbers to `neg`, the others to `pos`."""

    def configure(self):
        self.inp = Input(Int)
        self.neg = Output(Int)
        self.pos = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            output switch {
                case x < 0: neg(x);
                else:       pos(x);
            }
        ''')


class Show(Element):
    """Prints its input after a label; a leaf (no output port)."""

    def configure(self, label):
        self.inp = Input(Int)
        self.label = label

    def impl(self):
        self.run_c(r'printf("%s %%d\n", inp());' % self.label)


class Pair(Element):
    """A join: runs once both inputs of the same packet have arrived."""

    def configure(self):
        self.a = Input(Int)
        self.b = Input(Int)

    def impl(self):
        self.run_c(r'''
            int x = a();
            int y = b();
            printf("pair %d %d\n", x, y);
        ''')


class route(CallableSegment):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        sign = Sign()
        pair = Pair()
        self.inp >> AddTwice(n=10) >> sign
        sign.neg >> Show(label="negative")
        sign.pos >> Show(label="positive")      # fan-out: runs first ...
        sign.pos >> pair.a                      # ... then this
        self.inp >> pair.b


route("route")

main(r'''
    route(-50);
    route(5);
''')
