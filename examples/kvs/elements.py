"""The key-value store's elements (Floem paper, sections 3-4): split a request (a datagram, or
a message of a TCP stream) into single requests, parse, hash, classify, the store's
get/put/delete/update, and the reply; for the
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

#: The largest value a SET can carry over UDP (proto.h's KVS_DATAGRAM_VALUE_LIMIT): a
#: datagram of 2006 bytes.
DATAGRAM_VALUE_LIMIT = 2006 - 8 - 24 - 8 - 1
#: The largest value the store takes (proto.h's KVS_VALUE_LIMIT): a binary SET in the longest
#: TCP message a frame holds.
VALUE_LIMIT = 65535 - 40 - 1 - 24 - 8 - 1
KEY_MAX = 250
#: What a record adds to a value: flags, expiry time and CAS value.
RECORD_HEADER = 16
value_max = param("value_max", 8192,
                  help=f"longest value a SET may store (longer: 'Too large.'), at most "
                       f"{VALUE_LIMIT}; over UDP at most {DATAGRAM_VALUE_LIMIT}, what a "
                       f"datagram's frame holds")


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
    delta of an INCR or DECR, or the expiry time of a TOUCH. ``part`` is what the reply to
    one key of a get depends on besides (proto.h's kvs_split_flags).
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
    part = Field(Uint(8))


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
    (``cmd_get``, of them ``get_hits`` and ``get_misses``), storage commands (``cmd_set``,
    compare-and-swaps among them: ``cas_hits``, ``cas_badval``, ``cas_misses``), deletes
    (``cmd_delete``: ``delete_hits`` and ``delete_misses``), touches and gets that touch
    (``cmd_touch``: ``touch_hits``, ``touch_misses``), increments and decrements (hits and
    misses), flush_all (``cmd_flush``, counted where it is received), and every other request
    (``cmd_other``)."""

    cmd_get = Field(Uint(64))
    get_hits = Field(Uint(64))
    get_misses = Field(Uint(64))
    cmd_set = Field(Uint(64))
    cmd_delete = Field(Uint(64))
    cmd_other = Field(Uint(64))
    delete_hits = Field(Uint(64))
    delete_misses = Field(Uint(64))
    cmd_touch = Field(Uint(64))
    touch_hits = Field(Uint(64))
    touch_misses = Field(Uint(64))
    incr_hits = Field(Uint(64))
    incr_misses = Field(Uint(64))
    decr_hits = Field(Uint(64))
    decr_misses = Field(Uint(64))
    cas_hits = Field(Uint(64))
    cas_misses = Field(Uint(64))
    cas_badval = Field(Uint(64))
    cmd_flush = Field(Uint(64))
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
    """Give each request of a text datagram or TCP message a frame of its own: every
    command, and every key of a get, which memcached answers on its own (proto.h's single
    requests), with what its answer depends on besides in ``part``. A request holding one
    single request goes on as it is, binary ones and those `ParseRequest` drops too; a
    request's last single request takes its frame, the others new ones made before it
    (``floem_net_alloc_before``), so that their replies leave in order, whichever path each
    takes. A data block cut short ends the last (`ParseRequest` answers it when its value is
    too large anyway). What is left at the end that is not a request (a line without its
    "\n": ``incomplete``) or follows a get, mn or quit (``unread``) is counted and dropped,
    as memcached never answers it. A request the packet I/O backend cut (longer than its
    buffers) becomes a request of the bytes it holds first (proto.h's kvs_uncut)."""

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
            state->part = 0;
            if (!kvs_maybe_text(data, size) || kvs_check(data, size) >= 0) {
                out(size, data, buf);
                return;
            }
            const uint8_t *words = kvs_text(p);
            size_t len = kvs_text_len(p);
            int why = KVS_DROP_INCOMPLETE;
            struct kvs_split cur, next;
            floem_packet_t whole = {data, (uint32_t)size, buf};
            if (!kvs_split_next(words, len, 0, NULL, &cur)) {
                floem_add(%s, 1);
                floem_net_free(&whole);
                return;
            }
            if (cur.next == len && !cur.more_keys
                && (cur.key_len == 0 || cur.key + cur.key_len == cur.line_len)) {
                state->part = kvs_split_flags(&cur);               /* one request */
                out(size, data, buf);
                return;
            }
            while (kvs_split_next(words, len, cur.next, &cur, &next)) {
                floem_packet_t more;
                if (!floem_net_alloc_before(&whole, (uint32_t)kvs_split_size(data, &cur), &more))
                    break;
                state->part = kvs_split_flags(&cur);
                out(kvs_split_write(more.data, data, &cur), (uint8_t *)more.data, more.buffer);
                cur = next;
            }
            if (cur.next < len && !cur.more_keys) {
                why = cur.sends ? KVS_DROP_UNREAD : KVS_DROP_INCOMPLETE;
                floem_add(%s, 1);
            }
            state->part = kvs_split_flags(&cur);
            out(kvs_split_write(data, data, &cur), data, buf);
        ''' % (DROP_COUNTER, DROP_COUNTER))


class ParseRequest(Element):
    """Accept whole single requests (``out``); drop and count the rest (``drop``).

    Sets ``pkt``, ``buf``, ``opcode``, ``key``/``keylen``, ``arg``, ``now``, ``oldest``,
    ``cas`` (a new CAS value for a write) and ``status``: what the request is answered if
    it never reaches the store (a text or binary error, a value longer than ``value_max``,
    a command answered without the store), else OK. A flush_all takes effect (and is
    counted) here. It writes the fields whatever the verdict (a dropped frame's are never
    read), as statements of their own rather than in a branch, so that the compiler sees
    every field written before it is read and does not clear the state for each packet.
    """

    c_headers = PROTO_HEADERS
    c_sources = PROTO_SOURCES
    drops = Persistent(RequestDrops)
    versions = Persistent(Versions)
    counts = Persistent(Counts)

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
            if (r.flush) {
                kvs_cas_flush(&versions->last, &versions->oldest, &versions->flush_at,
                              (uint32_t)r.arg, now);
                floem_add(&counts->cmd_flush, 1);
            }
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
    ``val``: what the store keeps (a binary INCR's: the record it creates for a key that has
    none); for other requests, no record (``vallen`` 0)."""

    c_headers = PROTO_HEADERS

    def configure(self) -> None:
        self.inp = Input()
        self.out = Output()

    def impl(self) -> None:
        self.run_c(r'''
            static _Thread_local uint8_t record[KVS_RECORD_MAX];
            state->vallen = kvs_record_make(record, state->pkt, state->now, state->cas);
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
    """An update the design cannot make: answered "not supported"; stats go on, answered
    without the store's figures."""

    c_headers = PROTO_HEADERS

    def configure(self) -> None:
        self.inp = Input()
        self.out = Output()

    def impl(self) -> None:
        self.run_c(r'''
            if (state->opcode != KVS_OP_STATS)
                state->status = KVS_NOT_SUPPORTED;
            output { out(); }
        ''')


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
    """memcached's reply to the request, in frames made before the request's own
    (``floem_net_alloc_before``), the last written into the request's frame when it is no
    longer than the request: over UDP datagrams of at most 1400 bytes, over TCP pieces of
    the connection's stream. Every frame goes to ``out``; a frame that cannot be had is
    counted by the network (``alloc failed``) and is not sent. A request answered with
    nothing (noreply, a quiet binary request that succeeded) gives its frame back, and the
    RESTORE of what a NIC cache held is answered by the request after it. A request after
    which memcached closes its connection (quit, a binary protocol error) closes it
    (``floem_net_close``) once its reply is sent.

    ``record=True`` for GETs and updates, answered from the record in ``val``; the others
    are answered by ``status``. A write that did not happen gives its CAS value back
    (`Versions`); every reply is counted (`Counts`). Stats are answered here, with the
    counts, the network's connections and bytes, and the store's figures in ``val``.
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
            uint16_t status = state->status;
            bool ok = status == FLOEM_MC_OK;
            static _Thread_local uint8_t msg[KVS_REPLY_MESSAGE_MAX];
            output multiple;
            if (op != KVS_OP_RESTORE) {
                if (state->cas != 0 && !ok)
                    kvs_cas_unused(&versions->last, state->cas);
                uint64_t *cmd = &counts->cmd_other, *outcome = NULL;
                switch (op) {
                case KVS_OP_GET:
                    if (!ok)
                        break;
                    cmd = &counts->cmd_get;
                    outcome = kvs_record_live(%(rec)s, state->now, state->oldest)
                              ? &counts->get_hits : &counts->get_misses;
                    break;
                case KVS_OP_TOUCH: case KVS_OP_GAT:
                    cmd = &counts->cmd_touch;
                    outcome = ok ? &counts->touch_hits : &counts->touch_misses;
                    break;
                case KVS_OP_DELETE:
                    cmd = &counts->cmd_delete;
                    outcome = ok ? &counts->delete_hits : &counts->delete_misses;
                    break;
                case KVS_OP_INCR:
                    outcome = ok ? &counts->incr_hits : &counts->incr_misses;
                    break;
                case KVS_OP_DECR:
                    outcome = ok ? &counts->decr_hits : &counts->decr_misses;
                    break;
                case KVS_OP_CAS:
                    cmd = &counts->cmd_set;
                    outcome = ok ? &counts->cas_hits : status == FLOEM_MC_KEY_EXISTS
                              ? &counts->cas_badval : &counts->cas_misses;
                    break;
                case KVS_OP_SET: case KVS_OP_ADD: case KVS_OP_REPLACE: case KVS_OP_APPEND:
                case KVS_OP_PREPEND:
                    cmd = &counts->cmd_set;
                    break;
                default:
                    break;
                }
                floem_add(cmd, 1);
                if (outcome != NULL)
                    floem_add(outcome, 1);
                long len;
                if (op == KVS_OP_STATS) {
                    floem_net_stats_t net;
                    floem_net_stats(&net);
                    struct kvs_stats st = {
                        .pid = (uint32_t)getpid(), .uptime = kvs_uptime(), .time = state->now,
                        .threads = floem_net_queues(), .curr_connections = net.conns_open,
                        .total_connections = net.conns_accepted, .bytes_read = net.bytes_in,
                        .bytes_written = net.bytes_out, .cmd_get = counts->cmd_get,
                        .cmd_set = counts->cmd_set, .cmd_flush = counts->cmd_flush,
                        .cmd_touch = counts->cmd_touch, .get_hits = counts->get_hits,
                        .get_misses = counts->get_misses, .delete_hits = counts->delete_hits,
                        .delete_misses = counts->delete_misses, .incr_hits = counts->incr_hits,
                        .incr_misses = counts->incr_misses, .decr_hits = counts->decr_hits,
                        .decr_misses = counts->decr_misses, .cas_hits = counts->cas_hits,
                        .cas_misses = counts->cas_misses, .cas_badval = counts->cas_badval,
                        .touch_hits = counts->touch_hits, .touch_misses = counts->touch_misses,
                    };
                    kvs_stats_from_record(&st, %(rec)s);
                    if (kvs_stats_resets(p))
                        memset(counts, 0, sizeof *counts);
                    len = kvs_stats_reply(msg, p, &st);
                } else {
                    len = kvs_reply(msg, p, status, %(rec)s, state->cas, state->now,
                                    state->oldest, state->part);
                }
                floem_packet_t request = {(uint8_t *)p, (uint32_t)kvs_request_size(p), state->buf};
                bool closes = kvs_closes(p, status), sent = false;
                unsigned n = len < 0 ? 0 : kvs_reply_frames(p, (size_t)len);
                for (unsigned seq = 0; seq < n; seq++) {
                    uint32_t size = (uint32_t)kvs_reply_size(p, (size_t)len, seq);
                    if (seq + 1 == n && !closes && size <= request.len) {  /* in place */
                        out(kvs_reply_write(request.data, p, msg, (size_t)len, seq),
                            (uint8_t *)request.data, request.buffer);
                        sent = true;
                        break;
                    }
                    floem_packet_t frame;
                    if (!floem_net_alloc_before(&request, size, &frame))
                        break;
                    out(kvs_reply_write(frame.data, p, msg, (size_t)len, seq),
                        (uint8_t *)frame.data, frame.buffer);
                }
                if (!sent && closes)
                    floem_net_close(&request);
                else if (!sent)
                    floem_net_free(&request);
            }
        ''' % {"rec": self.record})


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
            task.reply.part = state->part;
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
            state->part = task->reply.part;
            state->status = task->status;
            state->opcode = task->opcode;
            state->cas = task->cas;
            state->oldest = task->oldest;
            %s
            output { out(); }
        ''' % self.record)
