"""A thread segment on two cores: each thread knows its index through self.core_id."""
from floem import Array, Element, Field, Input, Int, Persistent, Segment, State, main

PACKETS = 1000


class PerThread(State):
    handled = Field(Array(Int, 2))
    packed = False                 # natural alignment, for the atomic operations below


class Work(Element):
    """Counts one packet for the thread running it, until PACKETS each."""

    counts = Persistent(PerThread)

    def states(self, counts):
        self.counts = counts

    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c(r'''
            int thread = inp();
            if (__atomic_load_n(&counts->handled[thread], __ATOMIC_RELAXED) < %d)
                __atomic_fetch_add(&counts->handled[thread], 1, __ATOMIC_RELEASE);
            else
                usleep(1000);
        ''' % PACKETS)


counts = PerThread("counts")


class Workers(Segment):
    def impl(self):
        self.core_id >> Work(states=[counts])


Workers("workers", cores=[0, 1])

main(r'''
    for (int t = 0; t < 2; t++) {
        while (__atomic_load_n(&counts->handled[t], __ATOMIC_ACQUIRE) < %d)
            usleep(1000);
        printf("thread %%d handled %%d packets\n", t, counts->handled[t]);
    }
''' % PACKETS)
