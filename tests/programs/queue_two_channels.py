"""Two channels on one queue instance: each channel carries only the fields it needs."""
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket,
                   Persistent, Queue, Segment, State, main)


class Request(State):
    op = Field(Int)
    key = Field(Int)
    val = Field(Int)


class Done(State):
    count = Field(Int)
    packed = False


class Classify(Element):
    def configure(self):
        self.inp = Input(Int, Int, Int)
        self.get = Output()
        self.set = Output()

    def impl(self):
        self.run_c(r'''
            (int op, int key, int val) = inp();
            state->op = op;
            state->key = key;
            state->val = val;
            output switch { case op == 0: get(); else: set(); }
        ''')


class Get(Element):
    done = Persistent(Done)

    def states(self, done):
        self.done = done

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            printf("get %d\n", state->key);
            __atomic_fetch_add(&done->count, 1, __ATOMIC_RELEASE);
        ''')


class Set(Element):
    done = Persistent(Done)

    def states(self, done):
        self.done = done

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            printf("set %d = %d\n", state->key, state->val);
            __atomic_fetch_add(&done->count, 1, __ATOMIC_RELEASE);
        ''')


done = Done("done")
requests = Queue("requests", channel=2, inst=1, size=4)


class Store(Flow):
    state = PerPacket(Request)

    def impl(self):
        class request(CallableSegment):
            def configure(self):
                self.inp = Input(Int, Int, Int)

            def impl(self):
                c = Classify()
                self.inp >> c
                c.get >> requests.enq[0]
                c.set >> requests.enq[1]

        class serve(Segment):
            def impl(self):
                requests.deq[0] >> Get(states=[done])
                requests.deq[1] >> Set(states=[done])

        request("request")
        serve("serve")


Store()

main(r'''
    request(1, 10, 100);
    request(0, 10, 0);
    request(1, 11, 111);
    request(0, 11, 0);
    request(0, 12, 0);
    for (int i = 0; i < 20; i++)
        request(1, 100 + i, i);        /* more than the queue holds: the enqueuer waits */
    while (__atomic_load_n(&done->count, __ATOMIC_ACQUIRE) < 25)
        usleep(1000);
''')
