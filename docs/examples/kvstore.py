"""Queues: one thread segment classifies requests, another serves them; a two-channel queue between."""
from floem import (Array, Element, Field, Flow, Input, Int, Output, PerPacket, Persistent, Queue,
                   Segment, State, include, main)

GET, PUT = 0, 1
include("#define GET %d\n#define PUT %d" % (GET, PUT))      # for the C bodies


class Request(State):
    """The per-packet state. Only the fields read after the queue cross it."""

    op = Field(Int)
    key = Field(Int)
    val = Field("char *", size="strlen(state->val) + 1")     # variable-size: its bytes are sent


class Table(State):
    """Eight string slots of 32 bytes, and how many requests were served."""

    values = Field(Array("char", 8 * 32))
    served = Field(Int)
    packed = False


class Requests(Element):
    """Source: one request per packet from a fixed list, then nothing."""

    def configure(self):
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            static const struct { int op, key; const char *val; } list[] = {
                {PUT, 1, "one"}, {PUT, 2, "two"}, {GET, 1, 0},
                {PUT, 1, "uno"}, {GET, 1, 0}, {GET, 2, 0},
            };
            static int next = 0;
            int more = next < 6;
            if (more) {
                state->op = list[next].op;
                state->key = list[next].key;
                state->val = (char *)list[next].val;
                next++;
            } else {
                usleep(1000);            /* nothing left to send */
            }
            output switch { case more: out(); }
        ''')


class Classify(Element):
    """Sends gets to `get`, puts to `put`."""

    def configure(self):
        self.inp = Input()
        self.get = Output()
        self.put = Output()

    def impl(self):
        self.run_c("output switch { case state->op == GET: get(); else: put(); }")


class Get(Element):
    """Prints the value stored under the key."""

    table = Persistent(Table)

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            printf("get %d -> %s\n", state->key, &table->values[32 * state->key]);
            __atomic_fetch_add(&table->served, 1, __ATOMIC_RELEASE);
        ''')


class Put(Element):
    """Stores the value under the key."""

    table = Persistent(Table)

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            snprintf(&table->values[32 * state->key], 32, "%s", state->val);
            printf("put %d = %s\n", state->key, state->val);
            __atomic_fetch_add(&table->served, 1, __ATOMIC_RELEASE);
        ''')


table = Table("table")
requests = Queue("requests", channel=2, size=4)     # channel 0: gets, channel 1: puts


class Store(Flow):
    state = PerPacket(Request)

    def impl(self):
        class rx(Segment):
            def impl(self):
                classify = Classify()
                Requests() >> classify
                classify.get >> requests.enq[0]
                classify.put >> requests.enq[1]

        class serve(Segment):
            def impl(self):
                requests.deq[0] >> Get(states=[table])
                requests.deq[1] >> Put(states=[table])

        rx("rx")
        serve("serve")


Store()

main(r'''
    while (__atomic_load_n(&table->served, __ATOMIC_ACQUIRE) < 6)
        usleep(1000);
''')
