"""A source emitting several packets per call (output multiple): each starts with fresh state."""
from floem import (Element, Field, Flow, Input, Int, Output, PerPacket, Persistent, Segment,
                   State, main)


class Packet(State):
    seen = Field(Int)


class Log(State):
    count = Field(Int)
    stale = Field(Int)
    packed = False


class Burst(Element):
    """Emits four packets per call, then stops; marks only the first of each burst."""

    def configure(self):
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            static int calls;
            output multiple;
            if (calls++ < 2)
                for (int i = 0; i < 4; i++) {
                    if (i == 0)
                        state->seen = 1;
                    out(i);
                }
        ''')


class Check(Element):
    log = Persistent(Log)

    def states(self, log):
        self.log = log

    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c(r'''
            int i = inp();
            if (i > 0 && state->seen)
                log->stale++;
            __atomic_fetch_add(&log->count, 1, __ATOMIC_RELEASE);
        ''')


log = Log("log")


class Bursts(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class burst(Segment):
            def impl(self):
                Burst() >> Check(states=[log])

        burst("burst")


Bursts()

main(r'''
    while (__atomic_load_n(&log->count, __ATOMIC_ACQUIRE) < 8)
        usleep(1000);
    printf("packets %d, stale state seen %d times\n", log->count, log->stale);
''')
