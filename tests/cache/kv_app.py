"""A key-value store in persistent state behind a Cache; operations come from a file.

Environment (read when the app is built): CACHE_POLICY (write_through|write_back),
CACHE_WRITE_MISS (write_alloc|no_write_alloc), CACHE_PLACE (cpu: everything in
callable segments; nic: the cache on the NIC, the store on the host, across
queues). Run: floem run kv_app.py -- OPS where OPS has lines "g KEY" / "s KEY VAL";
every get prints its value.
"""
import os

from floem import (Array, CallableSegment, Cache, Element, Field, Flow, Input, Int, Output,
                   PerPacket, Persistent, State, main)

POLICY = os.environ.get("CACHE_POLICY", "write_back")
WRITE_MISS = os.environ.get("CACHE_WRITE_MISS", "write_alloc")
PLACE = os.environ.get("CACHE_PLACE", "cpu")
KEYS = 64


class Request(State):
    key = Field(Int)
    val = Field(Int)
    qid = Field(Int)


class Backing(State):
    """The slow store: KEYS values, initially key * 7."""

    vals = Field(Array(Int, KEYS))
    packed = False


class Make(Element):
    def configure(self):
        self.inp = Input(Int, Int, Int)
        self.get = Output()
        self.set = Output()

    def impl(self):
        self.run_c(r'''
            (int op, int key, int val) = inp();
            state->key = key;
            state->val = val;
            output switch { case op == 0: get(); else: set(); }
        ''')


class StoreGet(Element):
    backing = Persistent(Backing)

    def states(self, backing):
        self.backing = backing

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            int v = backing->vals[state->key];
            state->val = v ? v - 1 : state->key * 7;
            output { out(); }
        ''')


class StorePut(Element):
    backing = Persistent(Backing)

    def states(self, backing):
        self.backing = backing

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            backing->vals[state->key] = state->val + 1;
            output { out(); }
        ''')


class Reply(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->val); }")


backing = Backing("backing")
kv = Cache("kv", key="key", val="val", buckets=4, entries=2,
           policy=POLICY, write_miss=WRITE_MISS)


class KV(Flow):
    state = PerPacket(Request)

    def impl(self):
        class request(CallableSegment):
            def configure(self):
                self.inp = Input(Int, Int, Int)
                self.out = Output(Int)

            def impl(self):
                m = Make()
                self.inp >> m
                m.get >> kv.get_start >> StoreGet(states=[backing]) >> kv.get_end >> Reply() >> self.out
                m.set >> kv.set_start >> StorePut(states=[backing]) >> kv.set_end >> Reply() >> self.out

        request("request")


KV()

main(r'''
    FILE *ops = fopen(argv[1], "r");
    char op;
    int key, val;
    while (fscanf(ops, " %c %d", &op, &key) == 2) {
        if (op == 's') {
            if (fscanf(ops, " %d", &val) != 1)
                return 2;
            request(1, key, val);
        } else {
            printf("%d\n", request(0, key, 0));
        }
    }
    fclose(ops);
''')
