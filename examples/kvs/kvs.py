"""The key-value store of the Floem paper (sections 3-4, Figures 1-2, section 7.1), in every
design the paper explores, serving memcached's binary and text protocols over UDP or TCP.

    floem run examples/kvs/kvs.py --port 11211                          # design cpu, UDP
    floem run examples/kvs/kvs.py --net tcp --port 11211                # over TCP
    floem run examples/kvs/kvs.py -D design=cache-wb --nic emu --port 11211
    floem params examples/kvs/kvs.py                                    # every parameter

A design is a parameter, ``-D design=...``:

* ``cpu`` (Figure 1a): one segment on the CPU parses, hashes, serves and replies.
* ``split`` (Figures 1b and 2): the NIC parses, hashes and steers each request by key
  to one of ``queues`` host queue instances (by default one per host thread, ``cores``);
  the host serves; replies go back through NIC queues and the NIC writes them.
  ``-D share_queues=false`` gives GET, SET and DELETE physical queues of their own (the
  paper's H2).
* ``cache-wt`` / ``cache-wb`` (Figure 1c): ``split`` with a `Cache` on the NIC in front
  of the host's store, write-through or write-back.
* ``external`` (Figure 1d): ``split`` whose host half is a plain C program
  (external/server.c, its own ``main`` and threads) that keeps the store and calls the
  generated ``obtain_pkt``, ``get_send``, ``set_send``, ``delete_send`` and ``update_send``.
* ``split-pointer`` (section 7.1, the paper's first split): ``split`` as the paper built
  it: the NIC creates each SET's item in a log in host memory by DMA, the queues carry
  the item's pointer, and the NIC reads a GET's item with a blocking DMA read to reply.
  Updates of what a key holds (ADD, APPEND, INCR, CAS, ...) are answered "not supported".
* ``auto``: ``cpu``'s segment declared ``target.AUTO``, for the compiler to cut between the
  NIC and the CPU (``floem place``, docs/placement.md); without a cut it runs as ``cpu``.

docs/kvs.md walks through the designs as diffs of each other.
"""
from floem import (Cache, CallableSegment, Flow, Input, Int, MemoryRegion, Output, PerPacket,
                   Queue, Segment, cflags, external_main, param, target)
from floem.library import MEMCACHED, FromNet, NetFree, Steer, ToNet

from elements import (LIBRARY_C, Classify, Counts, CreateItem, Forget, HashKey, HashtDelete,
                      HashtDeleteItem, HashtGet, HashtGetItem, HashtPut, HashtPutItem,
                      HashtUpdate, ItemIndex, ItemLog, ItemRequest, MakeRecord, ParseRequest,
                      ReadItem, Request, RequestDrops, Respond, Restore, Retrieve,
                      SplitRequests, Table, Uncache, Unsupported, Versions, value_max)

DESIGNS = ("cpu", "split", "cache-wt", "cache-wb", "external", "split-pointer", "auto")
design = param("design", "cpu", choices=DESIGNS,
               help="the offload design (Floem paper, Figure 1; split-pointer: section 7.1)")
cores = param("cores", 1, help="host threads serving the store")
queues = param("queues", 0, help="split and cache designs: physical instances of each queue "
                                 "between NIC and host (0: one per host thread)")
nic_cores = param("nic_cores", 1, help="NIC threads of each NIC segment")
share_queues = param("share_queues", True,
                     help="split designs: GET, SET and DELETE share each physical queue "
                          "(false: one each)")
buckets = param("buckets", 2 ** 15, help="cache designs: buckets of the NIC cache")
entries = param("entries", 5, help="cache designs: entries per bucket (0: unbounded)")
write_alloc = param("write_alloc", True, help="cache designs: a SET of an uncached key caches it")
memory = param("memory", 64, help="MiB of memory for the store's items (split-pointer: half "
                                  "for the log of items, half for the host's index)")
store_buckets = param("store_buckets", 2 ** 17, help="hash buckets of the store")
queue_size = param("queue_size", 256, help="entries of each physical queue instance")
#: The physical instances of each queue between NIC and host: a host thread serves instances
#: t, t + cores, ...; a NIC thread of a segment fed by a queue likewise, so ``nic_tx`` puts at
#: most ``instances`` threads to work.
instances = queues or cores

#: The kinds of requests, each a channel (or queue) of its own between NIC and host: GETs,
#: plain SETs, plain DELETEs, and updates of what a key holds (ADD, APPEND, INCR, CAS, ...).
KINDS = ("get", "set", "delete", "update")
cflags(f"-I{LIBRARY_C}")
table = Table("table", init={"memory": memory << 20, "buckets": store_buckets})
drops = RequestDrops("drops")
versions = Versions("versions")
counts = Counts("counts")


#: split-pointer: requests carry a key (and a SET the item's pointer), replies a pointer; it
#: has no updates (the host cannot change an item the NIC made).
ITEM_KINDS = KINDS[:3]
#: The host's element for each kind of request: the store's, or split-pointer's index's.
STORE = {"get": HashtGet, "set": HashtPut, "delete": HashtDelete, "update": HashtUpdate}
INDEX = {"get": HashtGetItem, "set": HashtPutItem, "delete": HashtDeleteItem}


class LogicalQueues:
    """The ``kinds`` of requests as channels of one `Queue` of ``instances``, or, with
    ``share=False``, a `Queue` each: one logical-to-physical mapping or the other. (The
    compiler sizes their entries: `Request`'s key and record are bounded.)"""

    def __init__(self, name: str, kinds: tuple[str, ...], share: bool = True) -> None:
        self.share = share
        self.kinds = kinds
        if share:
            self.queue = Queue(name, channel=len(self.kinds), inst=instances, size=queue_size)
            self.ends = {k: (self.queue.enq[i], self.queue.deq[i])
                         for i, k in enumerate(self.kinds)}
        else:
            queues = {k: Queue(f"{name}_{k}", inst=instances, size=queue_size)
                      for k in self.kinds}
            self.ends = {k: (q.enq, q.deq) for k, q in queues.items()}

    def segments(self, name: str) -> list[tuple[str, tuple[str, ...]]]:
        """The dequeuing segments, as (segment name, kinds it serves): ``name`` serving
        every kind, or ``name_KIND`` serving one each (a segment starts at one queue)."""
        return [(name, self.kinds)] if self.share else [(f"{name}_{k}", (k,)) for k in self.kinds]

    def enq(self, kind: str):
        """The enqueue port of ``kind``'s logical queue."""
        return self.ends[kind][0]

    def deq(self, kind: str):
        """The dequeue port of ``kind``'s logical queue."""
        return self.ends[kind][1]


def receive(steer: bool) -> Classify:
    """``FromNet >> SplitRequests >> ParseRequest >> HashKey [>> Steer] >> Classify``
    (malformed frames to NetFree); returns the classifier, whose ports get, set, delete,
    update and other the design wires. Over TCP, memcached's framer delimits requests: a
    text command with its data block, or a binary message, by each connection's first byte."""
    parse = ParseRequest(value_max=value_max, states=[drops, versions, counts])
    classify = Classify()
    FromNet(framer=MEMCACHED) >> SplitRequests(states=[drops]) >> parse
    hashed = parse.out >> HashKey()
    if steer:                                   # state->qid = hash % instances: the key's
        hashed = hashed >> Steer(n=instances, hash="state->hash")
    hashed >> classify
    parse.drop >> NetFree()
    return classify


def reply(record: bool = False) -> Respond:
    """``Respond >> ToNet``; ``record``: the reply of a GET or an update, from the record in
    ``val``."""
    respond = Respond(record=record, states=[versions, counts])
    respond >> ToNet()
    return respond


def cpu(device: str = target.CPU) -> None:
    """Figure 1a: one segment on the CPU (or ``target.AUTO``, for the compiler to cut)."""
    class kvs(Segment):
        def impl(self):
            classify = receive(steer=False)
            classify.get >> HashtGet(states=[table]) >> reply(record=True)
            classify.set >> MakeRecord() >> HashtPut(states=[table]) >> reply()
            classify.delete >> HashtDelete(states=[table]) >> reply()
            classify.update >> MakeRecord() >> HashtUpdate(value_max=value_max, states=[table]) \
                >> reply(record=True)
            classify.other >> reply()

    kvs("kvs", device=device, cores=list(range(cores)))


def serve(requests: LogicalQueues, replies: LogicalQueues, cached: bool = False,
          index: ItemIndex | None = None) -> None:
    """The host's half of the offload designs: the store, between request and reply queues
    (one segment, or one per kind when the kinds have queues of their own); with ``index``
    (split-pointer), the index of the items the NIC made instead."""
    elements, state = (STORE, table) if index is None else (INDEX, index)

    class store(Segment):
        def setup(self, kinds):
            self.kinds = kinds

        def impl(self):
            for kind in self.kinds:
                options = {"value_max": value_max} if kind == "update" else {}
                work = elements[kind](cached=cached, states=[state], **options)
                requests.deq(kind) >> work >> replies.enq(kind)

    for name, kinds in requests.segments("store"):
        store(name, cores=list(range(cores)), kinds=kinds)


def respond_on_nic(replies: LogicalQueues, before: dict | None = None) -> None:
    """The NIC writes each reply where the request arrived and sends it (``before``: an
    element per kind to pass first, e.g. a cache's end points)."""
    class nic_tx(Segment):
        def setup(self, kinds):
            self.kinds = kinds

        def impl(self):
            for kind in self.kinds:
                end = replies.deq(kind)
                if before and kind in before:
                    end = end >> before[kind]
                end >> reply(record=kind in ("get", "update"))

    for name, kinds in replies.segments("nic_tx"):
        nic_tx(name, device=target.NIC, cores=list(range(nic_cores)), kinds=kinds)


def split(host=serve) -> None:
    """Figures 1b and 2: the NIC parses and steers, the host serves (``host``), the NIC
    replies."""
    share = share_queues or host is not serve       # an external program dequeues one queue
    requests = LogicalQueues("requests", KINDS, share)
    replies = LogicalQueues("replies", KINDS, share)

    class nic_rx(Segment):
        def impl(self):
            classify = receive(steer=True)
            classify.get >> requests.enq("get")
            classify.set >> MakeRecord() >> requests.enq("set")
            classify.delete >> requests.enq("delete")
            classify.update >> MakeRecord() >> requests.enq("update")
            classify.other >> reply()

    nic_rx("nic_rx", device=target.NIC, cores=list(range(nic_cores)))
    host(requests, replies)
    respond_on_nic(replies)


def split_pointer() -> None:
    """Section 7.1's first split CPU-NIC design, as the paper built it: the NIC creates
    each SET's item in host memory (create_item), the queues carry the item's pointer,
    and the NIC reads a GET's item with a blocking DMA read to reply."""
    log_bytes = (memory << 20) // 2
    items = MemoryRegion("items", log_bytes)
    itemlog = ItemLog("itemlog", init={"size": log_bytes})
    index = ItemIndex("index", init={"memory": (memory << 20) - log_bytes,
                                     "buckets": store_buckets, "log_bytes": log_bytes})
    requests = LogicalQueues("requests", ITEM_KINDS, share_queues)
    replies = LogicalQueues("replies", ITEM_KINDS, share_queues)

    class nic_rx(Segment):
        def impl(self):
            classify = receive(steer=True)
            classify.get >> requests.enq("get")
            classify.set >> CreateItem(items=items, states=[itemlog]) >> requests.enq("set")
            classify.delete >> requests.enq("delete")
            classify.update >> Unsupported() >> reply()
            classify.other >> reply()

    nic_rx("nic_rx", device=target.NIC, cores=list(range(nic_cores)))
    serve(requests, replies, index=index)
    respond_on_nic(replies, before={"get": ReadItem(items=items, states=[itemlog])})


def cache(policy: str) -> None:
    """Figure 1c: split, with a cache of the store on the NIC (misses, evictions and
    deletes of a key share one queue instance, so the store sees them in order)."""
    kv = Cache("kv", key="key", keylen="keylen", val="val", vallen="vallen",
               buckets=buckets, entries=entries or None, policy=policy,
               write_miss=Cache.WRITE_ALLOC if write_alloc else Cache.NO_WRITE_ALLOC)
    requests = LogicalQueues("requests", KINDS)
    replies = LogicalQueues("replies", KINDS)

    class nic_rx(Segment):
        def impl(self):
            classify = receive(steer=False)     # the cache steers by key
            classify.get >> kv.get_start >> requests.enq("get")
            classify.set >> MakeRecord() >> kv.set_start >> requests.enq("set")
            classify.delete >> Forget(cache=kv, instances=instances) >> requests.enq("delete")
            classify.update >> MakeRecord() >> Uncache(cache=kv, instances=instances) \
                >> requests.enq("update")
            classify.other >> reply()

    nic_rx("nic_rx", device=target.NIC, cores=list(range(nic_cores)))
    serve(requests, replies, cached=True)
    respond_on_nic(replies, before={"get": kv.get_end, "set": kv.set_end})


def external_store(requests: LogicalQueues, replies: LogicalQueues) -> None:
    """Figure 1d: the host's half of split is external/server.c, a plain C program with
    its own main and threads, which takes requests with ``obtain_pkt(qid)`` and answers
    with ``get_send``, ``set_send``, ``delete_send`` and ``update_send``."""
    class obtain_pkt(CallableSegment):
        """struct kvs_task *obtain_pkt(int qid): the next request of instance qid, or NULL."""

        def configure(self):
            self.inp = Input(Int)
            self.out = Output("struct kvs_task *")

        def impl(self):
            self.inp >> requests.queue.qid
            for kind in KINDS:
                requests.deq(kind) >> Retrieve(record=kind in ("set", "update")) >> self.out

    def sender(kind: str) -> None:
        class send(CallableSegment):
            """void KIND_send(struct kvs_task *task): the program's answer, to the NIC."""

            def configure(self):
                self.inp = Input("struct kvs_task *")

            def impl(self):
                self.inp >> Restore(record=kind in ("get", "update")) >> replies.enq(kind)

        send(f"{kind}_send")

    obtain_pkt("obtain_pkt", default_return="NULL")
    for kind in KINDS:
        sender(kind)
    external_main("external/server.c", "store.c")
    cflags(f"-DKVS_WORKERS={instances}", f"-DKVS_MEMORY={memory << 20}",
           f"-DKVS_BUCKETS={store_buckets}", f"-DKVS_VALUE_MAX={value_max}")


class KVS(Flow):
    state = PerPacket(ItemRequest if design == "split-pointer" else Request)

    def impl(self):
        if design == "cpu":
            cpu()
        elif design == "auto":
            cpu(target.AUTO)
        elif design == "split":
            split()
        elif design == "external":
            split(host=external_store)
        elif design == "split-pointer":
            split_pointer()
        else:
            cache(Cache.WRITE_THROUGH if design == "cache-wt" else Cache.WRITE_BACK)


KVS()
