"""A key-value store in persistent state behind a Cache; operations come from a file.

Environment (read when the app is built): CACHE_POLICY (write_through|write_back),
CACHE_WRITE_MISS (write_alloc|no_write_alloc), CACHE_PLACE (cpu: everything in
callable segments; nic: the cache on the NIC, the store on the host, across
queues). Run: floem run kv_app.py -- OPS where OPS has lines "g KEY" / "s KEY VAL";
every get prints its value.
"""
import os

from floem import (Array, CallableSegment, Cache, Element, Field, Flow, Input, Int, Output,
                   PerPacket, Persistent, Queue, Segment, State, main, target)

POLICY = os.environ.get("CACHE_POLICY", "write_back")
WRITE_MISS = os.environ.get("CACHE_WRITE_MISS", "write_alloc")
PLACE = os.environ.get("CACHE_PLACE", "cpu")
ENTRIES = None if os.environ.get("CACHE_ENTRIES") == "unbounded" else 2
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


class ToClient(Element):
    """Replies go to the client's queue instance 0, whatever instance the store used."""

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c("state->qid = 0; output { out(); }")


class Reply(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(state->val); }")


backing = Backing("backing")
kv = Cache("kv", key="key", val="val", buckets=4, entries=ENTRIES,
           policy=POLICY, write_miss=WRITE_MISS)


class KVOnCPU(Flow):
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


class KVOnNIC(Flow):
    """The cache on the NIC; the store on the host; requests and replies through queues.

    Misses (channel 0) and evictions (channel 1) share the to_store queue, whose two
    instances are chosen by a hash of the key, so they cannot overtake each other.
    """

    state = PerPacket(Request)

    def impl(self):
        to_nic = Queue("to_nic", channel=2, size=64)
        to_store = Queue("to_store", channel=2, inst=2, size=64)
        from_store = Queue("from_store", channel=2, inst=2, size=64)
        replies = Queue("replies", size=64)

        class send(CallableSegment):
            def configure(self):
                self.inp = Input(Int, Int, Int)

            def impl(self):
                m = Make()
                self.inp >> m
                m.get >> to_nic.enq[0]
                m.set >> to_nic.enq[1]

        class front(Segment):
            def impl(self):
                to_nic.deq[0] >> kv.get_start >> to_store.enq[0]
                to_nic.deq[1] >> kv.set_start >> to_store.enq[1]

        class store(Segment):
            def impl(self):
                to_store.deq[0] >> StoreGet(states=[backing]) >> from_store.enq[0]
                to_store.deq[1] >> StorePut(states=[backing]) >> from_store.enq[1]

        class back(Segment):
            def impl(self):
                from_store.deq[0] >> kv.get_end >> ToClient() >> replies
                from_store.deq[1] >> kv.set_end >> ToClient() >> replies

        class reply(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> replies.qid
                replies >> Reply() >> self.out

        send("send")
        front("front", device=target.NIC)
        store("store")
        back("back", device=target.NIC)
        reply("reply", default_return="-99999")


if PLACE == "nic":
    KVOnNIC()
    main(r'''
    FILE *ops = fopen(argv[1], "r");
    char op;
    int key, val, got;
    while (fscanf(ops, " %c %d", &op, &key) == 2) {
        if (op == 's' && fscanf(ops, " %d", &val) != 1)
            return 2;
        send(op == 's', key, op == 's' ? val : 0);
        while ((got = reply(0)) == -99999)
            ;
        if (op == 'g')
            printf("%d\n", got);
    }
    fclose(ops);
''')
else:
    KVOnCPU()
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
