"""A normal segment thread fills persistent state that main reads back."""
from floem import Element, Field, Input, Int, Output, Persistent, Segment, State, main


class Progress(State):
    packets = Field(Int)
    sum = Field(Int)
    done = Field(Int)
    packed = False


class Counter(Element):
    """A source: one packet per call, numbered from 1; stops counting at 100."""

    progress = Persistent(Progress)

    def states(self, progress):
        self.progress = progress

    def configure(self):
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            static int next = 1;
            int n = next <= 100 ? next++ : 0;
            output switch { case n > 0: out(n); }
        ''')


class Accumulate(Element):
    progress = Persistent(Progress)

    def states(self, progress):
        self.progress = progress

    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c(r'''
            int n = inp();
            progress->packets++;
            progress->sum += n;
            if (n == 100)
                __atomic_store_n(&progress->done, 1, __ATOMIC_RELEASE);
        ''')



progress = Progress("progress")


class Fill(Segment):
    def impl(self):
        Counter(states=[progress]) >> Accumulate(states=[progress])


Fill("fill")

main(r'''
    while (!__atomic_load_n(&progress->done, __ATOMIC_ACQUIRE))
        usleep(1000);
    printf("packets=%d sum=%d\n", progress->packets, progress->sum);
''')
