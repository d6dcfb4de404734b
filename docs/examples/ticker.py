"""A thread segment and no main: the program runs until SIGINT, SIGTERM or --duration."""
from floem import Element, Input, Int, Output, Segment


class Tick(Element):
    """Source: emits 1, 2, 3 (one per packet), then nothing."""

    def configure(self):
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            static int n = 0;
            int tick = n < 3 ? ++n : 0;
            if (!tick)
                usleep(10000);            /* idle: nothing left to send */
            output switch { case tick: out(tick); }
        ''')


class Print(Element):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c(r'printf("tick %d\n", inp());')


class Ticker(Segment):
    def impl(self):
        Tick() >> Print()


Ticker("ticker")
