"""The Floem paper's Figure 3: an eviction and a miss of the same key racing to the host.

The cache (write-back, one entry) is on the NIC; the store is on the host, served by
two threads, one per instance of the to_store queue; writing back an eviction is slow.
main sets key 5 (dirty in the cache), sets key 6 (evicting key 5: its write-back is
enqueued) and gets key 5 (a miss). The get must see 111: the miss has to wait for
the eviction, which only holds if both travel the same queue instance.
"""
from floem import (Array, CallableSegment, Cache, Element, Field, Flow, Input, Int, Output,
                   PerPacket, Persistent, Queue, Segment, State, main, target)


class Request(State):
    key = Field(Int)
    val = Field(Int)
    qid = Field(Int)


class Backing(State):
    vals = Field(Array(Int, 16))
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


class Prefer(Element):
    """Gets ask for store instance 1 (evictions get 0), unless the cache steers by key."""

    def configure(self, qid):
        self.inp = Input()
        self.out = Output()
        self.qid = qid

    def impl(self):
        self.run_c("state->qid = %d; output { out(); }" % self.qid)


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
            state->val = v ? v : state->key * 7;
            output { out(); }
        ''')


class SlowStorePut(Element):
    backing = Persistent(Backing)

    def states(self, backing):
        self.backing = backing

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            usleep(300000);
            backing->vals[state->key] = state->val;
            output { out(); }
        ''')


class ToClient(Element):
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
kv = Cache("kv", key="key", val="val", buckets=1, entries=1,
           policy=Cache.WRITE_BACK, write_miss=Cache.WRITE_ALLOC)


class Figure3(Flow):
    state = PerPacket(Request)

    def impl(self):
        to_nic = Queue("to_nic", channel=2, size=16)
        to_store = Queue("to_store", channel=2, inst=2, size=16)
        from_store = Queue("from_store", channel=2, inst=2, size=16)
        replies = Queue("replies", size=16)

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
                to_nic.deq[0] >> Prefer(qid=1) >> kv.get_start >> to_store.enq[0]
                to_nic.deq[1] >> Prefer(qid=0) >> kv.set_start >> to_store.enq[1]

        class store(Segment):
            def impl(self):
                to_store.deq[0] >> StoreGet(states=[backing]) >> from_store.enq[0]
                to_store.deq[1] >> SlowStorePut(states=[backing]) >> from_store.enq[1]

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
        store("store", cores=[0, 1])
        back("back", device=target.NIC)
        reply("reply", default_return="-1")


Figure3()

main(r'''
    int got;
    send(1, 5, 111);                       /* key 5 = 111, dirty in the cache */
    while (reply(0) == -1)
        ;
    send(1, 6, 222);                       /* evicts key 5: its write-back is slow */
    while (reply(0) == -1)
        ;
    send(0, 5, 0);                         /* a miss for key 5 */
    while ((got = reply(0)) == -1)
        ;
    printf("%d\n", got);
''')
