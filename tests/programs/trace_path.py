"""Requests through three thread segments and two queues, for packet tracing (test_trace.py):
a source makes requests 1 to 6, Parse fills the per-packet state, a fan-out counts each,
Classify rejects op 2, the serving segment (on the NIC with -D device=nic) computes a value
and drops key 40, the last segment prints the replies."""
from floem import (Double, Element, Field, Flow, Input, Int, Output, PerPacket, Persistent,
                   Queue, Segment, Sint, State, Uint, main, param, target)

device = param("device", "cpu", choices=["cpu", "nic"], help="where the serving segment runs")


class Request(State):
    op = Field(Uint(8))
    key = Field(Int)
    value = Field(Sint(64))
    ratio = Field(Double)


class Totals(State):
    counted = Field(Int)
    replied = Field(Int)
    packed = False


class Source(Element):
    def configure(self):
        self.out = Output(Int)

    def impl(self):
        self.run_c(r'''
            static int next = 1;
            int n = next <= 6 ? next++ : 0;
            output switch { case n: out(n); }
        ''')


class Parse(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            int n = inp();
            state->op = (uint8_t)(n % 3);
            state->key = n * 10;
            output { out(); }
        ''')


class Count(Element):
    totals = Persistent(Totals)

    def states(self, totals):
        self.totals = totals

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            __atomic_fetch_add(&totals->counted, 1, __ATOMIC_RELAXED);
        ''')


class Classify(Element):
    def configure(self):
        self.inp = Input()
        self.ok = Output()
        self.bad = Output()

    def impl(self):
        self.run_c(r'''
            output switch { case state->op == 2: bad(); else: ok(); }
        ''')


class Reject(Element):
    totals = Persistent(Totals)

    def states(self, totals):
        self.totals = totals

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            __atomic_fetch_add(&totals->replied, 1, __ATOMIC_RELEASE);
        ''')


class Lookup(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            state->value = -(int64_t)state->key * 7;
            state->ratio = state->key / 4.0;
            state->op = state->op;
            output switch { case state->key != 40: out(); }
        ''')


class Reply(Element):
    totals = Persistent(Totals)

    def states(self, totals):
        self.totals = totals

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c(r'''
            printf("key %d: value %lld ratio %g\n", state->key, (long long)state->value,
                   state->ratio);
            __atomic_fetch_add(&totals->replied, 1, __ATOMIC_RELEASE);
        ''')


totals = Totals("totals")
requests = Queue("requests", size=16)
replies = Queue("replies", size=16)


class Service(Flow):
    state = PerPacket(Request)

    def impl(self):
        class clients(Segment):
            def impl(self):
                parse = Parse()
                Source() >> parse
                parse >> Count(states=[totals])
                classify = Classify()
                parse >> classify
                classify.ok >> requests
                classify.bad >> Reject(states=[totals])

        class server(Segment):
            def impl(self):
                requests >> Lookup() >> replies

        class printer(Segment):
            def impl(self):
                replies >> Reply(states=[totals])

        clients("clients")
        server("server", device=target.NIC if device == "nic" else target.CPU)
        printer("printer")


Service()

main(r'''
    /* 6 requests: 2 rejected (op 2), 1 dropped by Lookup (key 40), 3 replies */
    while (__atomic_load_n(&totals->replied, __ATOMIC_ACQUIRE) < 5)
        usleep(1000);
    printf("counted %d, answered %d\n", __atomic_load_n(&totals->counted, __ATOMIC_RELAXED),
           totals->replied);
''')
