"""output switch with three ports: negative, zero (else: positive)."""
from floem import CallableSegment, Element, Input, Int, Output, main


class Classify(Element):
    def configure(self):
        self.inp = Input(Int)
        self.neg = Output(Int)
        self.zero = Output()
        self.pos = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            /* a brace in a comment: { and a colon in a string below */
            output switch {
                case x < 0: neg(-x);
                case x == 0: zero();
                else: pos(x);
            }
        ''')


class Label(Element):
    def configure(self, text, value):
        self.inp = Input()
        self.out = Output(Int)
        self.text = text
        self.value = value

    def impl(self):
        self.run_c(r'''
            printf("%%s\n", "%s");
            output { out(%d); }
        ''' % (self.text, self.value))


class Magnitude(Element):
    def configure(self, text):
        self.inp = Input(Int)
        self.out = Output(Int)
        self.text = text

    def impl(self):
        self.run_c(r'''
            int m = inp();
            printf("%s: magnitude %%d\n", m);
            output { out(m); }
        ''' % self.text)


class sign(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        c = Classify()
        self.inp >> c
        c.neg >> Magnitude(text="negative") >> self.out
        c.zero >> Label(configure=["zero: nothing", 0]) >> self.out
        c.pos >> Magnitude(text="positive") >> self.out


sign("sign")

main(r'''
    int xs[] = { -5, 0, 9 };
    for (int i = 0; i < 3; i++)
        printf("sign(%d) -> %d\n", xs[i], sign(xs[i]));
''')
