"""The program of the golden IR dump (calc_app.txt).

A flow with per-packet state around a callable segment (fan-out, a composite,
a join), and a thread segment with run_order in a second process.
"""
from floem import (CallableSegment, Composite, Element, Field, Flow, Input, Int, Output,
                   PerPacket, Program, Segment, State, run_order)


class Packet(State):
    key = Field(Int)
    doubled = Field(Int)


class Save(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c("state->key = inp(); output { out(); }")


class Double(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("state->doubled = 2 * state->key; output { out(state->doubled); }")


class Key(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->key); }")


class Inc(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("int x = inp(); output { out(x + 1); }")


class Add(Element):
    def configure(self):
        self.a = Input(Int)
        self.b = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("int x = a(); int y = b(); output { out(x + y); }")


class Twice(Composite):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Inc() >> Inc() >> self.out


class Note(Element):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c("int core = inp(); (void)core;")


class Pause(Element):
    def impl(self):
        self.run_c("usleep(1000);")


with Program("golden") as p:
    class Calc(Flow):
        state = PerPacket(Packet)

        def impl(self):
            class calc(CallableSegment):
                def configure(self):
                    self.inp = Input(Int)
                    self.out = Output(Int)

                def impl(self):
                    save, add = Save(name="save"), Add(name="add")
                    self.inp >> save
                    save >> Double() >> add.a
                    save >> Key() >> Twice() >> add.b
                    add >> self.out

            calc("calc")

    Calc()

    class Ticker(Segment):
        def impl(self):
            note = Note()
            self.core_id >> note
            run_order(note, Pause())

    Ticker("ticker", cores=[0, 1], process="side")

    p.main(r'''
        printf("calc(3) = %d\n", calc(3));   /* 2 * 3 + (3 + 2) */
    ''')
