"""The cache construct: a get path and a set path through one Cache, in front of a slow store.

CACHE_POLICY (write_through, the default, or write_back) and CACHE_WRITE_MISS
(write_alloc, the default, or no_write_alloc) choose the policy when the app is built.
"""
import os

from floem import (Array, Cache, CallableSegment, Element, Field, Flow, Input, Int, Output,
                   PerPacket, Persistent, State, main)


class Request(State):
    key = Field(Int)
    val = Field(Int)


class Store(State):
    """The slow store behind the cache, and how often each region reached it."""

    vals = Field(Array(Int, 4))
    fetches = Field(Int)
    writes = Field(Int)

    def init(self):
        self.vals = [0, 10, 20, 30]


class Classify(Element):
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


class Fetch(Element):
    """The get region: reads the store."""

    store = Persistent(Store)

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            state->val = store->vals[state->key];
            store->fetches++;
            output { out(); }
        ''')


class Write(Element):
    """The set region: writes the store."""

    store = Persistent(Store)

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            store->vals[state->key] = state->val;
            store->writes++;
            output { out(); }
        ''')


class Reply(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->val); }")


store = Store("store")
kv = Cache("kv", key="key", val="val", buckets=1, entries=2,     # room for two keys
           policy=os.environ.get("CACHE_POLICY", Cache.WRITE_THROUGH),
           write_miss=os.environ.get("CACHE_WRITE_MISS", Cache.WRITE_ALLOC))


class KV(Flow):
    state = PerPacket(Request)

    def impl(self):
        class request(CallableSegment):
            """int request(int op, int key, int val): op 0 gets, op 1 sets; returns the value."""

            def configure(self):
                self.inp = Input(Int, Int, Int)
                self.out = Output(Int)

            def impl(self):
                classify = Classify()
                self.inp >> classify
                classify.get >> kv.get_start >> Fetch(states=[store]) >> kv.get_end >> Reply() >> self.out
                classify.set >> kv.set_start >> Write(states=[store]) >> kv.set_end >> Reply() >> self.out

        request("request")


KV()

main(r'''
    printf("get 1 -> %d\n", request(0, 1, 0));
    printf("get 1 -> %d\n", request(0, 1, 0));
    request(1, 1, 11);
    printf("set 1 = 11; get 1 -> %d\n", request(0, 1, 0));
    request(1, 2, 22);
    request(1, 3, 33);
    printf("set 2 = 22, 3 = 33; the store holds %d %d %d\n",
           store->vals[1], store->vals[2], store->vals[3]);
    for (int key = 1; key <= 3; key++)
        printf("get %d -> %d\n", key, request(0, key, 0));
    printf("the get region ran %d times, the set region %d times\n", store->fetches, store->writes);
''')
