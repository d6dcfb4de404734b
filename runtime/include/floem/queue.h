/* Floem host queues: fixed-size entries in one block of (possibly shared) memory.
 *
 * One physical queue instance is a 384-byte header (FLOEM_QUEUE_HEADER_BYTES) followed by
 * `size` entries of `entry_size` bytes, in one contiguous 64-byte-aligned block with no
 * pointers in it, so several processes may map it at different addresses.
 *
 *   bytes   0- 63  configuration: size, entry_size, layout, batch (written by init), and
 *                  track_releases (0, or set once by the NIC's sync layer, below)
 *   bytes  64-127  producer side: enq_cursor, enqueued, dropped, full_spins; the ring's
 *                  room, enq_index, listed
 *   bytes 128-191  the ring's published (the producer's, read by the consumer)
 *   bytes 192-255  consumer side: deq_cursor, dequeued, released; the ring's ready,
 *                  releases, deq_index
 *   bytes 256-319  the ring's freed (the consumer's, read by the producer)
 *   bytes 320-383  guard line (keeps `freed` and entry 0 out of one 128-byte pair)
 *   bytes 384-     entry[0] .. entry[size-1], each `entry_size` bytes (32 or a multiple of 64)
 *
 * An instance has one of two layouts, chosen per queue by the compiler (plan_code) and
 * recorded by init: its entries' turns (floem_queue_init and the floem_enq_* / floem_deq_*
 * calls, below), for queues the NIC reaches (the sync layer moves each entry with its turn
 * by DMA) and for several producers or consumers; or the ring (floem_ring_init and the
 * floem_ring_* calls, at the end of this file), for one producer and one consumer thread
 * on the host, which moves each entry's line once per lap: its turns, written by both
 * sides, move it twice.
 *
 * Every entry starts with an 8-byte header: a 32-bit status word (the turn), the
 * 16-bit channel and the 16-bit `used`: how much of the payload the producer wrote, in
 * 8-byte units rounded up (FLOEM_QUEUE_USED_ALL, 0xffff, when that is 0xffff units or
 * more: read it as the whole entry); the payload follows at offset 8 (8-byte aligned).
 * Host threads ignore `used`; the NIC's sync layer moves only the used part of an entry
 * across PCIe (floem/sync.h), so a 2048-byte entry carrying 64 bytes costs about 72.
 * Ownership travels in the status word, next to the content: entry i on lap L
 * (the L-th time round the ring) is free for its producer while status == 2L and
 * holds a published entry while status == 2L + 1; releasing it makes it 2L + 2, free
 * for lap L + 1. All arithmetic is modulo 2^32, so zero-filled memory is an empty
 * queue on lap 0. Header words are in host byte order.
 *
 * Cursors hold (lap << 32) | index of the next entry to take. A single producer or
 * consumer (`multi` false) keeps its cursor as a private variable that happens to
 * live in the header, on a line only its side touches: the fast path never reads a
 * counter written by the other side, only the entry's status word. With `multi`
 * true the side's cursor is shared by several threads and advanced with a CAS after
 * checking the entry's turn (Vyukov's bounded queue); the other side is unaffected,
 * so each side picks its own variant. Neither variant divides: the index wraps to 0
 * by comparison with `size`, which may be any value >= 1.
 *
 * Lifecycle: the memory must be zero-filled before first use; floem_queue_init
 * only records the configuration and is idempotent: any process sharing the
 * instance may call it, at any time, with the same arguments (it never touches
 * cursors, counters or entries, and aborts if the instance was initialised with
 * different ones).
 *
 * Producer: p = floem_enq_reserve(q, multi) (NULL when full), write the payload,
 * floem_enq_commit(q, p, channel, bytes) (bytes: the payload bytes written, from p).
 * Consumer: p = floem_deq_acquire(q, multi, &channel) (NULL when empty), use the payload,
 * floem_deq_release(q, p). Entries come out in
 * reservation order; a reserved entry that is not committed yet holds back the ones
 * reserved after it. A consumer may hold its entry while it works; each entry has
 * its own status word, so entries held by several consumers may be released in any
 * order, and a single producer may hold several reservations.
 *
 * Release tracking (queues the NIC produces into through its sync layer): when
 * track_releases is set, floem_deq_release also advances `released`, a pair of 32-bit
 * words {count, index}: every position before `count` (positions counted from 0, modulo
 * 2^32) is released, and `index` is its place in the ring. Consumers advance it with a
 * compare-and-swap over the released entries at its head (each checks the entry's status
 * word, so releases out of order by several consumers are safe: the cursor stops at the
 * first entry still held). The NIC learns which entries it may fill again by reading the
 * 4-byte `count` (one small DMA read per batch) instead of reading entries. The sync
 * layer sets track_releases with a DMA write when it sets up its shadow, before any entry
 * is published; queues between host threads never pay for it (a load and a branch).
 *
 * Counters (floem_queue_stats): enqueued counts reservations (each is committed),
 * dequeued acquisitions, dropped the calls to floem_enq_drop (an atomic add, from any
 * thread), full_spins the reservations that found the queue full. A single side
 * updates its counters with plain relaxed stores on its own line.
 */
#ifndef FLOEM_QUEUE_H
#define FLOEM_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "floem/runtime.h"

#define FLOEM_QUEUE_HEADER_BYTES 384
#define FLOEM_QUEUE_ENTRY_HEADER_BYTES 8
/* A single consumer prefetches the entry this many places ahead of the one it takes
 * (in queues of more than twice as many entries): when the consumer lags, that entry
 * is already written and waits in the producer's cache, and fetching it early hides
 * the transfer (benchmarks/queue: +10-20% with bursts; see docs/benchmarks.md). */
#define FLOEM_QUEUE_PREFETCH 64
/* An entry's `used` when its producer wrote 0xffff or more 8-byte units: all of the entry. */
#define FLOEM_QUEUE_USED_ALL 0xffffu
/* An instance's layout (`layout` in its header). */
#define FLOEM_QUEUE_TURNS 0u
#define FLOEM_QUEUE_RING 1u

typedef struct floem_queue floem_queue_t;
typedef struct { uint64_t enqueued, dequeued, dropped, full_spins; } floem_queue_stats_t;

/* The header at the start of every entry; the payload follows it. */
struct floem_queue_entry {
    uint32_t status;  /* 2L: free for the producer of lap L; 2L + 1: published on lap L */
    uint16_t channel;
    uint16_t used;    /* payload bytes written, in 8-byte units rounded up (see above) */
};

/* The released cursor of a queue that tracks releases: every position before `count`
 * (modulo 2^32) is released; `index` is count's place in the ring. */
struct floem_queue_released {
    uint32_t count;
    uint32_t index;
};

struct floem_queue {
    _Alignas(64) uint32_t size;      /* entries */
    uint32_t entry_size;             /* bytes per entry, header included */
    uint32_t track_releases;         /* nonzero: releases advance `released` (see above) */
    uint32_t layout;                 /* FLOEM_QUEUE_TURNS or FLOEM_QUEUE_RING (init writes it) */
    uint32_t batch;                  /* ring: entries published or freed at once (init writes it) */
    _Alignas(64) uint64_t enq_cursor;   /* ring: the next position to reserve */
    uint64_t enqueued, dropped, full_spins;
    uint64_t room;                   /* ring, the producer's: positions before it are free */
    uint32_t enq_index;              /* ring, the producer's: enq_cursor's place in the ring */
    uint32_t listed;                 /* ring, the producer's: in its thread's pending list */
    /* ring: every position before it is published (the producer writes it once a batch, on a
     * line of its own: the consumer polls it, and no store of each entry's moves it) */
    _Alignas(64) uint64_t published;
    _Alignas(64) uint64_t deq_cursor;   /* ring: the next position to acquire */
    uint64_t dequeued;
    uint64_t released;               /* a struct floem_queue_released, compared-and-swapped whole */
    uint64_t ready;                  /* ring, the consumer's: positions before it are published */
    uint64_t releases;               /* ring, the consumer's: positions before it are released */
    uint32_t deq_index;              /* ring, the consumer's: deq_cursor's place in the ring */
    /* ring: every position before it is released (the consumer's, once a batch, alone on
     * its line as `published` is) */
    _Alignas(64) uint64_t freed;
    _Alignas(64) uint8_t guard[64];
};

_Static_assert(sizeof(struct floem_queue) == FLOEM_QUEUE_HEADER_BYTES, "queue header layout");
_Static_assert(sizeof(struct floem_queue_entry) == FLOEM_QUEUE_ENTRY_HEADER_BYTES,
               "entry header layout");
_Static_assert(sizeof(struct floem_queue_released) == sizeof(uint64_t), "released cursor layout");
/* Where the NIC finds the two words it reads and writes in a queue's header. */
#define FLOEM_QUEUE_TRACK_RELEASES_OFFSET 8
#define FLOEM_QUEUE_RELEASED_COUNT_OFFSET 208
_Static_assert(offsetof(struct floem_queue, track_releases) == FLOEM_QUEUE_TRACK_RELEASES_OFFSET,
               "track_releases offset");
_Static_assert(offsetof(struct floem_queue, released) == FLOEM_QUEUE_RELEASED_COUNT_OFFSET &&
               offsetof(struct floem_queue_released, count) == 0, "released count offset");

/* Bytes to reserve for one instance (a multiple of 64). */
size_t floem_queue_bytes(uint32_t size, uint32_t entry_size);
/* Entry size for a payload: 8-byte header + payload, rounded to 32 (if <= 32) or to a
 * multiple of 64. */
uint32_t floem_queue_entry_size(size_t payload);
/* Record the configuration of a zero-filled (or already initialised) instance; see above. */
void floem_queue_init(floem_queue_t *q, uint32_t size, uint32_t entry_size);
/* The same for an instance of the ring layout. */
void floem_ring_init(floem_queue_t *q, uint32_t size, uint32_t entry_size);
/* A snapshot of the instance's counters. */
void floem_queue_stats(const floem_queue_t *q, floem_queue_stats_t *out);
/* One line of counters per instance: "floem: queue NAME[i] (process P): enqueued ...". */
void floem_queue_report(FILE *out, const char *name, const char *process,
                        floem_queue_t *const *instances, int count);

/* Names ending in '_' are internal to this header. */

static inline uint32_t floem_queue_size_(const floem_queue_t *q)
{
    return __atomic_load_n(&q->size, __ATOMIC_RELAXED);
}

/* The entry at the cursor's index. */
static inline struct floem_queue_entry *floem_queue_entry_(floem_queue_t *q, uint64_t cursor)
{
    uint32_t entry_size = __atomic_load_n(&q->entry_size, __ATOMIC_RELAXED);
    return (struct floem_queue_entry *)((char *)q + FLOEM_QUEUE_HEADER_BYTES +
                                        (size_t)(uint32_t)cursor * entry_size);
}

/* The cursor after `cursor`: next index, or index 0 of the next lap. */
static inline uint64_t floem_queue_next_(uint64_t cursor, uint32_t size)
{
    return (uint32_t)cursor + 1 == size ? (cursor | 0xffffffffu) + 1 : cursor + 1;
}

/* The cursor `distance` (< size) places after `cursor`. */
static inline uint64_t floem_queue_ahead_(uint64_t cursor, uint32_t size, uint32_t distance)
{
    uint32_t index = (uint32_t)cursor + distance;
    return index >= size ? (cursor | 0xffffffffu) + 1 + (index - size) : cursor + distance;
}

/* The status word of the cursor's entry while it is free for its producer. */
static inline uint32_t floem_queue_free_turn_(uint64_t cursor)
{
    return (uint32_t)(cursor >> 32) * 2u;
}

/* Add one to a counter only the calling side writes (a plain add; floem_queue_stats reads it). */
static inline void floem_queue_count_private_(uint64_t *counter)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static inline void floem_queue_count_shared_(uint64_t *counter)
{
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* Claim the entry under the shared cursor whose status is `turn(cursor) + offset`;
 * NULL when the entry at the cursor is behind that turn (full or empty). The cursor is
 * advanced with release and read with acquire: a thread that claims entry i + 1 after
 * another claimed i has seen what that one saw of i's status word. That matters when a
 * writer publishes a run with one store, i's status, after the rest of the run, as the
 * NIC's sync layer does (floem/sync.h): i + 1's own status word may be stored before its
 * payload, and only i's status orders them (x86 gives this for free; ThreadSanitizer and
 * weaker CPUs need the orderings). */
static inline struct floem_queue_entry *floem_queue_claim_shared_(floem_queue_t *q,
                                                                  uint64_t *shared, uint32_t offset)
{
    uint32_t size = floem_queue_size_(q);
    uint64_t cursor = __atomic_load_n(shared, __ATOMIC_ACQUIRE);
    for (;;) {
        struct floem_queue_entry *e = floem_queue_entry_(q, cursor);
        uint32_t status = __atomic_load_n(&e->status, __ATOMIC_ACQUIRE);
        int32_t lead = (int32_t)(status - (floem_queue_free_turn_(cursor) + offset));
        if (lead == 0) {
            if (__atomic_compare_exchange_n(shared, &cursor, floem_queue_next_(cursor, size), true,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return e;
        } else if (lead < 0) {
            return NULL;
        } else {
            cursor = __atomic_load_n(shared, __ATOMIC_ACQUIRE);
        }
    }
}

/* Payload of a free entry, now owned by the caller, or NULL when the queue is full
 * (counted in full_spins). `multi`: several threads produce into this instance. */
static inline void *floem_enq_reserve(floem_queue_t *q, bool multi)
{
    struct floem_queue_entry *e;
    if (multi) {
        e = floem_queue_claim_shared_(q, &q->enq_cursor, 0);
        if (e == NULL) {
            floem_queue_count_shared_(&q->full_spins);
            return NULL;
        }
        floem_queue_count_shared_(&q->enqueued);
        return e + 1;
    }
    uint64_t cursor = q->enq_cursor;
    e = floem_queue_entry_(q, cursor);
    if (__atomic_load_n(&e->status, __ATOMIC_ACQUIRE) != floem_queue_free_turn_(cursor)) {
        floem_queue_count_private_(&q->full_spins);
        return NULL;
    }
    q->enq_cursor = floem_queue_next_(cursor, floem_queue_size_(q));
    floem_queue_count_private_(&q->enqueued);
    return e + 1;
}

/* The `used` header field for `bytes` payload bytes written. */
static inline uint16_t floem_queue_used(size_t bytes)
{
    size_t units = (bytes + 7) / 8;
    return units >= FLOEM_QUEUE_USED_ALL ? (uint16_t)FLOEM_QUEUE_USED_ALL : (uint16_t)units;
}

/* Publish a reserved entry on `channel`, `bytes` of whose payload the producer wrote; the
 * consumer sees entries in reservation order. The header's words are stored atomically
 * (relaxed: plain stores on every target): a NIC's DMA may read a header it does not own
 * yet, as the sync layer reads ahead, and discards what it read once it sees the status. */
static inline void floem_enq_commit(floem_queue_t *q, void *payload, uint16_t channel,
                                    size_t bytes)
{
    (void)q;
    struct floem_queue_entry *e = (struct floem_queue_entry *)payload - 1;
    __atomic_store_n(&e->channel, channel, __ATOMIC_RELAXED);
    __atomic_store_n(&e->used, floem_queue_used(bytes), __ATOMIC_RELAXED);
    __atomic_store_n(&e->status, __atomic_load_n(&e->status, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELEASE);
}

/* Count an entry dropped instead of enqueued (lossy enqueue on full, bad instance id). */
static inline void floem_enq_drop(floem_queue_t *q)
{
    floem_queue_count_shared_(&q->dropped);
}

/* Payload of the oldest published entry, now owned by the caller, or NULL when there
 * is none; stores its channel in *channel unless channel is NULL. `multi`: several
 * threads consume from this instance. */
static inline void *floem_deq_acquire(floem_queue_t *q, bool multi, uint16_t *channel)
{
    struct floem_queue_entry *e;
    if (multi) {
        e = floem_queue_claim_shared_(q, &q->deq_cursor, 1);
        if (e == NULL)
            return NULL;
        floem_queue_count_shared_(&q->dequeued);
    } else {
        uint64_t cursor = q->deq_cursor;
        e = floem_queue_entry_(q, cursor);
        if (__atomic_load_n(&e->status, __ATOMIC_ACQUIRE) != floem_queue_free_turn_(cursor) + 1)
            return NULL;
        uint32_t size = floem_queue_size_(q);
        q->deq_cursor = floem_queue_next_(cursor, size);
        if (size > 2 * FLOEM_QUEUE_PREFETCH)
            __builtin_prefetch(
                floem_queue_entry_(q, floem_queue_ahead_(cursor, size, FLOEM_QUEUE_PREFETCH)));
        floem_queue_count_private_(&q->dequeued);
    }
    if (channel != NULL)
        *channel = e->channel;
    return e + 1;
}

/* Advance `released` over the released entries at its head (release tracking, above). The
 * entry at position `count` is released on its lap L iff its status is 2L + 2, i.e. iff the
 * status is even and (status / 2 - 1) * size + index == count (mod 2^32): a status of 2L
 * (free, not yet produced on lap L) gives count - size there. */
static inline void floem_queue_advance_released_(floem_queue_t *q)
{
    uint32_t size = floem_queue_size_(q);
    uint64_t word = __atomic_load_n(&q->released, __ATOMIC_ACQUIRE);
    for (;;) {
        struct floem_queue_released r;
        __builtin_memcpy(&r, &word, sizeof r);
        uint64_t cursor = r.index;      /* lap 0: only the index picks the entry */
        uint32_t status = __atomic_load_n(&floem_queue_entry_(q, cursor)->status, __ATOMIC_ACQUIRE);
        if ((status & 1) != 0 || (status / 2 - 1) * size + r.index != r.count)
            return;
        struct floem_queue_released next = {r.count + 1, r.index + 1 == size ? 0 : r.index + 1};
        uint64_t next_word;
        __builtin_memcpy(&next_word, &next, sizeof next_word);
        if (__atomic_compare_exchange_n(&q->released, &word, next_word, false, __ATOMIC_RELEASE,
                                        __ATOMIC_ACQUIRE))
            word = next_word;
    }
}

/* Give an acquired entry back to the producers (it becomes free for the next lap). */
static inline void floem_deq_release(floem_queue_t *q, void *payload)
{
    struct floem_queue_entry *e = (struct floem_queue_entry *)payload - 1;
    __atomic_store_n(&e->status, __atomic_load_n(&e->status, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELEASE);
    if (__builtin_expect(__atomic_load_n(&q->track_releases, __ATOMIC_RELAXED) != 0, 0)) {
        floem_count_pause();            /* the sync layer's bookkeeping, not the packet's */
        floem_queue_advance_released_(q);
        floem_count_resume();
    }
}

/* The ring layout: one producer thread and one consumer thread, both on the host.
 *
 * The entries have the same header (channel and used; the status word is left alone), but
 * who owns an entry follows from two positions, each on its side's line: `published`
 * (the producer's: every position before it holds a committed entry) and `freed` (the
 * consumer's: every position before it was released). Each side keeps the other's last
 * value it read (`room` = freed + size, `ready` = published) and reads the other's line
 * again only when that runs out, so a line crosses between the cores once per batch, not
 * once per entry, and the consumer never writes into an entry. Positions are 64-bit counts
 * (they never wrap), `enq_index` and `deq_index` their places in the ring (no division).
 *
 * A producer publishes its commits `batch` at a time (a quarter of the ring, at most
 * FLOEM_QUEUE_RING_BATCH), and whatever it holds back when its thread's turn ends
 * (floem_queue_flush: a generated thread calls it after each turn, a callable segment when
 * it returns, a thread waiting for room before it waits) or when it finds the ring full.
 * A consumer frees its releases `batch` at a time, and all it holds back when it finds the
 * ring empty. So a lossy producer may find a ring full that holds up to batch - 1 entries
 * released but not yet freed. The producer commits each reservation before the next, and
 * the consumer releases its entries in the order it acquired them (what generated code
 * does). Counters: enqueued and dequeued are the positions; dropped and full_spins as above.
 */

/* A ring's batch: entries a producer publishes at once (at the latest when its thread's turn
 * ends: floem_queue_flush) and a consumer frees at once (at the latest when it finds the
 * instance empty): a quarter of its size, at most FLOEM_QUEUE_RING_BATCH. */
#define FLOEM_QUEUE_RING_BATCH 32
/* Instances one thread may have unpublished entries in at once; a commit to one more
 * publishes at once. */
#define FLOEM_QUEUE_PENDING 16

/* The calling thread's ring instances with committed entries not yet published. */
struct floem_queue_pending {
    unsigned count;
    floem_queue_t *instances[FLOEM_QUEUE_PENDING];
};
extern _Thread_local struct floem_queue_pending floem_queue_pending_;

/* Publish every entry the calling thread committed to ring instances (out of line). */
void floem_queue_flush_pending_(void);

/* Publish the entries the calling thread committed to ring instances but has not published
 * yet: the end of a thread's turn (floem_iteration_end), a wait for room (floem_full_wait),
 * the return of a callable segment. Cheap when there are none. */
static inline void floem_queue_flush(void)
{
    if (floem_queue_pending_.count != 0)
        floem_queue_flush_pending_();
}

/* Make every committed entry of a ring instance visible to its consumer. */
static inline void floem_ring_publish_(floem_queue_t *q)
{
    uint64_t end = __atomic_load_n(&q->enq_cursor, __ATOMIC_RELAXED);
    if (__atomic_load_n(&q->published, __ATOMIC_RELAXED) != end)
        __atomic_store_n(&q->published, end, __ATOMIC_RELEASE);
}

/* Make every released entry of a ring instance free for its producer. */
static inline void floem_ring_free_(floem_queue_t *q)
{
    uint64_t end = q->releases;
    if (__atomic_load_n(&q->freed, __ATOMIC_RELAXED) != end)
        __atomic_store_n(&q->freed, end, __ATOMIC_RELEASE);
}

/* Remember that the calling thread has committed entries of ring instance `q` to publish at
 * its next floem_queue_flush (at once when its list is full). */
static inline void floem_ring_pend_(floem_queue_t *q)
{
    struct floem_queue_pending *p = &floem_queue_pending_;
    if (p->count == FLOEM_QUEUE_PENDING) {
        floem_ring_publish_(q);
    } else {
        p->instances[p->count++] = q;
        q->listed = 1;
    }
}

/* The next place in the ring. */
static inline uint32_t floem_ring_next_(uint32_t index, uint32_t size)
{
    return index + 1 == size ? 0 : index + 1;
}

/* Payload of a free entry of a ring instance, or NULL when it is full (counted in
 * full_spins; the producer's unpublished entries are published first, so that its consumer
 * can make room). The previous reservation must have been committed. */
static inline void *floem_ring_enq_reserve(floem_queue_t *q)
{
    uint64_t cursor = __atomic_load_n(&q->enq_cursor, __ATOMIC_RELAXED);
    if (cursor == q->room) {
        q->room = __atomic_load_n(&q->freed, __ATOMIC_ACQUIRE) + floem_queue_size_(q);
        if (cursor == q->room) {
            floem_queue_flush();
            floem_ring_publish_(q);
            floem_queue_count_private_(&q->full_spins);
            return NULL;
        }
    }
    uint32_t index = q->enq_index;
    q->enq_index = floem_ring_next_(index, floem_queue_size_(q));
    __atomic_store_n(&q->enq_cursor, cursor + 1, __ATOMIC_RELAXED);
    return floem_queue_entry_(q, index) + 1;
}

/* Commit a reserved entry of a ring instance on `channel` (`bytes`: the payload written). It
 * is published with the rest of its batch, or at floem_queue_flush. */
static inline void floem_ring_enq_commit(floem_queue_t *q, void *payload, uint16_t channel,
                                         size_t bytes)
{
    struct floem_queue_entry *e = (struct floem_queue_entry *)payload - 1;
    e->channel = channel;
    e->used = floem_queue_used(bytes);
    uint64_t unpublished = __atomic_load_n(&q->enq_cursor, __ATOMIC_RELAXED) -
                           __atomic_load_n(&q->published, __ATOMIC_RELAXED);
    if (unpublished >= __atomic_load_n(&q->batch, __ATOMIC_RELAXED))
        floem_ring_publish_(q);
    else if (!q->listed)
        floem_ring_pend_(q);
}

/* Count an entry of a ring instance dropped instead of enqueued. */
static inline void floem_ring_enq_drop(floem_queue_t *q)
{
    floem_enq_drop(q);
}

/* Payload of the oldest published entry of a ring instance, or NULL when there is none;
 * stores its channel in *channel unless channel is NULL. */
static inline void *floem_ring_deq_acquire(floem_queue_t *q, uint16_t *channel)
{
    uint64_t cursor = __atomic_load_n(&q->deq_cursor, __ATOMIC_RELAXED);
    if (cursor == q->ready) {
        q->ready = __atomic_load_n(&q->published, __ATOMIC_ACQUIRE);
        if (cursor == q->ready) {
            floem_ring_free_(q);        /* the producer may be waiting for room */
            return NULL;
        }
    }
    uint32_t index = q->deq_index;
    q->deq_index = floem_ring_next_(index, floem_queue_size_(q));
    __atomic_store_n(&q->deq_cursor, cursor + 1, __ATOMIC_RELAXED);
    struct floem_queue_entry *e = floem_queue_entry_(q, index);
    if (channel != NULL)
        *channel = e->channel;
    return e + 1;
}

/* Give the oldest acquired entry of a ring instance back to its producer (the consumer
 * releases its entries in the order it acquired them). It is free for the producer with the
 * rest of its batch, or when the consumer finds the instance empty. */
static inline void floem_ring_deq_release(floem_queue_t *q, void *payload)
{
    (void)payload;
    uint64_t releases = q->releases + 1;
    q->releases = releases;
    if (releases - __atomic_load_n(&q->freed, __ATOMIC_RELAXED) >=
        __atomic_load_n(&q->batch, __ATOMIC_RELAXED))
        floem_ring_free_(q);
}

#endif
