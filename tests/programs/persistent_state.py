"""Shared vs separate persistent state, with an init=[...] override."""
from floem import CallableSegment, Element, Field, Input, Int, Output, Persistent, State, main


class Tracker(State):
    total = Field(Int)
    count = Field(Int)

    def init(self, total=0, count=0):
        self.total = total
        self.count = count


class Observe(Element):
    tracker = Persistent(Tracker)

    def states(self, tracker):
        self.tracker = tracker

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            tracker->total += x;
            tracker->count++;
            output { out(tracker->total); }
        ''')


shared = Tracker()
separate = Tracker(init=[1000])


class observe_a(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Observe(states=[shared]) >> self.out


class observe_b(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Observe(states=[shared]) >> self.out


class observe_c(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Observe(states=[separate]) >> self.out


observe_a("observe_a")
observe_b("observe_b")
observe_c("observe_c")

main(r'''
    printf("a: %d\n", observe_a(1));
    printf("b: %d\n", observe_b(2));
    printf("c: %d\n", observe_c(3));
    printf("a: %d\n", observe_a(4));
    printf("c: %d\n", observe_c(5));
''')
