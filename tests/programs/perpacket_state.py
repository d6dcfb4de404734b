"""Per-packet state written and read across three elements of one flow."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, State,
                   Uint, main)


class Packet(State):
    key = Field(Int)
    doubled = Field(Int)
    tag = Field(Uint(8))


class Save(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            state->key = inp();
            state.tag = 'k';          /* both state->f and state.f work */
            output { out(); }
        ''')


class Double(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            state->doubled = state->key * 2;
            output { out(); }
        ''')


class Show(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            printf("%c: key=%d doubled=%d\n", state->tag, state->key, state->doubled);
            output { out(state->key + state->doubled); }
        ''')


class Calc(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class calc(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> Save() >> Double() >> Show() >> self.out

        calc("calc")


Calc()

main(r'''
    printf("calc(7) = %d\n", calc(7));
    printf("calc(-2) = %d\n", calc(-2));
''')
