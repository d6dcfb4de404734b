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
 * completed, scan the fetched status words and advance `reading` over the ready
 * prefix, giving the unready tail back to invalid (`invalid` = `reading`) to be read
 * again; write back modified entries, a full batch at a time or a partial one when no
 * entry was finished since the previous round; issue the next read (a full batch, or
 * whatever is invalid when the workers have nothing valid left).
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
 * a batch and sees the next. (to_host reads need only the status words: the workers
 * overwrite the rest.) The blocking variant reads a from_host entry's status word, then,
 * when it is published, the rest of the entry.
 *
 * Fault points (floem_fault_point, FLOEM_FAULTS stall=...): the worker wrappers and
 * access_done while the worker holds an entry, and a manager round after taking the
 * manager lock and between its write-backs and its read.
 *
 * Write-back of to_host entries [a, b) is one request: the bytes of the run from
 * entry a's channel to the end of entry b - 1 (two descriptors when the run wraps),
 * then entry a's status word. The run carries the status words of a + 1 .. b - 1
 * already published; that is safe because a host consumer only looks at an entry
 * after the one before it, and entry a's status, stored by the last descriptor,
 * publishes the whole run. Only the order between descriptors matters, as with real
 * DMA hardware. Write-back of from_host entries is their status words only, one
 * descriptor each, so a request holds at most max_descriptors of them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/sync.h"

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
    /* Manager side. */
    _Alignas(64) int manager_lock;
    uint64_t writing, modified, reading, invalid;
    uint64_t seen;                   /* from_host: entries before it were seen published */
    uint64_t held;                   /* to_host: 1 + the position the latest read found the
                                        host still holding (0: none); workers read it */
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
    unsigned spins = 0;
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED))
            if (++spins % 128 == 0)
                sched_yield();
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

/* The read has completed: its ready prefix becomes valid (from_host: as far as an earlier
 * read saw the entries published, see above), the rest invalid again. */
static void finish_read(floem_sync_t *s)
{
    uint64_t r = s->reading;
    uint64_t trusted = s->dir == FLOEM_SYNC_TO_HOST ? s->invalid : s->seen;
    while (r < s->invalid && r < trusted && turn_of(slot_at(s, r)) == ready_turn(s, r))
        r++;
    if (s->dir == FLOEM_SYNC_FROM_HOST) {
        uint64_t seen = r;
        while (seen < s->invalid && turn_of(slot_at(s, seen)) == ready_turn(s, seen))
            seen++;
        if (seen > s->seen)
            s->seen = seen;
    } else if (r < s->invalid) {
        __atomic_store_n(&s->held, r + 1, __ATOMIC_RELAXED);     /* published with reading */
    }
    s->invalid = r;
    s->read_pending = false;
    __atomic_store_n(&s->reading, r, __ATOMIC_RELEASE);
}

/* Whether positions [first, first + n) cross the ring's end; if so and the request cannot
 * take the extra descriptor, shorten n to end at the ring's end. */
static bool wraps(const floem_sync_t *s, uint64_t first, uint64_t *n, unsigned descs_without)
{
    uint64_t to_end = s->size - first % s->size;
    if (*n <= to_end)
        return false;
    if (descs_without + 1 <= floem_dma_model()->max_descriptors)
        return true;
    *n = to_end;
    return false;
}

/* Fetch the next batch into the invalid slots, with one request (from_host: and the entries
 * the previous read saw published, which this one fetches). */
static void issue_read(floem_sync_t *s)
{
    /* from_host: the entries seen published but not fetched yet, and a batch beyond them. */
    uint64_t want = s->batch + (s->seen > s->invalid ? s->seen - s->invalid : 0);
    uint64_t n = s->writing + s->size - s->invalid;
    if (n > want)
        n = want;
    if (n == 0 || (n < s->batch && s->reading != __atomic_load_n(&s->valid, __ATOMIC_ACQUIRE)))
        return;
    uint32_t first = (uint32_t)(s->invalid % s->size);
    bool wrap = wraps(s, s->invalid, &n, 1);
    uint32_t run = wrap ? s->size - first : (uint32_t)n;
    floem_dma_desc_t d[2] = {
        {host_entry(s, first, 0), slot(s, first), run * s->entry_size, false},
        {host_entry(s, 0, 0), slot(s, 0), (uint32_t)(n - run) * s->entry_size, false},
    };
    dma_submit(d, wrap ? 2 : 1, &s->read_req);
    s->read_pending = true;
    s->invalid += n;
    count(&s->read_requests, 1);
}

/* Write back up to n modified entries from `first` with one request; returns how many. */
static uint64_t write_back(floem_sync_t *s, uint64_t first, uint64_t n, floem_dma_req_t *req)
{
    uint32_t head = (uint32_t)(first % s->size);
    floem_dma_desc_t d[SYNC_MAX_DESCRIPTORS];
    unsigned k = 0;
    if (s->dir == FLOEM_SYNC_TO_HOST) {
        bool wrap = wraps(s, first, &n, 2);
        uint32_t run = wrap ? s->size - head : (uint32_t)n;
        d[k++] = (floem_dma_desc_t){host_entry(s, head, 4), (char *)slot(s, head) + 4,
                                    run * s->entry_size - 4, true};
        if (wrap)
            d[k++] = (floem_dma_desc_t){host_entry(s, 0, 0), slot(s, 0),
                                        (uint32_t)(n - run) * s->entry_size, true};
        d[k++] = (floem_dma_desc_t){host_entry(s, head, 0), slot(s, head), 4, true};
    } else {
        for (uint64_t p = first; p < first + n; p++) {
            uint32_t index = (uint32_t)(p % s->size);
            d[k++] = (floem_dma_desc_t){host_entry(s, index, 0), slot(s, index), 4, true};
        }
    }
    dma_submit(d, k, req);
    count(&s->write_requests, 1);
    return n;
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

void floem_sync_manage(floem_sync_t *s)
{
    if (__atomic_exchange_n(&s->manager_lock, 1, __ATOMIC_ACQUIRE))
        return;
    floem_fault_point();
    retire_writes(s);
    if (s->read_pending && dma_done(&s->read_req))
        finish_read(s);
    issue_writes(s, false);
    floem_fault_point();
    if (!s->read_pending)
        issue_read(s);
    unlock(&s->manager_lock);
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

/* Read position i's host status word into its slot, and when the entry is NIC-owned and
 * from_host, then the rest of it (a read issued after the status was seen: see above); the
 * slot if the entry is NIC-owned, else NULL (workers serialised). A slot whose previous entry
 * a worker still holds is left alone. */
static struct floem_queue_entry *fetch(floem_sync_t *s, uint64_t i)
{
    struct floem_queue_entry *e = slot_at(s, i);
    if (i >= s->size && turn_of(e) == ready_turn(s, i - s->size))
        return NULL;
    uint32_t index = (uint32_t)(i % s->size);
    dma_read(host_entry(s, index, 0), 4, e);
    count(&s->read_requests, 1);
    if (turn_of(e) != ready_turn(s, i))
        return NULL;
    if (s->dir == FLOEM_SYNC_FROM_HOST) {
        dma_read(host_entry(s, index, 4), s->entry_size - 4, (char *)e + 4);
        count(&s->read_requests, 1);
    }
    return e;
}

/* Finish an entry and write it back at once: to_host its channel and payload then its
 * status word, from_host its status word. */
static void write_through(floem_sync_t *s, struct floem_queue_entry *e)
{
    uint32_t index = (uint32_t)(((uintptr_t)e - (uintptr_t)slot(s, 0)) / s->entry_size);
    finish(s, e);
    floem_dma_desc_t d[2] = {
        {host_entry(s, index, 4), (char *)e + 4, s->entry_size - 4, true},
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

void *floem_sync_enq_reserve(floem_sync_t *s)
{
    check_dir(s, FLOEM_SYNC_TO_HOST);
    lock_workers(s);
    struct floem_queue_entry *e = take_next(s);
    unlock_workers(s);
    if (e == NULL)
        return NULL;
    floem_fault_point();
    return e + 1;
}

void floem_sync_enq_commit(floem_sync_t *s, void *payload, uint16_t channel)
{
    struct floem_queue_entry *e = entry_of(s, payload);
    floem_fault_point();
    lock_workers(s);
    e->channel = floem_wire16(channel);
    complete(s, e);
    unlock_workers(s);
}

void *floem_sync_deq_acquire(floem_sync_t *s, uint16_t *channel)
{
    check_dir(s, FLOEM_SYNC_FROM_HOST);
    lock_workers(s);
    struct floem_queue_entry *e = take_next(s);
    unlock_workers(s);
    if (e == NULL)
        return NULL;
    floem_fault_point();
    if (channel != NULL)
        *channel = floem_wire16(e->channel);
    return e + 1;
}

void floem_sync_deq_release(floem_sync_t *s, void *payload)
{
    struct floem_queue_entry *e = entry_of(s, payload);
    floem_fault_point();
    lock_workers(s);
    complete(s, e);
    unlock_workers(s);
}

void floem_sync_report(FILE *out, floem_sync_t **const *tables, const int *counts)
{
    for (int j = 0; tables[j] != NULL; j++)
        for (int i = 0; i < counts[j]; i++) {
            floem_sync_stats_t s;
            floem_sync_stats(tables[j][i], &s);
            fprintf(out, "floem: nic sync shadow %d.%d: entries %llu, read requests %llu, "
                         "write requests %llu, flushes %llu, dropped %llu, entry bytes %u\n",
                    j, i, (unsigned long long)s.entries, (unsigned long long)s.read_requests,
                    (unsigned long long)s.write_requests, (unsigned long long)s.flushes,
                    (unsigned long long)s.dropped, (unsigned)s.entry_size);
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
