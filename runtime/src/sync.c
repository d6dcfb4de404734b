/* The queue synchronization layer: NIC-side shadows of host-resident queues (floem/sync.h).
 *
 * Positions count entries from 0 forever; position p lives in shadow slot and host
 * entry p mod size, on lap p / size. The entry is NIC-owned when its host status word
 * is its *ready turn*: 2L (free) when the NIC produces (to_host), 2L + 1 (published)
 * when it consumes (from_host). A worker finishing an entry stores ready + 1 in the
 * shadow's status word (to_host: published; from_host: free for the next lap), which is
 * exactly what the write-back must put in host memory. The shadow keeps status words
 * and channels in wire order.
 *
 * Five cursors, each the first position in its state, divide the positions:
 *
 *     writing <= modified <= valid <= reading <= invalid <= writing + size
 *     [writing, modified)  writing:  a write-back request is in flight
 *     [modified, valid)    modified: finished by the workers, not written back yet
 *     [valid, reading)     valid:    fetched and NIC-owned; the workers' entries
 *     [reading, invalid)   reading:  the one read request is in flight
 *     [invalid, writing + size)      invalid: slots free to fetch into
 *
 * Workers own `valid`: finishing the entry at `valid` advances it over every
 * consecutive finished entry (workers may finish out of order; the status words in
 * the shadow say which ones are done). The manager owns the other four. The two
 * sides meet only through `valid` and `reading` (release stores, acquire loads), so a
 * worker and a manager may run concurrently on different threads. Workers are
 * serialised among themselves by a spinlock when `multi` is set; manager rounds by a
 * try-lock, so any number of threads may call floem_sync_manage.
 *
 * Manager round: retire completed write-backs (writing advances); when the read has
 * completed, advance `reading` over what it made NIC-owned (to_host: positions below the
 * host's release count + size; from_host: the fetched prefix, see below), giving the
 * rest back to invalid (`invalid` = `reading`) to be read again; write back modified
 * entries, a full batch at a time or a partial one when no entry was finished since the
 * previous round; issue the next read (when a batch of slots is free, or the workers have
 * nothing valid left). A round that moved a cursor resets the caller's idle back-off.
 *
 * Reading from_host entries takes two reads. A single DMA read guarantees nothing about
 * the order in which it observes concurrent updates of the memory it reads (PCIe Base
 * Specification, "Update Ordering and Granularity Observed by a Read Transaction"): a
 * read that finds an entry's status word published may hold payload bytes from before
 * the host wrote them. So the ready prefix of a from_host read only extends `seen` (the
 * end of the entries known to be published); an entry becomes valid when a later read,
 * issued after that one completed, fetches it: the host published its payload before its
 * status word, and does not touch it while the NIC owns it. Each read covers the entries
 * seen but not fetched yet and a batch beyond them, so in a steady stream one read fetches
 * a batch and sees the next. Seeing reads the 8-byte headers (a descriptor each);
 * fetching reads from the channel to the end of the used bytes the seen header gave
 * (`fetched` records how many), and an entry whose fetched header says more was used is
 * fetched again. to_host needs no entry read at all: the host's release count (4 bytes)
 * says which entries are free, and the workers overwrite them. The blocking variant reads
 * a from_host entry's header, then, when it is published, its channel and used bytes.
 *
 * Fault points (floem_fault_point, FLOEM_FAULTS stall=...): the worker wrappers and
 * access_done while the worker holds an entry, and a manager round after taking the
 * manager lock and between its write-backs and its read.
 *
 * Write-back of to_host entries [a, b) is one request: entry a from its channel and
 * entries a + 1 .. b - 1 from their status words, each to the end of its used bytes (a
 * descriptor each, merged where an entry is used to its end and the next follows it),
 * then entry a's status word; b - a is what max_descriptors allows. The run carries the
 * status words of a + 1 .. b - 1 already published; that is safe because a host consumer
 * only looks at an entry
 * after the one before it, and entry a's status, stored by the last descriptor,
 * publishes the whole run. Only the order between descriptors matters, as with real
 * DMA hardware. Write-back of from_host entries is their status words only, one
 * descriptor each, so a request holds at most max_descriptors of them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/sync.h"
#include "floem/runtime.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Write-back requests in flight per shadow (beyond the engine's limit they would wait anyway). */
#define SYNC_MAX_WRITES 16
/* Status words per from_host write-back request, at most. */
#define SYNC_MAX_DESCRIPTORS 64

struct floem_sync {
    /* Configuration, set by floem_sync_init. */
    _Alignas(64) uintptr_t host;     /* host address of the queue instance */
    uint32_t size, entry_size;
    uint32_t batch;                  /* entries per read request */
    uint32_t write_cap;              /* entries per write-back request */
    floem_sync_dir_t dir;
    bool multi;
    /* Worker side. */
    _Alignas(64) int worker_lock;    /* taken when multi */
    uint64_t take;                   /* next position the enq/deq wrappers hand out */
    uint64_t valid;
    uint64_t entries, dropped;
    uint64_t moved;                  /* headers and used payload bytes of the entries finished */
    /* Manager side. */
    _Alignas(64) int manager_lock;
    uint64_t writing, modified, reading, invalid;
    uint64_t seen;                   /* from_host: entries before it were seen published */
    uint64_t fetch_end;              /* from_host: the pending read fetches [reading, fetch_end) */
    uint64_t released;               /* to_host: the host released every position before it */
    uint64_t held;                   /* to_host: 1 + the position the latest read found the
                                        host still holding (0: none); workers read it */
    uint32_t count_word;             /* to_host: the host's release count, read by DMA (wire) */
    uint32_t fetched[SYNC_MAX_DESCRIPTORS]; /* from_host: bytes of each entry the read fetches */
    uint64_t last_valid;             /* `valid` as seen by the previous round */
    bool read_pending;
    floem_dma_req_t read_req;
    uint32_t writes_head, writes_count;
    struct {
        floem_dma_req_t req;
        uint64_t end;                /* first position after the request's entries */
    } writes[SYNC_MAX_WRITES];
    uint64_t read_requests, write_requests, flushes;
};

size_t floem_sync_bytes(uint32_t size, uint32_t entry_size)
{
    return (sizeof(struct floem_sync) + (size_t)size * entry_size + 63) & ~(size_t)63;
}

static void fail(const floem_sync_t *s, const char *what)
{
    fprintf(stderr, "floem: sync layer of host queue %p: %s\n", (void *)s->host, what);
    abort();
}

static void lock(int *l)
{
    if (!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        return;
    floem_count_pause();                /* spinning is waiting, not work */
    unsigned spins = 0;
    do
        while (__atomic_load_n(l, __ATOMIC_RELAXED))
            if (++spins % 128 == 0)
                sched_yield();
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE));
    floem_count_resume();
}

static void unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static void lock_workers(floem_sync_t *s)
{
    if (s->multi)
        lock(&s->worker_lock);
}

static void unlock_workers(floem_sync_t *s)
{
    if (s->multi)
        unlock(&s->worker_lock);
}

/* Add to a counter written under one side's serialisation, readable by floem_sync_stats. */
static void count(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static struct floem_queue_entry *slot(const floem_sync_t *s, uint32_t index)
{
    return (struct floem_queue_entry *)((char *)s + sizeof *s + (size_t)index * s->entry_size);
}

static struct floem_queue_entry *slot_at(const floem_sync_t *s, uint64_t p)
{
    return slot(s, (uint32_t)(p % s->size));
}

/* Payload bytes an entry's header says its producer wrote (wire order; at most the entry). */
static uint32_t used_bytes(const floem_sync_t *s, const struct floem_queue_entry *e)
{
    uint32_t units = floem_wire16(e->used), room = s->entry_size - FLOEM_QUEUE_ENTRY_HEADER_BYTES;
    return units == FLOEM_QUEUE_USED_ALL || units * 8u > room ? room : units * 8u;
}

/* Host address of host entry `index`, or of `offset` bytes into it. */
static void *host_entry(const floem_sync_t *s, uint32_t index, uint32_t offset)
{
    return (void *)(s->host + FLOEM_QUEUE_HEADER_BYTES + (uintptr_t)index * s->entry_size + offset);
}

/* The status word that makes position p NIC-owned. */
static uint32_t ready_turn(const floem_sync_t *s, uint64_t p)
{
    uint32_t turn = (uint32_t)(p / s->size) * 2u;
    return s->dir == FLOEM_SYNC_TO_HOST ? turn : turn + 1;
}

/* A shadow status word, in host order. */
static uint32_t turn_of(const struct floem_queue_entry *e)
{
    return floem_wire32(__atomic_load_n(&e->status, __ATOMIC_ACQUIRE));
}

/* The shadow slot holding a payload handed out by the wrappers; aborts on a foreign pointer. */
static struct floem_queue_entry *entry_of(const floem_sync_t *s, void *payload)
{
    struct floem_queue_entry *e = (struct floem_queue_entry *)payload - 1;
    uintptr_t offset = (uintptr_t)e - (uintptr_t)slot(s, 0);
    if ((uintptr_t)e < (uintptr_t)slot(s, 0) || offset % s->entry_size != 0 ||
        offset / s->entry_size >= s->size)
        fail(s, "an entry that is not in this shadow");
    return e;
}

/* Mark an entry finished: its shadow status becomes the turn the host must see. Ready
 * turns are even (to_host) or odd (from_host); the other parity means finished already. */
static void finish(floem_sync_t *s, struct floem_queue_entry *e)
{
    uint32_t turn = turn_of(e);
    if ((turn & 1) != (s->dir == FLOEM_SYNC_FROM_HOST))
        fail(s, "an entry finished twice");
    __atomic_store_n(&e->status, floem_wire32(turn + 1), __ATOMIC_RELEASE);
    count(&s->entries, 1);
    count(&s->moved, FLOEM_QUEUE_ENTRY_HEADER_BYTES + used_bytes(s, e));
}

static void check_dir(const floem_sync_t *s, floem_sync_dir_t dir)
{
    if (s->dir != dir)
        fail(s, dir == FLOEM_SYNC_TO_HOST ? "enqueue on a queue the NIC consumes"
                                          : "dequeue on a queue the NIC produces");
}

void floem_sync_init(floem_sync_t *s, floem_queue_t *host_queue, uint32_t size,
                     uint32_t entry_size, floem_sync_dir_t dir, uint32_t batch, bool multi)
{
    s->host = (uintptr_t)host_queue;
    const floem_dma_model_t *model = floem_dma_model();
    if (size == 0 || (entry_size != 32 && (entry_size == 0 || entry_size % 64 != 0)))
        fail(s, "bad queue shape (need >= 1 entry of 32 bytes or a multiple of 64)");
    if (batch == 0 || (dir != FLOEM_SYNC_TO_HOST && dir != FLOEM_SYNC_FROM_HOST))
        fail(s, "bad batch or direction");
    if (((uintptr_t)s & 63) != 0 || (s->host & 63) != 0)
        fail(s, "shadow or host queue not 64-byte aligned");
    if (model->max_descriptors < (dir == FLOEM_SYNC_TO_HOST ? 2u : 1u))
        fail(s, "the DMA engine is not initialised or takes too few descriptors per request");
    memset(s, 0, floem_sync_bytes(size, entry_size));
    s->host = (uintptr_t)host_queue;
    s->size = size;
    s->entry_size = entry_size;
    s->batch = batch;
    s->write_cap = batch;
    if (dir == FLOEM_SYNC_FROM_HOST && s->write_cap > model->max_descriptors)
        s->write_cap = model->max_descriptors;
    if (dir == FLOEM_SYNC_FROM_HOST && s->write_cap > SYNC_MAX_DESCRIPTORS)
        s->write_cap = SYNC_MAX_DESCRIPTORS;
    s->dir = dir;
    s->multi = multi;
#ifndef FLOEM_SYNC_BLOCKING
    if (dir == FLOEM_SYNC_TO_HOST) {
        /* The host consumers maintain the release count from now on (floem/queue.h); no entry
         * is published before this write lands (later write-backs land after it). */
        s->count_word = floem_wire32(1);
        dma_write((char *)host_queue + FLOEM_QUEUE_TRACK_RELEASES_OFFSET, 4, &s->count_word);
        s->count_word = 0;
    }
#endif
}

#ifndef FLOEM_SYNC_BLOCKING
bool floem_sync_enq_full(floem_sync_t *s)
{
    uint64_t reading = __atomic_load_n(&s->reading, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&s->held, __ATOMIC_RELAXED) == reading + 1;
}
#else
bool floem_sync_enq_full(floem_sync_t *s)
{
    (void)s;                /* the reserve that found nothing has just read the status word */
    return true;
}
#endif

void floem_sync_enq_drop(floem_sync_t *s)
{
    __atomic_fetch_add(&s->dropped, 1, __ATOMIC_RELAXED);
}

void floem_sync_stats(const floem_sync_t *s, floem_sync_stats_t *out)
{
    out->entries = __atomic_load_n(&s->entries, __ATOMIC_RELAXED);
    out->moved = __atomic_load_n(&s->moved, __ATOMIC_RELAXED);
    out->read_requests = __atomic_load_n(&s->read_requests, __ATOMIC_RELAXED);
    out->write_requests = __atomic_load_n(&s->write_requests, __ATOMIC_RELAXED);
    out->flushes = __atomic_load_n(&s->flushes, __ATOMIC_RELAXED);
    out->dropped = __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
    out->entry_size = s->entry_size;
}

#ifndef FLOEM_SYNC_BLOCKING

/* The next position the wrappers hand out: `take`, or `valid` once the workers' finishing
 * has moved it past (entries accessed directly, not through the wrappers). */
static uint64_t next_take(const floem_sync_t *s)
{
    uint64_t valid = __atomic_load_n(&s->valid, __ATOMIC_RELAXED);
    return s->take > valid ? s->take : valid;
}

void floem_sync_cursors(const floem_sync_t *s, floem_sync_cursors_t *out)
{
    *out = (floem_sync_cursors_t){s->writing, s->modified,
                                  __atomic_load_n(&s->valid, __ATOMIC_RELAXED),
                                  __atomic_load_n(&s->reading, __ATOMIC_RELAXED), s->invalid,
                                  next_take(s)};
}

/* ---- Workers ---------------------------------------------------------------------- */

/* The slot of position i if it is valid and not finished yet, else NULL (workers serialised). */
static struct floem_queue_entry *valid_entry(const floem_sync_t *s, uint64_t i)
{
    if (i < s->valid || i >= __atomic_load_n(&s->reading, __ATOMIC_ACQUIRE))
        return NULL;
    struct floem_queue_entry *e = slot_at(s, i);
    return turn_of(e) == ready_turn(s, i) ? e : NULL;
}

/* Move `valid` past the finished entries at its head, handing them to the manager. */
static void advance_valid(floem_sync_t *s)
{
    uint64_t v = s->valid;
    uint64_t reading = __atomic_load_n(&s->reading, __ATOMIC_ACQUIRE);
    while (v < reading && turn_of(slot_at(s, v)) == ready_turn(s, v) + 1)
        v++;
    __atomic_store_n(&s->valid, v, __ATOMIC_RELEASE);
}

void *access_entry(floem_sync_t *s, uint64_t i)
{
    lock_workers(s);
    struct floem_queue_entry *e = valid_entry(s, i);
    unlock_workers(s);
    return e;
}

void access_done(floem_sync_t *s, uint64_t i)
{
    floem_fault_point();
    lock_workers(s);
    struct floem_queue_entry *e = valid_entry(s, i);
    if (e == NULL)
        fail(s, "access_done on an entry that is not valid");
    finish(s, e);
    advance_valid(s);
    unlock_workers(s);
}

/* The next valid entry for the wrappers, or NULL. */
static struct floem_queue_entry *take_next(floem_sync_t *s)
{
    uint64_t p = next_take(s);
    if (p >= __atomic_load_n(&s->reading, __ATOMIC_ACQUIRE))
        return NULL;
    s->take = p + 1;
    return slot_at(s, p);
}

/* A worker is done with an entry: it becomes modified, ready to be written back. */
static void complete(floem_sync_t *s, struct floem_queue_entry *e)
{
    finish(s, e);
    advance_valid(s);
}

/* ---- Manager ---------------------------------------------------------------------- */

/* Free the slots of completed write-backs, oldest first. */
static void retire_writes(floem_sync_t *s)
{
    while (s->writes_count > 0 && dma_done(&s->writes[s->writes_head].req)) {
        s->writing = s->writes[s->writes_head].end;
        s->writes_head = (s->writes_head + 1) % SYNC_MAX_WRITES;
        s->writes_count--;
    }
}

/* Descriptors per request this layer builds: the engine's limit, and its own array's. */
static unsigned descriptor_budget(void)
{
    uint32_t engine_limit = floem_dma_model()->max_descriptors;
    return engine_limit < SYNC_MAX_DESCRIPTORS ? engine_limit : SYNC_MAX_DESCRIPTORS;
}

/* to_host: positions [reading, end), which the host has released, become valid: their slots
 * (written back already) get the ready turn, and `used` the whole entry until a worker commits
 * less (access_entry users may set it, in wire order, to move less). */
static void validate_released(floem_sync_t *s, uint64_t end)
{
    for (uint64_t p = s->reading; p < end; p++) {
        struct floem_queue_entry *e = slot_at(s, p);
        e->used = floem_wire16(FLOEM_QUEUE_USED_ALL);
        __atomic_store_n(&e->status, floem_wire32(ready_turn(s, p)), __ATOMIC_RELAXED);
    }
    s->invalid = end;
    __atomic_store_n(&s->reading, end, __ATOMIC_RELEASE);
}

/* to_host: make valid what the known release count covers (positions before released + size
 * are free in the host) and the slots allow (before writing + size). */
static void validate_known(floem_sync_t *s)
{
    uint64_t end = s->released + s->size;
    if (end > s->writing + s->size)
        end = s->writing + s->size;
    if (end > s->reading)
        validate_released(s, end);
}

/* The read has completed. to_host: it read the host's release count; what it frees becomes
 * valid, and the first position it does not free is `held`. from_host: the fetched prefix
 * whose used bytes the read covered becomes valid (entries fetched short, because the header
 * seen earlier was older than the entry, are fetched again), the headers it read extend
 * `seen`, and the rest is invalid again. */
static void finish_read(floem_sync_t *s)
{
    s->read_pending = false;
    if (s->dir == FLOEM_SYNC_TO_HOST) {
        uint32_t delta = floem_wire32(s->count_word) - (uint32_t)s->released;
        if (delta > s->modified - s->released)
            fail(s, "the host's release count is ahead of the entries written back");
        s->released += delta;
        __atomic_store_n(&s->held, s->released + s->size + 1, __ATOMIC_RELAXED);
        validate_known(s);      /* publishes `held` with `reading` */
        return;
    }
    uint64_t r = s->reading;
    while (r < s->fetch_end && used_bytes(s, slot_at(s, r)) <= s->fetched[r - s->reading])
        r++;
    uint64_t seen = s->seen;
    while (seen < s->invalid && turn_of(slot_at(s, seen)) == ready_turn(s, seen))
        seen++;
    s->seen = seen;
    s->invalid = r;
    __atomic_store_n(&s->reading, r, __ATOMIC_RELEASE);
}

/* Append a descriptor, or extend the previous one when the bytes follow it on both sides. */
static unsigned add_desc(floem_dma_desc_t *d, unsigned k, void *host, void *local, uint32_t len,
                         bool write)
{
    if (k > 0 && d[k - 1].write == write && (char *)d[k - 1].host + d[k - 1].len == host &&
        (char *)d[k - 1].local + d[k - 1].len == local) {
        d[k - 1].len += len;
        return k;
    }
    d[k] = (floem_dma_desc_t){host, local, len, write};
    return k + 1;
}

/* to_host: make valid what the known release count allows, and read the count again (4 bytes)
 * when the workers would otherwise run out: a batch of slots is free, or nothing is valid. */
static void issue_count_read(floem_sync_t *s)
{
    validate_known(s);
    uint64_t free_slots = s->writing + s->size - s->invalid;
    if (free_slots == 0 ||
        (free_slots < s->batch && s->reading != __atomic_load_n(&s->valid, __ATOMIC_ACQUIRE)))
        return;
    dma_read_async((char *)s->host + FLOEM_QUEUE_RELEASED_COUNT_OFFSET, 4, &s->count_word,
                   &s->read_req);
    s->read_pending = true;
    count(&s->read_requests, 1);
}

/* from_host: one request that fetches the entries seen published but not fetched yet (each
 * from its channel to the end of its used bytes: a later read than the one that saw it
 * published, see above) and reads the 8-byte headers of the entries after them (up to a
 * batch, in the slots free), one descriptor per entry (fetches of entries whose used part
 * reaches their end merge with the next). Issued when there is something to fetch, a batch of
 * headers to read, or the workers have nothing valid left. */
static void issue_fetch_read(floem_sync_t *s)
{
    unsigned budget = descriptor_budget();
    uint64_t fetch = s->seen - s->invalid, limit = s->writing + s->size;
    if (fetch > budget)
        fetch = budget;
    uint64_t see = fetch == s->seen - s->invalid ? limit - s->seen : 0;
    if (see > budget - fetch)
        see = budget - fetch;
    if (see > s->batch)
        see = s->batch;
    uint64_t want = s->batch < budget ? s->batch : budget;
    if (fetch == 0 && (see == 0 || (see < want &&
                                    s->reading != __atomic_load_n(&s->valid, __ATOMIC_ACQUIRE))))
        return;
    floem_dma_desc_t d[SYNC_MAX_DESCRIPTORS];
    unsigned k = 0;
    for (uint64_t i = 0; i < fetch; i++) {
        uint32_t index = (uint32_t)((s->invalid + i) % s->size);
        uint32_t bytes = used_bytes(s, slot(s, index));
        s->fetched[i] = bytes;
        k = add_desc(d, k, host_entry(s, index, 4), (char *)slot(s, index) + 4, 4 + bytes, false);
        if (bytes == s->entry_size - FLOEM_QUEUE_ENTRY_HEADER_BYTES && i + 1 < fetch &&
            index + 1 < s->size)    /* the next fetch can start at its status word, no gap */
            k = add_desc(d, k, host_entry(s, index + 1, 0), slot(s, index + 1), 4, false);
    }
    for (uint64_t i = 0; i < see; i++) {
        uint32_t index = (uint32_t)((s->seen + i) % s->size);
        d[k++] = (floem_dma_desc_t){host_entry(s, index, 0), slot(s, index),
                                    FLOEM_QUEUE_ENTRY_HEADER_BYTES, false};
    }
    dma_submit(d, k, &s->read_req);
    s->read_pending = true;
    s->fetch_end = s->invalid + fetch;
    s->invalid += fetch + see;
    count(&s->read_requests, 1);
}

static void issue_read(floem_sync_t *s)
{
    if (s->dir == FLOEM_SYNC_TO_HOST)
        issue_count_read(s);
    else
        issue_fetch_read(s);
}

/* Write back up to n modified entries from `first` with one request; returns how many.
 * to_host: entry `first` from its channel, each later one from its status word, to the end of
 * its used bytes (runs merge where an entry is used to its end), then `first`'s status word;
 * as many entries as the descriptors allow. from_host: status words, one descriptor each. */
static uint64_t write_back(floem_sync_t *s, uint64_t first, uint64_t n, floem_dma_req_t *req)
{
    uint32_t head = (uint32_t)(first % s->size);
    floem_dma_desc_t d[SYNC_MAX_DESCRIPTORS];
    unsigned k = 0, budget = descriptor_budget();
    uint64_t done = 0;
    if (s->dir == FLOEM_SYNC_TO_HOST) {
        for (; done < n; done++) {
            uint32_t index = (uint32_t)((first + done) % s->size);
            uint32_t from = done == 0 ? 4 : 0;
            uint32_t len = FLOEM_QUEUE_ENTRY_HEADER_BYTES + used_bytes(s, slot(s, index)) - from;
            unsigned before = k;
            k = add_desc(d, k, host_entry(s, index, from), (char *)slot(s, index) + from, len,
                         true);
            if (k == budget) {      /* no room left for the status word: not this one */
                k = before;
                break;
            }
        }
        d[k++] = (floem_dma_desc_t){host_entry(s, head, 0), slot(s, head), 4, true};
    } else {
        for (; done < n && k < budget; done++) {
            uint32_t index = (uint32_t)((first + done) % s->size);
            d[k++] = (floem_dma_desc_t){host_entry(s, index, 0), slot(s, index), 4, true};
        }
    }
    dma_submit(d, k, req);
    count(&s->write_requests, 1);
    return done;
}

/* Write back modified entries: full batches, and a partial one when `force` is set or no
 * entry was finished since the previous round. */
static void issue_writes(floem_sync_t *s, bool force)
{
    uint64_t valid = __atomic_load_n(&s->valid, __ATOMIC_ACQUIRE);
    bool finishing = valid != s->last_valid;
    s->last_valid = valid;
    while (s->modified < valid && s->writes_count < SYNC_MAX_WRITES) {
        uint64_t n = valid - s->modified;
        if (n > s->write_cap) {
            n = s->write_cap;
        } else if (n < s->write_cap) {
            if (finishing && !force)
                return;
            count(&s->flushes, 1);
        }
        uint32_t tail = (s->writes_head + s->writes_count) % SYNC_MAX_WRITES;
        s->modified += write_back(s, s->modified, n, &s->writes[tail].req);
        s->writes[tail].end = s->modified;
        s->writes_count++;
    }
}

/* A sum of the manager's cursors: it grows exactly when a round moves entries. */
static uint64_t progress(const floem_sync_t *s)
{
    return s->writing + s->modified + __atomic_load_n(&s->reading, __ATOMIC_RELAXED) + s->seen;
}

/* A manager round (returns at once if another thread is in one); whether it moved
 * entries. */
static bool manage(floem_sync_t *s)
{
    if (__atomic_exchange_n(&s->manager_lock, 1, __ATOMIC_ACQUIRE))
        return false;
    floem_fault_point();
    uint64_t before = progress(s);
    retire_writes(s);
    if (s->read_pending && dma_done(&s->read_req))
        finish_read(s);
    issue_writes(s, false);
    floem_fault_point();
    if (!s->read_pending)
        issue_read(s);
    bool moved = progress(s) != before;
    if (moved)
        floem_idle_reset();     /* work: the calling thread's idle waits spin again */
    unlock(&s->manager_lock);
    return moved;
}

/* The sync layer's work, never the packet's: floem explore does not count it as a
 * segment's, wherever it runs; a manager core's rounds that move entries are counted as
 * the managers' work. */
void floem_sync_manage(floem_sync_t *s)
{
    floem_thread_manages = 1;
    floem_count_pause();
    bool counting = floem_count_sync_begin();
    floem_count_sync_end(counting, manage(s));
    floem_count_resume();
}

void floem_sync_flush(floem_sync_t *s)
{
    lock(&s->manager_lock);
    if (s->read_pending) {
        dma_wait(&s->read_req);
        finish_read(s);
    }
    for (;;) {
        retire_writes(s);
        issue_writes(s, true);
        if (s->writes_count == 0)
            break;
        dma_wait(&s->writes[s->writes_head].req);
    }
    unlock(&s->manager_lock);
}

#else /* FLOEM_SYNC_BLOCKING: one blocking DMA per step, no prefetch, no batching. */

void floem_sync_cursors(const floem_sync_t *s, floem_sync_cursors_t *out)
{
    *out = (floem_sync_cursors_t){s->take, s->take, s->take, s->take, s->take, s->take};
}

/* Read position i's host status word into its slot (from_host: its 8-byte header), and when
 * the entry is NIC-owned and from_host, then its channel and used bytes (a read issued after
 * the status was seen: see above; a third read when the header seen first was older than the
 * entry and said less); the slot if the entry is NIC-owned, else NULL (workers serialised). A
 * slot whose previous entry a worker still holds is left alone. to_host entries get `used`
 * for the whole entry until a worker commits less. */
static struct floem_queue_entry *fetch(floem_sync_t *s, uint64_t i)
{
    struct floem_queue_entry *e = slot_at(s, i);
    if (i >= s->size && turn_of(e) == ready_turn(s, i - s->size))
        return NULL;
    uint32_t index = (uint32_t)(i % s->size);
    bool from_host = s->dir == FLOEM_SYNC_FROM_HOST;
    dma_read(host_entry(s, index, 0), from_host ? FLOEM_QUEUE_ENTRY_HEADER_BYTES : 4, e);
    count(&s->read_requests, 1);
    if (turn_of(e) != ready_turn(s, i))
        return NULL;
    if (!from_host) {
        e->used = floem_wire16(FLOEM_QUEUE_USED_ALL);
        return e;
    }
    uint32_t fetched = used_bytes(s, e);
    dma_read(host_entry(s, index, 4), 4 + fetched, (char *)e + 4);
    count(&s->read_requests, 1);
    if (used_bytes(s, e) > fetched) {
        dma_read(host_entry(s, index, FLOEM_QUEUE_ENTRY_HEADER_BYTES + fetched),
                 used_bytes(s, e) - fetched, (char *)e + FLOEM_QUEUE_ENTRY_HEADER_BYTES + fetched);
        count(&s->read_requests, 1);
    }
    return e;
}

/* Finish an entry and write it back at once: to_host its channel and used payload then its
 * status word, from_host its status word. */
static void write_through(floem_sync_t *s, struct floem_queue_entry *e)
{
    uint32_t index = (uint32_t)(((uintptr_t)e - (uintptr_t)slot(s, 0)) / s->entry_size);
    finish(s, e);
    floem_dma_desc_t d[2] = {
        {host_entry(s, index, 4), (char *)e + 4, 4 + used_bytes(s, e), true},
        {host_entry(s, index, 0), e, 4, true},
    };
    floem_dma_req_t req;
    if (s->dir == FLOEM_SYNC_TO_HOST)
        dma_submit(d, 2, &req);
    else
        dma_submit(&d[1], 1, &req);
    dma_wait(&req);
    count(&s->write_requests, 1);
}

void *access_entry(floem_sync_t *s, uint64_t i)
{
    lock_workers(s);
    struct floem_queue_entry *e = fetch(s, i);
    unlock_workers(s);
    return e;
}

void access_done(floem_sync_t *s, uint64_t i)
{
    lock_workers(s);
    struct floem_queue_entry *e = slot_at(s, i);
    if (turn_of(e) != ready_turn(s, i))
        fail(s, "access_done on an entry that is not valid");
    write_through(s, e);
    unlock_workers(s);
}

/* The wrappers' next entry if the host has made it NIC-owned, else NULL. */
static struct floem_queue_entry *take_next(floem_sync_t *s)
{
    struct floem_queue_entry *e = fetch(s, s->take);
    if (e != NULL)
        s->take++;
    return e;
}

/* A worker is done with an entry: write it back at once. */
static void complete(floem_sync_t *s, struct floem_queue_entry *e)
{
    write_through(s, e);
}

/* Nothing is ever pending: every step above finished its DMA before returning. */
void floem_sync_manage(floem_sync_t *s)
{
    (void)s;
}

void floem_sync_flush(floem_sync_t *s)
{
    (void)s;
}

#endif

/* The wrappers' next entry; when there is none, the worker runs a manager round itself (it
 * returns at once if a manager is in one) and looks again: a worker that waits does not wait
 * for a manager thread to be scheduled, so manager threads can back off (sleep) when idle. */
static struct floem_queue_entry *take_or_manage(floem_sync_t *s)
{
    lock_workers(s);
    struct floem_queue_entry *e = take_next(s);
    unlock_workers(s);
#ifndef FLOEM_SYNC_BLOCKING
    if (e == NULL) {
        floem_sync_manage(s);
        lock_workers(s);
        e = take_next(s);
        unlock_workers(s);
    }
#endif
    return e;
}

void *floem_sync_enq_reserve(floem_sync_t *s)
{
    check_dir(s, FLOEM_SYNC_TO_HOST);
    struct floem_queue_entry *e = take_or_manage(s);
    if (e == NULL)
        return NULL;
    floem_fault_point();
    return e + 1;
}

/* Handing a finished entry to the sync layer is its work, not the packet's: floem explore
 * does not count it (how far `valid` advances depends on the other threads' timing). */
void floem_sync_enq_commit(floem_sync_t *s, void *payload, uint16_t channel, size_t bytes)
{
    floem_count_pause();
    struct floem_queue_entry *e = entry_of(s, payload);
    floem_fault_point();
    lock_workers(s);
    e->channel = floem_wire16(channel);
    e->used = floem_wire16(floem_queue_used(bytes));
    complete(s, e);
    unlock_workers(s);
    floem_count_resume();
}

void *floem_sync_deq_acquire(floem_sync_t *s, uint16_t *channel)
{
    check_dir(s, FLOEM_SYNC_FROM_HOST);
    struct floem_queue_entry *e = take_or_manage(s);
    if (e == NULL)
        return NULL;
    floem_fault_point();
    if (channel != NULL)
        *channel = floem_wire16(e->channel);
    return e + 1;
}

void floem_sync_deq_release(floem_sync_t *s, void *payload)
{
    floem_count_pause();
    struct floem_queue_entry *e = entry_of(s, payload);
    floem_fault_point();
    lock_workers(s);
    complete(s, e);
    unlock_workers(s);
    floem_count_resume();
}

void floem_sync_report(FILE *out, floem_sync_t **const *tables, const int *counts)
{
    for (int j = 0; tables[j] != NULL; j++)
        for (int i = 0; i < counts[j]; i++) {
            floem_sync_stats_t s;
            floem_sync_stats(tables[j][i], &s);
            fprintf(out, "floem: nic sync shadow %d.%d: entries %llu, read requests %llu, "
                         "write requests %llu, flushes %llu, dropped %llu, entry bytes %u, "
                         "moved %llu\n",
                    j, i, (unsigned long long)s.entries, (unsigned long long)s.read_requests,
                    (unsigned long long)s.write_requests, (unsigned long long)s.flushes,
                    (unsigned long long)s.dropped, (unsigned)s.entry_size,
                    (unsigned long long)s.moved);
            floem_sync_cursors_t c;
            floem_sync_cursors(tables[j][i], &c);
            fprintf(out, "floem: nic sync shadow %d.%d: positions %s: written back %llu, "
                         "finished %llu, handed out %llu, fetched %llu, being read %llu\n", j, i,
                    tables[j][i]->dir == FLOEM_SYNC_TO_HOST ? "to host" : "from host",
                    (unsigned long long)c.writing, (unsigned long long)c.valid,
                    (unsigned long long)c.taken, (unsigned long long)c.reading,
                    (unsigned long long)c.invalid);
        }
}
