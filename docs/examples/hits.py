"""Persistent state: shared by the elements given the same instance, readable from main."""
from floem import CallableSegment, Element, Field, Input, Int, Output, Persistent, State, main


class Tally(State):
    count = Field(Int)
    total = Field(Int)

    def init(self, count=0, total=0):
        self.count = count
        self.total = total


class Record(Element):
    """Adds its input to a tally and passes the new total on."""

    tally = Persistent(Tally)

    def states(self, tally):
        self.tally = tally

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            tally->count++;
            tally->total += x;
            output { out(tally->total); }
        ''')


hits = Tally("hits")                     # named: main sees it as `hits`
offset = Tally("offset", init=[0, 1000])  # init's arguments overridden


class record_a(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Record(states=[hits]) >> self.out


class record_b(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Record(states=[hits]) >> self.out     # the same tally as record_a


class record_c(CallableSegment):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Record(states=[offset]) >> self.out


record_a("record_a")
record_b("record_b")
record_c("record_c")

main(r'''
    printf("a: %d\n", record_a(1));
    printf("b: %d\n", record_b(2));
    printf("c: %d\n", record_c(3));
    printf("hits: count=%d total=%d\n", hits->count, hits->total);
    printf("offset: count=%d total=%d\n", offset->count, offset->total);
''')
