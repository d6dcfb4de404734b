"""The key-value store's elements (Floem paper, sections 3-4): parse, hash, classify, the
store's get/put/delete, and the reply; for the split-pointer design (section 7.1), the
NIC's item creation and reading in host memory and the host's index of items. kvs.py
wires them into each design.

Every element works on the per-packet state `Request` (split-pointer's on `ItemRequest`,
which adds the item's pointer to it). A request frame stays where it
arrived (the NIC in the offload designs), where its reply is written (into it, or into a
frame of its own when longer), so only the pointers ``pkt`` and ``buf`` travel with the
request, while the key and the record are variable-size fields whose bytes cross a
queue when something after it reads them.
"""
from __future__ import annotations

import os

from floem import (Element, Field, Input, Int, MemoryRegion, Output, Persistent, Pointer, State,
                   Uint, Void)
from floem.paths import runtime_dir
from floem.library import FRAME
from floem.library import memcached, net

HERE = os.path.dirname(os.path.abspath(__file__))
#: Where the library's C headers are (proto.h includes headers.h and memcached.h).
LIBRARY_C = os.path.dirname(memcached.HEADERS[-1])
PROTO_HEADERS = memcached.HEADERS + (os.path.join(HERE, "proto.h"),)
PROTO_SOURCES = memcached.SOURCES + (os.path.join(HERE, "proto.c"),)
STORE_HEADERS = PROTO_HEADERS + (os.path.join(HERE, "store.h"),)
STORE_SOURCES = PROTO_SOURCES + (os.path.join(HERE, "store.c"),)
CACHE_HEADERS = PROTO_HEADERS + (os.path.join(runtime_dir(), "include", "floem", "cache.h"),)
TASK_HEADERS = PROTO_HEADERS + (os.path.join(HERE, "task.h"),)
ITEM_HEADERS = PROTO_HEADERS + (os.path.join(HERE, "itemlog.h"),)
INDEX_HEADERS = STORE_HEADERS + (os.path.join(HERE, "itemlog.h"),)

#: The largest value a SET can carry (proto.h's KVS_VALUE_LIMIT): a datagram of 2006 bytes.
VALUE_LIMIT = 2006 - 8 - 24 - 8 - 1
KEY_MAX = 250
#: What a record adds to a value: flags and expiry time.
RECORD_HEADER = 8


class Request(State):
    """The per-packet state of the store.

    ``pkt`` and ``buf`` are the request's frame, on the device that received it
    (elsewhere they are only carried along); ``key`` points at the key and ``val`` at a
    record (flags, expiry, value; proto.h), both sized, so their bytes cross queues.
    ``now`` is when the request was received (`kvs_now`): every element judges expiry
    by it, so the clock is read once per request.
    """

    pkt = Field("struct kvs_packet *")
    buf = Field(Pointer(Void))
    opcode = Field(Uint(8))
    status = Field(Uint(16))
    key = Field(Pointer(Uint(8)), size="state->keylen")
    keylen = Field(Uint(16))
    hash = Field(Uint(32))
    qid = Field(Int)
    val = Field(Pointer(Uint(8)), size="state->vallen")
    vallen = Field(Uint(32))
    cached = Field(Uint(8))
    now = Field(Uint(32))


class ItemRequest(Request):
    """The per-packet state of the split-pointer design: a `Request` and the item the NIC
    made for a SET or the host found for a GET: ``item`` is its position in the log
    (itemlog.h: where it is and which version), ``itemlen`` its size in bytes (0: none),
    ``expiry`` its record's expiry time, which the host's index keeps."""

    item = Field(Uint(64))
    itemlen = Field(Uint(32))
    expiry = Field(Uint(32))


class RequestDrops(State):
    """Datagrams `ParseRequest` dropped, by reason (proto.h's ``enum kvs_drop``)."""

    not_udp = Field(Uint(64))
    ip_options = Field(Uint(64))
    too_short = Field(Uint(64))
    multi_datagram = Field(Uint(64))
    bad_magic = Field(Uint(64))
    bad_length = Field(Uint(64))
    packed = False
    report = True


class Table(State):
    """The store (store.h), made by the first element that uses it."""

    store = Field("struct kvs_store *")
    memory = Field(Uint(64))
    buckets = Field(Uint(32))
    packed = False

    def init(self, memory: int = 64 << 20, buckets: int = 1 << 17) -> None:
        self.memory = memory
        self.buckets = buckets


class ItemLog(State):
    """split-pointer: the NIC's allocator of the log of items in host memory (itemlog.h):
    ``head`` is the next free position (bytes over every lap), ``size`` the log's bytes,
    ``writing`` 1 while a NIC thread creates an item (one at a time). Only NIC elements use
    it, so it lives in NIC memory."""

    head = Field(Uint(64))
    size = Field(Uint(64))
    writing = Field(Uint(32))
    packed = False
    report = True

    def init(self, size: int = 32 << 20) -> None:
        self.size = size


class ItemIndex(Table):
    """split-pointer: the host's hash table, a store (store.h) of the position and size of
    each key's item (`struct kvs_item_ref`) in the log of ``log_bytes`` bytes; ``newest``
    is the end of the newest item the host was told of (`kvs_log_saw`)."""

    log_bytes = Field(Uint(64))
    newest = Field(Uint(64))

    def init(self, memory: int = 32 << 20, buckets: int = 1 << 17,
             log_bytes: int = 32 << 20) -> None:
        super().init(memory, buckets)
        self.log_bytes = log_bytes


class ParseRequest(Element):
    """Accept whole single-datagram requests (``out``); drop and count the rest (``drop``).

    Sets ``pkt``, ``buf``, ``opcode``, ``key``/``keylen``, ``now`` and ``status``: what
    the request is answered if it never reaches the store (invalid arguments, unknown
    command, a value longer than ``value_max``), else OK. It writes them whatever the
    verdict (a dropped frame's are never read), as statements of their own rather than
    in a branch, so that the compiler sees every field written before it is read and
    does not clear the state for each packet.
    """

    c_headers = PROTO_HEADERS
    c_sources = PROTO_SOURCES
    drops = Persistent(RequestDrops)

    def configure(self, value_max: int = VALUE_LIMIT) -> None:
        self.inp = Input(*FRAME)
        self.out = Output()
        self.drop = Output(*FRAME)
        self.value_max = value_max

    def impl(self) -> None:
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buf) = inp();
            int why = kvs_check(data, size);
            bool ok = why < 0;
            struct kvs_packet *p = (struct kvs_packet *)data;
            state->pkt = p;
            state->buf = buf;
            state->opcode = ok ? p->mc.opcode : 0;
            state->status = ok ? kvs_validate(p, %d) : FLOEM_MC_OK;
            state->key = ok ? kvs_key(p) : NULL;
            state->keylen = ok ? kvs_keylen(p) : 0;
            state->now = ok ? kvs_now() : 0;
            if (!ok) {
                uint64_t *count = why == KVS_DROP_NOT_UDP ? &drops->not_udp
                                : why == KVS_DROP_IP_OPTIONS ? &drops->ip_options
                                : why == KVS_DROP_TOO_SHORT ? &drops->too_short
                                : why == KVS_DROP_MULTI_DATAGRAM ? &drops->multi_datagram
                                : why == KVS_DROP_BAD_MAGIC ? &drops->bad_magic
                                : &drops->bad_length;
                floem_add(count, 1);
            }
            output switch {
                case ok: out();
                else: drop(size, data, buf);
            }
        ''' % self.value_max)


class HashKey(Element):
    """``state->hash``: the key's hash, which picks its bucket in the store."""

    c_headers = PROTO_HEADERS

    def configure(self) -> None:
        self.inp = Input()
        self.out = Output()

    def impl(self) -> None:
        self.run_c("state->hash = kvs_hash(state->key, state->keylen); output { out(); }")


class Classify(Element):
    """GET and GETK to ``get``, SET to ``set``, DELETE to ``delete``; NOOP and refused
    requests to ``other``. A SET too large also goes to ``delete``: like memcached, it
    removes the key's old value."""

    c_headers = PROTO_HEADERS

    def configure(self) -> None:
        self.inp = Input()
        self.get = Output()
        self.set = Output()
        self.delete = Output()
        self.other = Output()

    def impl(self) -> None:
        self.run_c(r'''
            bool ok = state->status == FLOEM_MC_OK;
            uint8_t op = state->opcode;
            output switch {
                case ok && (op == FLOEM_MC_GET || op == FLOEM_MC_GETK): get();
                case ok && op == FLOEM_MC_SET: set();
                case (ok && op == FLOEM_MC_DELETE) || state->status == FLOEM_MC_VALUE_TOO_LARGE:
                    delete();
                else: other();
            }
        ''')


class MakeRecord(Element):
    """A SET's record (flags, absolute expiry, value) in ``val``: what the store keeps."""

    c_headers = PROTO_HEADERS

    def configure(self) -> None:
        self.inp = Input()
        self.out = Output()

    def impl(self) -> None:
        self.run_c(r'''
            static _Thread_local uint8_t record[KVS_RECORD_HEADER + KVS_VALUE_LIMIT];
            state->vallen = kvs_record_make(record, state->pkt, state->now);
            state->val = record;
            output { out(); }
        ''')


class StoreElement(Element):
    """An element of the store: one input, one output, the `Table` it works on.

    ``cached=True``: a NIC cache is in front, whose evictions come with their key and
    record only: their hash is computed here (``hash`` is zero).
    """

    c_headers = STORE_HEADERS
    c_sources = STORE_SOURCES
    table = Persistent(Table)
    #: The key's hash, for a store behind a NIC cache.
    HASH_OR_COMPUTED = "state->hash ? state->hash : kvs_hash(state->key, state->keylen)"

    def configure(self, cached: bool = False) -> None:
        self.inp = Input()
        self.out = Output()
        self.cached = cached

    def store(self, body: str) -> None:
        """Run ``body`` with ``s`` (the store) and ``hash`` (the key's) declared."""
        self.run_c(r'''
            kvs_store_t *s = kvs_store_once(&table->store, table->memory, table->buckets);
            if (s == NULL) {
                fprintf(stderr, "kvs: cannot reserve %%llu bytes for the store\n",
                        (unsigned long long)table->memory);
                abort();
            }
            uint32_t hash = %s;
            %s
            output { out(); }
        ''' % (self.HASH_OR_COMPUTED if self.cached else "state->hash", body))


class HashtGet(StoreElement):
    """The key's record into ``val`` (``vallen`` 0 when the store has none)."""

    def impl(self) -> None:
        self.store(r'''
            static _Thread_local uint8_t record[KVS_RECORD_HEADER + KVS_VALUE_LIMIT];
            long n = kvs_store_get(s, state->key, state->keylen, hash, state->now, record,
                                   sizeof record);
            state->val = record;
            state->vallen = n < 0 || (size_t)n > sizeof record ? 0 : (uint32_t)n;
        ''')


class HashtPut(StoreElement):
    """Store the record in ``val`` under the key; ``status`` OK, or out of memory."""

    def impl(self) -> None:
        self.store(r'''
            int failed = kvs_store_set(s, state->key, state->keylen, hash,
                                       kvs_record_expiry(state->val), state->val, state->vallen);
            state->status = failed ? FLOEM_MC_OUT_OF_MEMORY : FLOEM_MC_OK;
        ''')


class HashtDelete(StoreElement):
    """Delete the key; a DELETE's ``status`` says whether it held a live value.

    With ``cached=True`` (a NIC cache in front, see `Forget`), what the cache knew wins:
    it held the latest value whenever it held the key.
    """

    def impl(self) -> None:
        knew = "if (state->cached) found = state->cached == KVS_CACHED_LIVE;" if self.cached else ""
        self.store(r'''
            int found = kvs_store_delete(s, state->key, state->keylen, hash, state->now);
            %s
            if (state->opcode == FLOEM_MC_DELETE)      /* a SET too large keeps its status */
                state->status = found ? FLOEM_MC_OK : FLOEM_MC_KEY_NOT_FOUND;
        ''' % knew)


class HashtPutItem(StoreElement):
    """split-pointer: file the item the NIC made (``item``, ``itemlen``) under the key, to
    expire with its record; ``status`` OK, or out of memory (the index is full)."""

    c_headers = INDEX_HEADERS
    table = Persistent(ItemIndex)

    def impl(self) -> None:
        self.store(r'''
            struct kvs_item_ref ref = {.pos = state->item, .len = state->itemlen};
            kvs_log_saw(&table->newest, ref.pos + ref.len);
            int failed = kvs_store_set(s, state->key, state->keylen, hash, state->expiry, &ref,
                                       sizeof ref);
            state->status = failed ? FLOEM_MC_OUT_OF_MEMORY : FLOEM_MC_OK;
        ''')


class HashtGetItem(StoreElement):
    """split-pointer: the key's item (``item``, ``itemlen``; ``itemlen`` 0 when the key has
    none, it expired, or the log has certainly overwritten it)."""

    c_headers = INDEX_HEADERS
    table = Persistent(ItemIndex)

    def impl(self) -> None:
        self.store(r'''
            struct kvs_item_ref ref;
            long n = kvs_store_get(s, state->key, state->keylen, hash, state->now, &ref,
                                   sizeof ref);
            bool hit = n == (long)sizeof ref
                       && !kvs_log_overwritten(&table->newest, table->log_bytes, ref.pos);
            state->item = hit ? ref.pos : 0;
            state->itemlen = hit ? ref.len : 0;
        ''')


class HashtDeleteItem(StoreElement):
    """split-pointer: delete the key; a DELETE's ``status`` says whether it held a live
    item the log had not overwritten."""

    c_headers = INDEX_HEADERS
    table = Persistent(ItemIndex)

    def impl(self) -> None:
        self.store(r'''
            struct kvs_item_ref ref;
            long n = kvs_store_take(s, state->key, state->keylen, hash, state->now, &ref,
                                    sizeof ref);
            bool found = n == (long)sizeof ref
                         && !kvs_log_overwritten(&table->newest, table->log_bytes, ref.pos);
            if (state->opcode == FLOEM_MC_DELETE)      /* a SET too large keeps its status */
                state->status = found ? FLOEM_MC_OK : FLOEM_MC_KEY_NOT_FOUND;
        ''')


class ItemLogElement(Element):
    """split-pointer, on the NIC: an element reaching the log ``items`` in host memory, whose
    room the `ItemLog` allocates."""

    c_headers = ITEM_HEADERS
    itemlog = Persistent(ItemLog)

    def configure(self, items: MemoryRegion) -> None:
        self.inp = Input()
        self.out = Output()
        self.items = items.name


class CreateItem(ItemLogElement):
    """split-pointer, on the NIC (the paper's create_item): make a SET's item (its key and
    record, itemlog.h) in the log, allocated with the `ItemLog` and written with one DMA
    write (one item at a time, so that writes land in log order); ``item``, ``itemlen``
    and ``expiry`` describe it."""

    c_sources = PROTO_SOURCES

    def impl(self) -> None:
        self.run_c(r'''
            static _Thread_local uint8_t item[KVS_ITEM_MAX] __attribute__((aligned(8)));
            uint8_t *record = kvs_item_record(item, state->keylen);
            uint32_t reclen = kvs_record_make(record, state->pkt, state->now);
            uint32_t len = kvs_item_size(state->keylen, reclen);
            kvs_log_lock(&itemlog->writing);
            uint64_t pos = kvs_log_reserve(&itemlog->head, itemlog->size, len);
            kvs_item_make(item, pos, state->key, state->keylen, reclen);
            dma_write((uint8_t *)%s + pos %% itemlog->size, len, item);
            kvs_log_unlock(&itemlog->writing);
            state->item = pos;
            state->itemlen = len;
            state->expiry = kvs_record_expiry(record);
            output { out(); }
        ''' % self.items)


class ReadItem(ItemLogElement):
    """split-pointer, on the NIC: read the item the host found for a GET (``item``,
    ``itemlen``) from the log with one blocking DMA read, and put its record in ``val``; a
    miss (``vallen`` 0) when it is not the item of the request's key made at that
    position, or the log overwrote it before the read completed."""

    def impl(self) -> None:
        self.run_c(r'''
            static _Thread_local uint8_t item[KVS_ITEM_MAX] __attribute__((aligned(8)));
            uint64_t pos = state->item;
            uint32_t len = state->itemlen, reclen = 0;
            uint8_t *record = NULL;
            if (len > 0 && len <= sizeof item) {
                dma_read((uint8_t *)%s + pos %% itemlog->size, len, item);
                struct kvs_packet *p = state->pkt;      /* the key, in the request's frame */
                record = kvs_item_find(item, len, pos, kvs_key(p), kvs_keylen(p), &reclen);
                if (!kvs_log_intact(&itemlog->head, itemlog->size, pos))
                    record = NULL;
            }
            state->val = record;
            state->vallen = record != NULL ? reclen : 0;
            output { out(); }
        ''' % self.items)


class Forget(Element):
    """A DELETE in front of cache ``cache``: take the key out of it, note what it held
    (``cached``), and steer the request the way the cache steers misses and evictions
    (over ``instances`` queue instances), so the store sees them in order."""

    c_headers = CACHE_HEADERS

    def configure(self, cache: object, instances: int) -> None:
        self.inp = Input()
        self.out = Output()
        self.cache = cache.name
        self.instances = instances

    def impl(self) -> None:
        self.run_c(r'''
            const void *held;
            uint32_t len;
            bool dirty;
            if (floem_cache_forget(%(cache)s_cache, state->key, state->keylen, &held, &len, &dirty))
                state->cached = kvs_record_live(held, len, state->now) ? KVS_CACHED_LIVE
                                                                      : KVS_CACHED_DEAD;
            state->qid = (int)(floem_cache_hash(state->key, state->keylen) %% %(n)du);
            output { out(); }
        ''' % {"cache": self.cache, "n": self.instances})


class Respond(Element):
    """memcached's reply to the request: its first datagram written into the request's
    frame when it is no longer than the request, else into a frame of its own (the
    request's given back); a reply longer than a datagram (1400 bytes) continues in new
    frames. Every frame goes to ``out``; a frame that cannot be had is counted by the
    network (``alloc failed``) and that datagram is not sent.

    ``record=True`` for GET and GETK, answered from the record in ``val``; the others are
    answered by ``status``.
    """

    c_headers = PROTO_HEADERS + net.HEADERS
    c_sources = PROTO_SOURCES
    uses_network = True

    def configure(self, record: bool = False) -> None:
        self.inp = Input()
        self.out = Output(*FRAME)
        self.record = "state->val, state->vallen" if record else "NULL, 0"

    def impl(self) -> None:
        self.run_c(r'''
            struct kvs_packet *p = state->pkt;
            struct floem_mc_msg r = kvs_reply_to(p, state->status, %s, state->now);
            unsigned n = kvs_reply_datagrams(&r);
            output multiple;
            /* the other datagrams first: they copy the request's headers */
            for (unsigned seq = 1; seq < n; seq++) {
                floem_packet_t more;
                if (!floem_net_alloc((uint32_t)kvs_reply_size(&r, seq), &more))
                    break;
                out(kvs_reply_write(more.data, p, &r, seq), (uint8_t *)more.data, more.buffer);
            }
            uint32_t len = (uint32_t)kvs_reply_size(&r, 0);
            floem_packet_t request = {p, (uint32_t)kvs_request_size(p), state->buf};
            floem_packet_t first = request;
            bool own = len > request.len;       /* longer than the request: a frame of its own */
            if (!own || floem_net_alloc(len, &first))
                out(kvs_reply_write(first.data, p, &r, 0), (uint8_t *)first.data, first.buffer);
            if (own)
                floem_net_free(&request);
        ''' % self.record)


class Retrieve(Element):
    """External design: hand a request to the external program (a `struct kvs_task`, the
    calling thread's, valid until its next call); ``record=True`` for a SET's record."""

    c_headers = TASK_HEADERS

    def configure(self, record: bool = False) -> None:
        self.inp = Input()
        self.out = Output("struct kvs_task *")
        self.copy = "memcpy(task.record, state->val, state->vallen);" if record else ""
        self.length = "state->vallen" if record else "0"

    def impl(self) -> None:
        self.run_c(r'''
            static _Thread_local struct kvs_task task;
            task.opcode = state->opcode;
            task.keylen = state->keylen;
            memcpy(task.key, state->key, state->keylen);
            task.hash = state->hash;
            task.reclen = %s;
            %s
            task.status = state->status;
            task.reply.pkt = state->pkt;
            task.reply.buf = state->buf;
            task.reply.qid = state->qid;
            task.reply.now = state->now;
            output { out(&task); }
        ''' % (self.length, self.copy))


class Restore(Element):
    """External design: take back a task the program answered, as the request's state;
    ``record=True`` for a GET's, which carries the record found."""

    c_headers = TASK_HEADERS

    def configure(self, record: bool = False) -> None:
        self.inp = Input("struct kvs_task *")
        self.out = Output()
        self.record = "state->val = task->record; state->vallen = task->reclen;" if record else ""

    def impl(self) -> None:
        self.run_c(r'''
            struct kvs_task *task = inp();
            state->pkt = task->reply.pkt;
            state->buf = task->reply.buf;
            state->qid = task->reply.qid;
            state->now = task->reply.now;
            state->status = task->status;
            %s
            output { out(); }
        ''' % self.record)
