"""The key-value store's elements (Floem paper, sections 3-4): split a datagram into single
requests, parse, hash, classify, the store's get/put/delete/update, and the reply; for the
split-pointer design (section 7.1), the NIC's item creation and reading in host memory and
the host's index of items. kvs.py wires them into each design.

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
                   Uint, Void, param)
from floem.paths import runtime_dir
from floem.library import FRAME
from floem.library import memcached, net

HERE = os.path.dirname(os.path.abspath(__file__))
#: Where the library's C headers are (proto.h includes headers.h and memcached.h).
LIBRARY_C = os.path.dirname(memcached.HEADERS[-1])
PROTO_HEADERS = memcached.HEADERS + (os.path.join(HERE, "proto.h"),)
PROTO_SOURCES = memcached.SOURCES + (os.path.join(HERE, "proto.c"),)
STORE_HEADERS = PROTO_HEADERS + (os.path.join(HERE, "store.h"), os.path.join(HERE, "update.h"))
STORE_SOURCES = PROTO_SOURCES + (os.path.join(HERE, "store.c"),)
CACHE_HEADERS = PROTO_HEADERS + (os.path.join(runtime_dir(), "include", "floem", "cache.h"),)
TASK_HEADERS = PROTO_HEADERS + (os.path.join(HERE, "task.h"),)
ITEM_HEADERS = PROTO_HEADERS + (os.path.join(HERE, "itemlog.h"),)
INDEX_HEADERS = STORE_HEADERS + (os.path.join(HERE, "itemlog.h"),)

#: The largest value a SET can carry (proto.h's KVS_VALUE_LIMIT): a datagram of 2006 bytes.
VALUE_LIMIT = 2006 - 8 - 24 - 8 - 1
KEY_MAX = 250
#: What a record adds to a value: flags, expiry time and CAS value.
RECORD_HEADER = 16
value_max = param("value_max", VALUE_LIMIT,
                  help="longest value a SET may store (longer: 'Too large.')")


class Request(State):
    """The per-packet state of the store.

    ``pkt`` and ``buf`` are the request's frame, on the device that received it
    (elsewhere they are only carried along); ``key`` points at the key and ``val`` at a
    record (flags, expiry, value; proto.h), both sized, so their bytes cross queues, and
    bounded (the longest key, the record of the longest value), so a queue entry has room
    for them.
    ``now`` is when the request was received (`kvs_now`): every element judges expiry
    by it, so the clock is read once per request; ``oldest`` is the oldest live CAS value
    then (flush_all moves it up), by which every element judges records flushed.
    ``opcode`` is what the store is asked (proto.h's ``enum kvs_op``), ``cas`` the CAS value
    a write takes (0: not a write), ``arg`` its argument: the CAS value to compare, the
    delta of an INCR or DECR, or the expiry time of a TOUCH.
    """

    pkt = Field("struct kvs_packet *")
    buf = Field(Pointer(Void))
    opcode = Field(Uint(8))
    status = Field(Uint(16))
    key = Field(Pointer(Uint(8)), size="state->keylen", max_size=KEY_MAX)
    keylen = Field(Uint(16))
    hash = Field(Uint(32))
    qid = Field(Int)
    val = Field(Pointer(Uint(8)), size="state->vallen", max_size=RECORD_HEADER + value_max)
    vallen = Field(Uint(32))
    cached = Field(Uint(8))
    now = Field(Uint(32))
    cas = Field(Uint(64))
    arg = Field(Uint(64))
    oldest = Field(Uint(64))


class ItemRequest(Request):
    """The per-packet state of the split-pointer design: a `Request` and the item the NIC
    made for a SET or the host found for a GET: ``item`` is its position in the log
    (itemlog.h: where it is and which version), ``itemlen`` its size in bytes (0: none),
    ``expiry`` its record's expiry time, which the host's index keeps."""

    item = Field(Uint(64))
    itemlen = Field(Uint(32))
    expiry = Field(Uint(32))


class RequestDrops(State):
    """Datagrams `SplitRequests` and `ParseRequest` dropped (or, ``incomplete`` and
    ``unread``, the end of a text datagram they dropped), by reason (proto.h's
    ``enum kvs_drop``)."""

    not_udp = Field(Uint(64))
    ip_options = Field(Uint(64))
    too_short = Field(Uint(64))
    multi_datagram = Field(Uint(64))
    bad_length = Field(Uint(64))
    incomplete = Field(Uint(64))
    unread = Field(Uint(64))
    packed = False
    report = True


class Versions(State):
    """The CAS values, where requests are received (proto.h): ``last`` is the latest handed
    out, ``oldest`` the oldest live one (flush_all), ``flush_at`` the time of a delayed
    flush_all still to come (0: none)."""

    last = Field(Uint(64))
    oldest = Field(Uint(64))
    flush_at = Field(Uint(32))
    packed = False
    report = True


class Counts(State):
    """What the store answered, counted as memcached's ``stats`` counts it: get keys
    (``cmd_get``, of them ``get_hits`` and ``get_misses``), storage commands (``cmd_set``),
    deletes (``cmd_delete``), and every other request (``cmd_other``)."""

    cmd_get = Field(Uint(64))
    get_hits = Field(Uint(64))
    get_misses = Field(Uint(64))
    cmd_set = Field(Uint(64))
    cmd_delete = Field(Uint(64))
    cmd_other = Field(Uint(64))
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


#: The C expression of the drop counter for reason ``why`` (an ``enum kvs_drop``).
DROP_COUNTER = """(why == KVS_DROP_NOT_UDP ? &drops->not_udp
                 : why == KVS_DROP_IP_OPTIONS ? &drops->ip_options
                 : why == KVS_DROP_TOO_SHORT ? &drops->too_short
                 : why == KVS_DROP_MULTI_DATAGRAM ? &drops->multi_datagram
                 : why == KVS_DROP_BAD_LENGTH ? &drops->bad_length
                 : why == KVS_DROP_INCOMPLETE ? &drops->incomplete
                 : &drops->unread)"""


class SplitRequests(Element):
    """Give each request of a text datagram a frame of its own: every command, and every key
    of a get, which memcached answers on its own (proto.h's single requests). A datagram
    holding one request goes on as it is, binary ones and those `ParseRequest` drops too; a
    datagram's last request takes its frame, the others new ones; a data block cut short
    ends the last (`ParseRequest` answers it when its value is too large anyway). What is
    left at the end that is not a request (a line without its "\n": ``incomplete``) or
    follows a get, mn or quit (``unread``) is counted and dropped, as memcached never
    answers it. A datagram the packet I/O backend cut (longer than its buffers) becomes a
    datagram of the bytes it holds first (proto.h's kvs_uncut)."""

    c_headers = PROTO_HEADERS + net.HEADERS
    c_sources = PROTO_SOURCES
    drops = Persistent(RequestDrops)
    uses_network = True

    def configure(self) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)

    def impl(self) -> None:
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buf) = inp();
            output multiple;
            struct kvs_packet *p = (struct kvs_packet *)data;
            kvs_uncut(data, size);
            bool text = size > FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN
                        && data[FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN] != FLOEM_MC_REQUEST
                        && kvs_check(data, size) < 0;
            if (!text) {
                out(size, data, buf);
                return;
            }
            const uint8_t *words = kvs_text(p);
            size_t len = kvs_text_len(p);
            int why = KVS_DROP_INCOMPLETE;
            struct kvs_split cur, next;
            if (!kvs_split_next(words, len, 0, NULL, &cur)) {
                floem_add(%s, 1);
                floem_packet_t whole = {data, (uint32_t)size, buf};
                floem_net_free(&whole);
                return;
            }
            if (cur.next == len && !cur.more_keys
                && (cur.key_len == 0 || cur.key + cur.key_len == cur.line_len)) {
                floem_put16(&p->frame.reserved, kvs_split_flags(&cur));  /* one request */
                out(size, data, buf);
                return;
            }
            while (kvs_split_next(words, len, cur.next, &cur, &next)) {
                floem_packet_t more;
                if (!floem_net_alloc(FLOEM_UDP_FRAME_LEN + KVS_DATAGRAM_MAX, &more))
                    break;
                out(kvs_split_write(more.data, data, &cur), (uint8_t *)more.data, more.buffer);
                cur = next;
            }
            if (cur.next < len && !cur.more_keys) {
                why = cur.sends ? KVS_DROP_UNREAD : KVS_DROP_INCOMPLETE;
                floem_add(%s, 1);
            }
            out(kvs_split_write(data, data, &cur), data, buf);
        ''' % (DROP_COUNTER, DROP_COUNTER))


class ParseRequest(Element):
    """Accept whole single requests (``out``); drop and count the rest (``drop``).

    Sets ``pkt``, ``buf``, ``opcode``, ``key``/``keylen``, ``arg``, ``now``, ``oldest``,
    ``cas`` (a new CAS value for a write) and ``status``: what the request is answered if
    it never reaches the store (a text or binary error, a value longer than ``value_max``,
    a command answered without the store), else OK. A flush_all takes effect here. It
    writes the fields whatever the verdict (a dropped frame's are never read), as
    statements of their own rather than in a branch, so that the compiler sees every field
    written before it is read and does not clear the state for each packet.
    """

    c_headers = PROTO_HEADERS
    c_sources = PROTO_SOURCES
    drops = Persistent(RequestDrops)
    versions = Persistent(Versions)

    def configure(self, value_max: int = VALUE_LIMIT) -> None:
        self.inp = Input(*FRAME)
        self.out = Output()
        self.drop = Output(*FRAME)
        self.value_max = value_max

    def impl(self) -> None:
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buf) = inp();
            int why = kvs_check(data, size);
            struct kvs_packet *p = (struct kvs_packet *)data;
            uint32_t now = kvs_now();
            struct kvs_request r = {.op = KVS_OP_NONE};
            if (why < 0)
                why = kvs_parse(p, %(value_max)d, now, &r);
            bool ok = why < 0;
            if (r.flush)
                kvs_cas_flush(&versions->last, &versions->oldest, &versions->flush_at,
                              (uint32_t)r.arg, now);
            state->pkt = p;
            state->buf = buf;
            state->opcode = r.op;
            state->status = r.status;
            state->key = (uint8_t *)r.key;
            state->keylen = r.keylen;
            state->arg = r.arg;
            state->now = now;
            state->oldest = kvs_cas_oldest(&versions->last, &versions->oldest,
                                           &versions->flush_at, now);
            state->cas = r.writes ? kvs_cas_next(&versions->last) : 0;
            if (!ok)
                floem_add(%(counter)s, 1);
            output switch {
                case ok: out();
                else: drop(size, data, buf);
            }
        ''' % {"value_max": self.value_max, "counter": DROP_COUNTER})


class HashKey(Element):
    """``state->hash``: the key's hash, which picks its bucket in the store."""

    c_headers = PROTO_HEADERS

    def configure(self) -> None:
        self.inp = Input()
        self.out = Output()

    def impl(self) -> None:
        self.run_c("state->hash = kvs_hash(state->key, state->keylen); output { out(); }")


class Classify(Element):
    """GETs to ``get``, plain SETs to ``set``, plain DELETEs to ``delete``; the updates
    that read what the key holds (ADD, REPLACE, APPEND, PREPEND, CAS, INCR, DECR, TOUCH, get
    and touch, a SET or DELETE comparing a CAS value) to ``update``; requests answered
    without the store to ``other``. A SET too large also goes to ``delete``: like memcached,
    it removes the key's old value."""

    c_headers = PROTO_HEADERS

    def configure(self) -> None:
        self.inp = Input()
        self.get = Output()
        self.set = Output()
        self.delete = Output()
        self.update = Output()
        self.other = Output()

    def impl(self) -> None:
        self.run_c(r'''
            bool ok = state->status == FLOEM_MC_OK;
            uint8_t op = state->opcode;
            bool plain = state->arg == 0;
            output switch {
                case ok && op == KVS_OP_GET: get();
                case ok && op == KVS_OP_SET && plain: set();
                case (ok && op == KVS_OP_DELETE && plain)
                     || (state->status == FLOEM_MC_VALUE_TOO_LARGE && op == KVS_OP_SET):
                    delete();
                case ok && op != KVS_OP_NONE: update();
                else: other();
            }
        ''')


class MakeRecord(Element):
    """A storing request's record (flags, absolute expiry, its new CAS value, value) in
    ``val``: what the store keeps; for other requests, no record (``vallen`` 0)."""

    c_headers = PROTO_HEADERS

    def configure(self) -> None:
        self.inp = Input()
        self.out = Output()

    def impl(self) -> None:
        self.run_c(r'''
            static _Thread_local uint8_t record[KVS_RECORD_MAX];
            uint8_t op = state->opcode;
            bool stores = op == KVS_OP_SET || op == KVS_OP_ADD || op == KVS_OP_REPLACE
                          || op == KVS_OP_APPEND || op == KVS_OP_PREPEND || op == KVS_OP_CAS;
            state->vallen = stores ? kvs_record_make(record, state->pkt, state->now, state->cas) : 0;
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
            static _Thread_local uint8_t record[KVS_RECORD_MAX];
            long n = kvs_store_get(s, state->key, state->keylen, hash, state->now, state->oldest,
                                   record, sizeof record);
            state->val = record;
            state->vallen = n < 0 || (size_t)n > sizeof record ? 0 : (uint32_t)n;
        ''')


class HashtPut(StoreElement):
    """Store the record in ``val`` under the key; ``status`` OK, or out of memory."""

    def impl(self) -> None:
        self.store(r'''
            int failed = kvs_store_set(s, state->key, state->keylen, hash,
                                       kvs_record_expiry(state->val), kvs_record_cas(state->val),
                                       state->val, state->vallen);
            state->status = failed ? FLOEM_MC_OUT_OF_MEMORY : FLOEM_MC_OK;
        ''')


class HashtUpdate(StoreElement):
    """Apply an update (ADD, REPLACE, APPEND, PREPEND, CAS, INCR, DECR, TOUCH, get and touch,
    a SET or DELETE comparing a CAS value, or the RESTORE of what a NIC cache held) to the
    key atomically; ``status`` says how it went, and ``val`` holds the record the key holds
    after it (what an INCR, DECR or get-and-touch is answered with)."""

    def configure(self, cached: bool = False, value_max: int = VALUE_LIMIT) -> None:
        super().configure(cached)
        self.value_max = value_max

    def impl(self) -> None:
        self.store(r'''
            static _Thread_local uint8_t result[KVS_RECORD_MAX];
            uint16_t status;
            state->vallen = kvs_store_apply(s, state->key, state->keylen, hash, state->now,
                                            state->oldest, state->opcode, state->val, state->vallen,
                                            state->arg, state->cas, %d, result, &status);
            state->val = result;
            state->status = status;
        ''' % self.value_max)


class HashtDelete(StoreElement):
    """Delete the key; a DELETE's ``status`` says whether it held a live value.

    With ``cached=True`` (a NIC cache in front, see `Forget`), what the cache knew wins:
    it held the latest value whenever it held the key.
    """

    def impl(self) -> None:
        knew = "if (state->cached) found = state->cached == KVS_CACHED_LIVE;" if self.cached else ""
        self.store(r'''
            int found = kvs_store_delete(s, state->key, state->keylen, hash, state->now,
                                         state->oldest);
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
            int failed = kvs_store_set(s, state->key, state->keylen, hash, state->expiry,
                                       state->cas, &ref, sizeof ref);
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
            long n = kvs_store_get(s, state->key, state->keylen, hash, state->now, state->oldest,
                                   &ref, sizeof ref);
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
            long n = kvs_store_take(s, state->key, state->keylen, hash, state->now, state->oldest,
                                    &ref, sizeof ref);
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
            uint32_t reclen = kvs_record_make(record, state->pkt, state->now, state->cas);
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
                uint16_t keylen;        /* the key, in the request's frame */
                const uint8_t *key = kvs_request_key(state->pkt, &keylen);
                record = kvs_item_find(item, len, pos, key, keylen, &reclen);
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
            bool had = floem_cache_forget(%(cache)s_cache, state->key, state->keylen, &held, &len,
                                          &dirty);
            state->cached = !had ? KVS_CACHED_NO
                            : kvs_record_live(held, len, state->now, state->oldest) ? KVS_CACHED_LIVE
                            : KVS_CACHED_DEAD;
            state->qid = (int)(floem_cache_hash(state->key, state->keylen) %% %(n)du);
            output { out(); }
        ''' % {"cache": self.cache, "n": self.instances})


class Unsupported(Element):
    """An update the design cannot make: answered "not supported"."""

    c_headers = PROTO_HEADERS

    def configure(self) -> None:
        self.inp = Input()
        self.out = Output()

    def impl(self) -> None:
        self.run_c("state->status = KVS_NOT_SUPPORTED; output { out(); }")


class Uncache(Element):
    """An update in front of cache ``cache``: take the key out of it and, when the cache held
    a record for the key, first send that record to the store (a RESTORE: what the store
    holds may be older, a write the cache took back), then the update, which the store then
    applies to what the key really holds. Both are steered the way the cache steers misses
    and evictions (over ``instances`` queue instances), so the store sees them in order."""

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
            output multiple;
            state->qid = (int)(floem_cache_hash(state->key, state->keylen) %% %(n)du);
            if (floem_cache_forget(%(cache)s_cache, state->key, state->keylen, &held, &len, &dirty)) {
                uint8_t op = state->opcode;
                uint8_t *val = state->val;
                uint32_t vallen = state->vallen;
                uint64_t cas = state->cas;
                state->opcode = KVS_OP_RESTORE;
                state->val = (uint8_t *)held;
                state->vallen = len;
                state->cas = 0;
                out();
                state->opcode = op;
                state->val = val;
                state->vallen = vallen;
                state->cas = cas;
            }
            out();
        ''' % {"cache": self.cache, "n": self.instances})


class Respond(Element):
    """memcached's reply to the request: its first datagram written into the request's
    frame when it is no longer than the request, else into a frame of its own (the
    request's given back); a reply longer than a datagram (1400 bytes) continues in new
    frames. Every frame goes to ``out``; a frame that cannot be had is counted by the
    network (``alloc failed``) and that datagram is not sent. A request answered with
    nothing (noreply) gives its frame back, and the RESTORE of what a NIC cache held is
    answered by the request after it.

    ``record=True`` for GETs and updates, answered from the record in ``val``; the others
    are answered by ``status``. A write that did not happen gives its CAS value back
    (`Versions`); every reply is counted (`Counts`).
    """

    c_headers = PROTO_HEADERS + net.HEADERS
    c_sources = PROTO_SOURCES
    versions = Persistent(Versions)
    counts = Persistent(Counts)
    uses_network = True

    def configure(self, record: bool = False) -> None:
        self.inp = Input()
        self.out = Output(*FRAME)
        self.record = "state->val, state->vallen" if record else "NULL, 0"

    def impl(self) -> None:
        self.run_c(r'''
            struct kvs_packet *p = state->pkt;
            uint8_t op = state->opcode;
            static _Thread_local uint8_t msg[KVS_REPLY_MESSAGE_MAX];
            output multiple;
            if (op != KVS_OP_RESTORE) {
                if (state->cas != 0 && state->status != FLOEM_MC_OK)
                    kvs_cas_unused(&versions->last, state->cas);
                long len = kvs_reply(msg, p, state->status, %s, state->cas, state->now,
                                     state->oldest);
                if (op == KVS_OP_GET && state->status == FLOEM_MC_OK) {
                    floem_add(&counts->cmd_get, 1);
                    floem_add(kvs_record_live(%s, state->now, state->oldest) ? &counts->get_hits
                                                                              : &counts->get_misses, 1);
                } else {
                    bool stores = op == KVS_OP_SET || op == KVS_OP_ADD || op == KVS_OP_REPLACE
                                  || op == KVS_OP_APPEND || op == KVS_OP_PREPEND
                                  || op == KVS_OP_CAS;
                    floem_add(op == KVS_OP_DELETE ? &counts->cmd_delete
                              : stores ? &counts->cmd_set : &counts->cmd_other, 1);
                }
                if (len < 0) {
                    floem_packet_t whole = {(uint8_t *)p, 0, state->buf};
                    floem_net_free(&whole);
                } else {
                    /* the other datagrams first: they copy the request's headers */
                    unsigned n = kvs_reply_datagrams((size_t)len);
                    for (unsigned seq = 1; seq < n; seq++) {
                        floem_packet_t more;
                        if (!floem_net_alloc((uint32_t)kvs_reply_size((size_t)len, seq), &more))
                            break;
                        size_t size = kvs_reply_write(more.data, p, msg, (size_t)len, seq);
                        out(size, (uint8_t *)more.data, more.buffer);
                    }
                    floem_packet_t request = {p, (uint32_t)kvs_request_size(p), state->buf};
                    floem_packet_t first = request;
                    uint32_t size = (uint32_t)kvs_reply_size((size_t)len, 0);
                    bool own = size > request.len;  /* longer than the request: a frame of its own */
                    if (!own || floem_net_alloc(size, &first))
                        out(kvs_reply_write(first.data, p, msg, (size_t)len, 0),
                            (uint8_t *)first.data, first.buffer);
                    if (own)
                        floem_net_free(&request);
                }
            }
        ''' % (self.record, self.record))


class Retrieve(Element):
    """External design: hand a request to the external program (a `struct kvs_task`, the
    calling thread's, valid until its next call); ``record=True`` for a SET's or an
    update's record."""

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
            task.cas = state->cas;
            task.arg = state->arg;
            task.oldest = state->oldest;
            task.reply.pkt = state->pkt;
            task.reply.buf = state->buf;
            task.reply.qid = state->qid;
            task.reply.now = state->now;
            output { out(&task); }
        ''' % (self.length, self.copy))


class Restore(Element):
    """External design: take back a task the program answered, as the request's state;
    ``record=True`` for a GET's or an update's, which carries the record the key holds."""

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
            state->opcode = task->opcode;
            state->cas = task->cas;
            state->oldest = task->oldest;
            %s
            output { out(); }
        ''' % self.record)
