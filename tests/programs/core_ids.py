"""A segment with cores=[0, 1, 2]: each thread feeds its own index (self.core_id)."""
from floem import Element, Field, Input, Int, Array, Persistent, Segment, State, main


class Seen(State):
    hits = Field(Array(Int, 3))
    packed = False


class Record(Element):
    seen = Persistent(Seen)

    def states(self, seen):
        self.seen = seen

    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c(r'''
            int core = inp();
            __atomic_fetch_add(&seen->hits[core], 1, __ATOMIC_RELAXED);
            usleep(100);
        ''')


seen = Seen("seen")


class Workers(Segment):
    def impl(self):
        self.core_id >> Record(states=[seen])


Workers("workers", cores=[0, 1, 2])

main(r'''
    for (int core = 0; core < 3; core++) {
        while (__atomic_load_n(&seen->hits[core], __ATOMIC_RELAXED) < 10)
            usleep(1000);
        printf("thread %d ran\n", core);
    }
''')
