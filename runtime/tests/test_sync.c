/* Tests of the queue synchronization layer (floem/sync.h) against host queues (floem/queue.h).
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -pthread -Iruntime/include runtime/tests/test_sync.c
 *        runtime/src/sync.c runtime/src/dma.c runtime/src/count.c runtime/src/queue.c
 *        runtime/src/threads.c runtime/src/shared.c -o test_sync
 * (with -DFLOEM_SYNC_BLOCKING for the blocking, unbatched layer).
 *   test_sync            single-threaded cases (cursor states only in the batched layer)
 *   test_sync e2e SCALE  threaded end to end: host threads on the host queue, NIC workers
 *                        on the shadow, a manager thread or inline managers; 2 million
 *                        entries per case at SCALE 1; FIFO order and no loss
 * The host side of every ring is floem/queue.h on a little-endian machine. On a big-endian
 * one (the LiquidIO target under qemu-mips64) the test plays an x86 host by hand: the same
 * protocol with status words, channels and payloads stored little-endian, so the layer's
 * byte-order conversions are what make the tests pass (the case with two host consumers,
 * which needs floem/queue.h's multi-consumer path, runs on little-endian machines only).
 * Prints "ok" last and exits 0, or names the failed check and aborts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/sync.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define TO_HOST FLOEM_SYNC_TO_HOST
#define FROM_HOST FLOEM_SYNC_FROM_HOST

/* Requests complete at issue: the single-threaded cases step the layer deterministically. */
static const floem_dma_model_t INSTANT = {0, 1e9, 16, 8};

/* The payload of every test entry, in wire order. */
struct item {
    uint64_t seq;
    uint64_t check;
};

/* A host queue in host memory (which the engine maps) and the NIC's shadow of it. */
struct ring {
    unsigned char *mem;         /* host memory: 128 bytes, then the queue instance */
    floem_queue_t *q;           /* the host's pointer to the instance */
    floem_sync_t *s;
    uint32_t size;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Back off while there is nothing to do (the tests run more threads than a CI box has cores). */
static void idle(unsigned *spins)
{
    if (++*spins % 64 == 0)
        sched_yield();
}

/* A fresh host queue, the DMA engine over its memory with `model`, and a shadow of it. */
static struct ring ring_new(uint32_t size, uint32_t entry_size, floem_sync_dir_t dir,
                            uint32_t batch, bool multi, const floem_dma_model_t *model)
{
    struct ring r = {.size = size};
    size_t bytes = 128 + floem_queue_bytes(size, entry_size);
    r.mem = aligned_alloc(64, bytes);
    CHECK(r.mem != NULL);
    memset(r.mem, 0, bytes);
    r.q = (floem_queue_t *)(r.mem + 128);
    floem_queue_init(r.q, size, entry_size);
    floem_dma_init(r.mem, bytes, model);
    r.s = dma_buf_alloc(floem_sync_bytes(size, entry_size));
    floem_sync_init(r.s, (floem_queue_t *)(uintptr_t)(FLOEM_HOST_BASE + 128), size, entry_size,
                    dir, batch, multi);
    return r;
}

/* Free a ring once its shadow has no request in flight (a prefetch read may be: with fault
 * injection its data lands when it completes, in memory the next ring may have reused). */
static void ring_free(struct ring *r)
{
    floem_sync_flush(r->s);
    dma_free(r->s);
    free(r->mem);
}

/* ---- The host side ---------------------------------------------------------------- */

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static void *host_reserve(floem_queue_t *q)
{
    return floem_enq_reserve(q, false);
}

static void host_commit(floem_queue_t *q, void *payload, uint16_t channel)
{
    floem_enq_commit(q, payload, channel, sizeof(struct item));
}

static void *host_acquire(floem_queue_t *q, bool multi, uint16_t *channel)
{
    return floem_deq_acquire(q, multi, channel);
}

static void host_release(floem_queue_t *q, void *payload)
{
    floem_deq_release(q, payload);
}
#else
/* The entry under a host cursor if its wire-order status is the cursor's turn + offset. */
static struct floem_queue_entry *host_claim(floem_queue_t *q, uint64_t *cursor, uint32_t offset)
{
    struct floem_queue_entry *e = floem_queue_entry_(q, *cursor);
    if (floem_wire32(__atomic_load_n(&e->status, __ATOMIC_ACQUIRE)) !=
        floem_queue_free_turn_(*cursor) + offset)
        return NULL;
    *cursor = floem_queue_next_(*cursor, floem_queue_size_(q));
    return e;
}

/* Hand an entry to the other side: its wire-order status goes one turn on. */
static void host_pass(void *payload)
{
    struct floem_queue_entry *e = (struct floem_queue_entry *)payload - 1;
    uint32_t turn = floem_wire32(__atomic_load_n(&e->status, __ATOMIC_RELAXED));
    __atomic_store_n(&e->status, floem_wire32(turn + 1), __ATOMIC_RELEASE);
}

static void *host_reserve(floem_queue_t *q)
{
    struct floem_queue_entry *e = host_claim(q, &q->enq_cursor, 0);
    return e == NULL ? NULL : e + 1;
}

static void host_commit(floem_queue_t *q, void *payload, uint16_t channel)
{
    (void)q;
    ((struct floem_queue_entry *)payload - 1)->channel = floem_wire16(channel);
    ((struct floem_queue_entry *)payload - 1)->used =
        floem_wire16(floem_queue_used(sizeof(struct item)));
    host_pass(payload);
}

/* (Single consumer only: the multi-consumer case is not run on big-endian machines.) */
static void *host_acquire(floem_queue_t *q, bool multi, uint16_t *channel)
{
    CHECK(!multi);
    struct floem_queue_entry *e = host_claim(q, &q->deq_cursor, 1);
    if (e == NULL)
        return NULL;
    *channel = floem_wire16(e->channel);
    return e + 1;
}

/* A single consumer releases in order: the release count (wire order, when the NIC asked for
 * it) goes one on; the index beside it is the host's own (floem/queue.h). */
static void host_release(floem_queue_t *q, void *payload)
{
    host_pass(payload);
    if (__atomic_load_n(&q->track_releases, __ATOMIC_RELAXED) == 0)
        return;
    struct floem_queue_released r;
    uint64_t word = __atomic_load_n(&q->released, __ATOMIC_RELAXED);
    memcpy(&r, &word, sizeof r);
    r.count = floem_wire32(floem_wire32(r.count) + 1);
    r.index = r.index + 1 == floem_queue_size_(q) ? 0 : r.index + 1;
    memcpy(&word, &r, sizeof word);
    __atomic_store_n(&q->released, word, __ATOMIC_RELEASE);
}
#endif

static void fill(struct item *it, uint64_t seq)
{
    it->seq = floem_wire64(seq);
    it->check = floem_wire64(~seq);
}

/* Read an item; checks its two halves agree. */
static uint64_t seq_of(const struct item *it)
{
    uint64_t seq = floem_wire64(it->seq);
    CHECK(floem_wire64(it->check) == ~seq);
    return seq;
}

static bool host_put(struct ring *r, uint64_t seq, uint16_t channel)
{
    struct item *it = host_reserve(r->q);
    if (it == NULL)
        return false;
    fill(it, seq);
    host_commit(r->q, it, channel);
    return true;
}

static bool host_get(struct ring *r, bool multi, uint64_t *seq, uint16_t *channel)
{
    struct item *it = host_acquire(r->q, multi, channel);
    if (it == NULL)
        return false;
    *seq = seq_of(it);
    host_release(r->q, it);
    return true;
}

/* ---- The NIC side ----------------------------------------------------------------- */

static bool nic_put(struct ring *r, uint64_t seq, uint16_t channel)
{
    struct item *it = floem_sync_enq_reserve(r->s);
    if (it == NULL)
        return false;
    fill(it, seq);
    floem_sync_enq_commit(r->s, it, channel, sizeof *it);
    return true;
}

static bool nic_get(struct ring *r, uint64_t *seq, uint16_t *channel)
{
    struct item *it = floem_sync_deq_acquire(r->s, channel);
    if (it == NULL)
        return false;
    *seq = seq_of(it);
    floem_sync_deq_release(r->s, it);
    return true;
}

/* Take the next entry on the consuming side of `dir`; it must be seq on channel seq % 5. */
static bool get_expect(struct ring *r, floem_sync_dir_t dir, uint64_t seq)
{
    uint64_t got = 0;
    uint16_t channel = 0xffff;
    if (!(dir == TO_HOST ? host_get(r, false, &got, &channel) : nic_get(r, &got, &channel)))
        return false;
    CHECK(got == seq);
    CHECK(channel == seq % 5);
    return true;
}

static bool put(struct ring *r, floem_sync_dir_t dir, uint64_t seq)
{
    uint16_t channel = (uint16_t)(seq % 5);
    return dir == TO_HOST ? nic_put(r, seq, channel) : host_put(r, seq, channel);
}

/* ---- Single-threaded cases -------------------------------------------------------- */

#ifndef FLOEM_SYNC_BLOCKING
static void expect_cursors(const struct ring *r, uint64_t writing, uint64_t modified,
                           uint64_t valid, uint64_t reading, uint64_t invalid)
{
    floem_sync_cursors_t c;
    floem_sync_cursors(r->s, &c);
    if (c.writing != writing || c.modified != modified || c.valid != valid ||
        c.reading != reading || c.invalid != invalid)
        fprintf(stderr, "cursors %llu %llu %llu %llu %llu\n", (unsigned long long)c.writing,
                (unsigned long long)c.modified, (unsigned long long)c.valid,
                (unsigned long long)c.reading, (unsigned long long)c.invalid);
    CHECK(c.writing == writing && c.modified == modified && c.valid == valid);
    CHECK(c.reading == reading && c.invalid == invalid);
}

/* Manage until `writing` and `reading` reach the given positions (requests take 100 ms). */
static void manage_until(struct ring *r, uint64_t writing, uint64_t reading)
{
    uint64_t deadline = now_ns() + 5000000000ull;
    floem_sync_cursors_t c;
    do {
        CHECK(now_ns() < deadline);
        floem_sync_manage(r->s);
        floem_sync_cursors(r->s, &c);
    } while (c.writing < writing || c.reading < reading);
}

/* Every state, and the cursors' moves between them, with requests slow enough to watch
 * (a request issued by one manager round is still in flight at the next): a from_host ring,
 * whose reads are in flight for a while (to_host reads only the host's release count). */
static void test_states(void)
{
    const floem_dma_model_t slow = {100000000, 1e9, 16, 8};
    struct ring r = ring_new(12, 64, FROM_HOST, 4, false, &slow);
    for (uint64_t i = 0; i < 6; i++)
        CHECK(put(&r, FROM_HOST, i));
    expect_cursors(&r, 0, 0, 0, 0, 0);
    floem_sync_manage(r.s);
    expect_cursors(&r, 0, 0, 0, 0, 4);                 /* [0, 4) reading (their headers) */
    CHECK(floem_sync_deq_acquire(r.s, NULL) == NULL && access_entry(r.s, 0) == NULL);
    manage_until(&r, 0, 0);
    for (int i = 0; i < 1000; i++) {                   /* until the header read completes */
        floem_sync_manage(r.s);
        floem_sync_cursors_t c;
        floem_sync_cursors(r.s, &c);
        if (c.invalid == 8)
            break;
        CHECK(now_ns() > 0);
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    expect_cursors(&r, 0, 0, 0, 0, 8);                 /* fetching [0, 4), headers [4, 8) */
    manage_until(&r, 0, 4);
    /* [0, 4) valid; fetching [4, 6), headers [6, 10). */
    expect_cursors(&r, 0, 0, 0, 4, 10);
    CHECK(get_expect(&r, FROM_HOST, 0));
    expect_cursors(&r, 0, 0, 1, 4, 10);                /* [0, 1) modified */
    floem_sync_manage(r.s);                            /* an entry was finished: keep batching */
    expect_cursors(&r, 0, 0, 1, 4, 10);
    floem_sync_manage(r.s);                            /* none since: write the partial batch */
    expect_cursors(&r, 0, 1, 1, 4, 10);                /* [0, 1) writing */
    CHECK(get_expect(&r, FROM_HOST, 1));
    /* All five: [0,1) writing, [1,2) modified, [2,4) valid, [4,10) reading, [10,12) invalid. */
    expect_cursors(&r, 0, 1, 2, 4, 10);
    CHECK(access_entry(r.s, 0) == NULL && access_entry(r.s, 1) == NULL);
    CHECK(access_entry(r.s, 2) != NULL && access_entry(r.s, 3) != NULL);
    CHECK(access_entry(r.s, 4) == NULL && access_entry(r.s, 10) == NULL);
    CHECK(access_entry(r.s, 12) == NULL);
    floem_sync_stats_t st;
    floem_sync_stats(r.s, &st);
    CHECK(st.entries == 2 && st.read_requests == 3 && st.write_requests == 1 && st.flushes == 1);
    floem_sync_flush(r.s);
    for (uint64_t i = 2; i < 6; i++) {
        for (int tries = 0; !get_expect(&r, FROM_HOST, i); tries++) {
            CHECK(tries < 4);
            manage_until(&r, 0, i + 1);
        }
    }
    ring_free(&r);
}

/* to_host: the entries of the first lap are free without a read; later ones become free when
 * a 4-byte read of the host's release count says the host released their previous lap. */
static void test_release_count(void)
{
    struct ring r = ring_new(4, 64, TO_HOST, 2, false, &INSTANT);
    floem_sync_manage(r.s);
    expect_cursors(&r, 0, 0, 0, 4, 4);                 /* lap 0: all valid, nothing read */
    for (uint64_t i = 0; i < 4; i++)
        CHECK(nic_put(&r, i, (uint16_t)(i % 5)));
    CHECK(floem_sync_enq_reserve(r.s) == NULL && !floem_sync_enq_full(r.s));
    floem_sync_flush(r.s);
    floem_sync_manage(r.s);                            /* reads the count... */
    floem_sync_manage(r.s);                            /* ...which says 0 released */
    expect_cursors(&r, 4, 4, 4, 4, 4);
    CHECK(floem_sync_enq_full(r.s));                   /* the host holds position 0 */
    CHECK(get_expect(&r, TO_HOST, 0) && get_expect(&r, TO_HOST, 1));
    manage_until(&r, 4, 6);                            /* a later read says 2 released */
    expect_cursors(&r, 4, 4, 4, 6, 6);                 /* positions 4 and 5 */
    CHECK(nic_put(&r, 4, 4) && nic_put(&r, 5, 0));
    CHECK(floem_sync_enq_reserve(r.s) == NULL && floem_sync_enq_full(r.s));
    floem_sync_stats_t st;
    floem_sync_stats(r.s, &st);
    floem_dma_stats_t dma;
    floem_dma_stats(&dma);
    CHECK(st.read_requests >= 2 && dma.bytes_read == 4 * st.read_requests);  /* counts only */
    ring_free(&r);
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Two host consumers releasing out of order: the release count stops at the first entry still
 * held, so the NIC does not fill it again. */
static void test_release_out_of_order(void)
{
    struct ring r = ring_new(4, 64, TO_HOST, 1, false, &INSTANT);
    for (uint64_t i = 0; i < 4; i++)
        for (int tries = 0; !nic_put(&r, i, (uint16_t)(i % 5)); tries++) {
            CHECK(tries < 4);
            floem_sync_manage(r.s);
        }
    floem_sync_flush(r.s);
    uint16_t channel;
    struct item *first = floem_deq_acquire(r.q, true, &channel);
    struct item *second = floem_deq_acquire(r.q, true, &channel);
    CHECK(first != NULL && second != NULL && seq_of(first) == 0 && seq_of(second) == 1);
    floem_deq_release(r.q, second);
    struct floem_queue_released released;
    memcpy(&released, &r.q->released, sizeof released);
    CHECK(released.count == 0 && released.index == 0);
    for (int i = 0; i < 4; i++)
        floem_sync_manage(r.s);
    CHECK(floem_sync_enq_reserve(r.s) == NULL && floem_sync_enq_full(r.s));
    floem_deq_release(r.q, first);
    memcpy(&released, &r.q->released, sizeof released);
    CHECK(released.count == 2 && released.index == 2);
    for (uint64_t i = 4; i < 6; i++)
        for (int tries = 0; !nic_put(&r, i, (uint16_t)(i % 5)); tries++) {
            CHECK(tries < 4);
            floem_sync_manage(r.s);
        }
    CHECK(floem_sync_enq_reserve(r.s) == NULL);
    floem_sync_flush(r.s);
    for (uint64_t i = 2; i < 6; i++)
        CHECK(get_expect(&r, TO_HOST, i));
    memcpy(&released, &r.q->released, sizeof released);
    CHECK(released.count == 6 && released.index == 2);
    ring_free(&r);
}
#endif

/* A from_host header read that saw an entry published may hold its `used` from before (one
 * read is unordered against the host's writes): a fetch that turns out short is done again. */
static void test_short_fetch(void)
{
    struct ring r = ring_new(4, 256, FROM_HOST, 2, false, &INSTANT);
    struct item *it = host_reserve(r.q);
    CHECK(it != NULL);
    fill(it, 0);
    host_commit(r.q, it, 0);
    /* Make the host's header say 1 unit, as if the read had caught the entry mid-write... */
    struct floem_queue_entry *e = (struct floem_queue_entry *)it - 1;
    e->used = floem_wire16(1);
    floem_sync_manage(r.s);                            /* sees [0, 2) headers: used 1 */
    e->used = floem_wire16(floem_queue_used(sizeof(struct item)));  /* ...and then the whole */
    floem_sync_manage(r.s);                            /* fetches 8 bytes... */
    floem_sync_manage(r.s);                            /* ...short: not valid, fetch again */
    CHECK(access_entry(r.s, 0) == NULL);
    floem_sync_manage(r.s);                            /* all of it this time */
    CHECK(get_expect(&r, FROM_HOST, 0));
    floem_sync_stats_t st;
    floem_sync_stats(r.s, &st);
    CHECK(st.read_requests == 4);
    ring_free(&r);
}

/* A from_host read that finds part of its batch published only notes it (one read may see a
 * status word newer than the payload behind it); the next read, issued after that one
 * completed, makes that part valid; the rest is read again. */
static void test_unready_tail(void)
{
    struct ring r = ring_new(8, 64, FROM_HOST, 4, false, &INSTANT);
    CHECK(put(&r, FROM_HOST, 0) && put(&r, FROM_HOST, 1));
    floem_sync_manage(r.s);
    expect_cursors(&r, 0, 0, 0, 0, 4);
    floem_sync_manage(r.s);                            /* [0, 2) seen: read with a batch more */
    expect_cursors(&r, 0, 0, 0, 0, 6);
    CHECK(access_entry(r.s, 0) == NULL);   /* (acquire would run a round) */
    floem_sync_manage(r.s);                            /* [0, 2) valid; [2, 6) read again */
    expect_cursors(&r, 0, 0, 0, 2, 6);
    CHECK(get_expect(&r, FROM_HOST, 0) && get_expect(&r, FROM_HOST, 1));
    CHECK(access_entry(r.s, 2) == NULL);   /* (acquire would run a round) */
    CHECK(put(&r, FROM_HOST, 2) && put(&r, FROM_HOST, 3));
    floem_sync_manage(r.s);                            /* that read predates them: again */
    expect_cursors(&r, 0, 0, 2, 2, 6);
    floem_sync_manage(r.s);                            /* [2, 4) seen; [0, 2) written back */
    expect_cursors(&r, 0, 2, 2, 2, 8);
    CHECK(access_entry(r.s, 2) == NULL);   /* (acquire would run a round) */
    floem_sync_manage(r.s);                            /* [2, 4) valid */
    expect_cursors(&r, 2, 2, 2, 4, 8);
    CHECK(get_expect(&r, FROM_HOST, 2) && get_expect(&r, FROM_HOST, 3));
    for (uint64_t i = 4; i < 10; i++)
        CHECK(put(&r, FROM_HOST, i));
    CHECK(!put(&r, FROM_HOST, 10));                    /* 2 released, not written back yet */
    for (int i = 0; i < 3; i++)
        floem_sync_manage(r.s);
    CHECK(put(&r, FROM_HOST, 10) && put(&r, FROM_HOST, 11));
    CHECK(!put(&r, FROM_HOST, 12));
    ring_free(&r);
}
#endif

/* Bytes the sync layer writes to a to_host queue's header to turn on release tracking. */
#ifdef FLOEM_SYNC_BLOCKING
#define TRACKING_BYTES 0u
#else
#define TRACKING_BYTES 4u
#endif

/* An entry much larger than its payload: only the used bytes cross (both ways), so a
 * 2048-byte entry carrying a 16-byte item costs about 8 + 16 bytes. */
static void test_used_bytes(floem_sync_dir_t dir)
{
    const uint32_t size = 32, batch = 8, entry = 2048;
    struct ring r = ring_new(size, entry, dir, batch, false, &INSTANT);
    const uint64_t total = 5 * size + 3;
    uint64_t in = 0, out = 0, idle_rounds = 0;
    while (out < total) {
        while (in < total && in - out < size && put(&r, dir, in))
            in++;
        floem_sync_manage(r.s);
        bool moved = false;
        while (get_expect(&r, dir, out)) {
            out++;
            moved = true;
        }
        idle_rounds += !moved;
        CHECK(idle_rounds < 100 * total);
    }
    floem_sync_flush(r.s);
    floem_sync_stats_t st;
    floem_sync_stats(r.s, &st);
    floem_dma_stats_t dma;
    floem_dma_stats(&dma);
    uint64_t used = FLOEM_QUEUE_ENTRY_HEADER_BYTES + sizeof(struct item);
    if (dir == TO_HOST) {
        /* Header and item, nothing more (and the 4 bytes that turn on release tracking). */
        CHECK(dma.bytes_written == total * used + TRACKING_BYTES);
        CHECK(dma.bytes_read == 4 * st.read_requests); /* release counts (blocking: status words) */
#ifndef FLOEM_SYNC_BLOCKING
        CHECK(dma.bytes_written + dma.bytes_read < total * (used + 2));   /* a count per batch */
#endif
    } else {
        CHECK(dma.bytes_written == total * 4);         /* status words */
        /* Each entry: its header seen (8), then fetched from its channel (4 + item); headers
         * of entries not published yet come on top, a batch at most per read. */
        CHECK(dma.bytes_read >= total * (8 + 4 + sizeof(struct item)));
        CHECK(dma.bytes_read <=
              total * (8 + 4 + sizeof(struct item)) + st.read_requests * 8 * batch);
        CHECK(dma.bytes_read < total * 2 * used);
    }
    ring_free(&r);
}

/* Many laps in both directions, with sizes that are not multiples of the batch: FIFO order,
 * contents and channels kept, nothing lost. Steps are interleaved in a fixed irregular pattern. */
static void test_laps(floem_sync_dir_t dir, uint32_t size, uint32_t batch, uint32_t entry_size)
{
    struct ring r = ring_new(size, entry_size, dir, batch, false, &INSTANT);
    uint64_t total = 60ull * size + 500, in = 0, out = 0;
    uint32_t burst = 1;
    for (unsigned rounds = 0; out < total; rounds++) {
        CHECK(rounds < 100 * total);
        for (uint32_t i = 0; i < burst && in < total && put(&r, dir, in); i++)
            in++;
        floem_sync_manage(r.s);
        for (uint32_t i = 0; i < (burst * 7) % (size + 3) + 1 && get_expect(&r, dir, out); i++)
            out++;
        CHECK(out <= in && in - out <= size);
        burst = burst * 5 % (2 * size + 3) + 1;
    }
    floem_sync_flush(r.s);
    CHECK(!get_expect(&r, dir, total));
    floem_sync_stats_t st;
    floem_sync_stats(r.s, &st);
    CHECK(st.entries == total);
    /* Written: the used bytes of each entry (to_host: header and item, and the 4 bytes that
     * turn on release tracking; in the blocking layer, no tracking) or its status word. */
    floem_dma_stats_t dma;
    floem_dma_stats(&dma);
    CHECK(dma.bytes_written ==
          (dir == TO_HOST
               ? total * (FLOEM_QUEUE_ENTRY_HEADER_BYTES + sizeof(struct item)) + TRACKING_BYTES
               : total * 4));
    ring_free(&r);
}

/* A partly filled batch reaches the host with no further entries, only manager rounds. */
static void test_partial_batch(void)
{
    struct ring r = ring_new(64, 64, TO_HOST, 32, false, &INSTANT);
    for (uint64_t i = 0; i < 3; i++) {
        for (int tries = 0; !nic_put(&r, i, (uint16_t)(i % 5)); tries++) {
            CHECK(tries < 4);
            floem_sync_manage(r.s);
        }
    }
    for (int i = 0; i < 4; i++)
        floem_sync_manage(r.s);
    for (uint64_t i = 0; i < 3; i++)
        CHECK(get_expect(&r, TO_HOST, i));
    floem_sync_stats_t st;
    floem_sync_stats(r.s, &st);
    CHECK(st.entries == 3);
#ifndef FLOEM_SYNC_BLOCKING
    CHECK(st.write_requests == 1 && st.flushes == 1);
#endif
    ring_free(&r);

    /* The other way: 3 released entries become free on the host. */
    r = ring_new(64, 64, FROM_HOST, 32, false, &INSTANT);
    for (uint64_t i = 0; i < 3; i++)
        CHECK(put(&r, FROM_HOST, i));
    for (uint64_t i = 0; i < 3; i++) {
        for (int tries = 0; !get_expect(&r, FROM_HOST, i); tries++) {
            CHECK(tries < 4);
            floem_sync_manage(r.s);
        }
    }
    for (int i = 0; i < 4; i++)
        floem_sync_manage(r.s);
    for (uint64_t i = 3; i < 67; i++)
        CHECK(put(&r, FROM_HOST, i));
    CHECK(!put(&r, FROM_HOST, 67));
    ring_free(&r);
}

/* Several workers (multi) may finish entries out of order; they are written back in order. */
static void test_out_of_order(void)
{
    struct ring r = ring_new(8, 64, FROM_HOST, 4, true, &INSTANT);
    for (uint64_t i = 0; i < 4; i++)
        CHECK(put(&r, FROM_HOST, i));
    struct item *held[3];
    uint16_t channel;
    for (uint64_t i = 0; i < 3; i++) {
        for (int tries = 0; (held[i] = floem_sync_deq_acquire(r.s, &channel)) == NULL; tries++) {
            CHECK(tries < 4);
            floem_sync_manage(r.s);
        }
        CHECK(seq_of(held[i]) == i && channel == i % 5);
    }
    floem_sync_deq_release(r.s, held[2]);
    floem_sync_deq_release(r.s, held[1]);
#ifndef FLOEM_SYNC_BLOCKING
    floem_sync_cursors_t c;
    floem_sync_cursors(r.s, &c);
    CHECK(c.valid == 0);
#endif
    floem_sync_deq_release(r.s, held[0]);
#ifndef FLOEM_SYNC_BLOCKING
    floem_sync_cursors(r.s, &c);
    CHECK(c.valid == 3);
#endif
    for (int i = 0; i < 4; i++)
        floem_sync_manage(r.s);
    unsigned room = 0;
    for (uint64_t i = 4; put(&r, FROM_HOST, i); i++)
        room++;
    CHECK(room == 7);                                  /* entry 3 is still the NIC's */
    ring_free(&r);
}

/* The paper's interface: access_entry until the entry is NIC-owned, fill it, access_done. */
static void test_access_interface(void)
{
    struct ring r = ring_new(4, 32, TO_HOST, 2, false, &INSTANT);
    uint64_t out = 0;
    for (uint64_t i = 0; i < 40; i++) {
        struct floem_queue_entry *e;
        for (int tries = 0; (e = access_entry(r.s, i)) == NULL; tries++) {
            CHECK(tries < 20);
            floem_sync_manage(r.s);
            if (get_expect(&r, TO_HOST, out))
                out++;
        }
        e->channel = floem_wire16((uint16_t)(i % 5));
        fill((struct item *)(e + 1), i);
        access_done(r.s, i);
        CHECK(access_entry(r.s, i) == NULL);
    }
    floem_sync_flush(r.s);
    while (get_expect(&r, TO_HOST, out))
        out++;
    CHECK(out == 40);
    ring_free(&r);
}

/* Status words and channels reach host memory little-endian whatever the NIC's byte order. */
static void test_wire_order(void)
{
    struct ring r = ring_new(4, 32, TO_HOST, 1, false, &INSTANT);
    for (int tries = 0; !nic_put(&r, 7, 0x1234); tries++) {
        CHECK(tries < 4);
        floem_sync_manage(r.s);
    }
    floem_sync_flush(r.s);
    const unsigned char *entry = (const unsigned char *)r.q + FLOEM_QUEUE_HEADER_BYTES;
    CHECK(entry[0] == 1 && entry[1] == 0 && entry[2] == 0 && entry[3] == 0);
    CHECK(entry[4] == 0x34 && entry[5] == 0x12);
    CHECK(entry[8] == 7 && entry[15] == 0);
    ring_free(&r);
}

static struct ring misuse;

static void done_on_invalid_entry(void)
{
    access_done(misuse.s, 5);
}

static void enqueue_on_from_host(void)
{
    floem_sync_enq_reserve(misuse.s);
}

static void release_foreign_pointer(void)
{
    static struct item foreign[2];
    floem_sync_deq_release(misuse.s, &foreign[1]);
}

static void release_twice(void)
{
    struct ring *r = &misuse;
    CHECK(put(r, FROM_HOST, 0));
    struct item *it;
    for (int tries = 0; (it = floem_sync_deq_acquire(r->s, NULL)) == NULL; tries++) {
        CHECK(tries < 4);
        floem_sync_manage(r->s);
    }
    floem_sync_deq_release(r->s, it);
    floem_sync_deq_release(r->s, it);
}

static void bad_shape(void)
{
    floem_sync_init(misuse.s, (floem_queue_t *)(uintptr_t)FLOEM_HOST_BASE, 4, 48, TO_HOST, 1,
                    false);
}

static void too_few_descriptors(void)
{
    const floem_dma_model_t one = {0, 1e9, 1, 8};
    floem_dma_init(misuse.mem, 64, &one);
    floem_sync_init(misuse.s, (floem_queue_t *)(uintptr_t)FLOEM_HOST_BASE, 4, 32, TO_HOST, 1,
                    false);
}

static void test_misuse(void)
{
    misuse = ring_new(4, 32, FROM_HOST, 2, false, &INSTANT);
    expect_abort(done_on_invalid_entry, "access_done on an entry that is not valid");
    expect_abort(enqueue_on_from_host, "enqueue on a queue the NIC consumes");
    expect_abort(release_foreign_pointer, "an entry that is not in this shadow");
    expect_abort(release_twice, "an entry finished twice");
    expect_abort(bad_shape, "bad queue shape");
    expect_abort(too_few_descriptors, "too few descriptors");
    ring_free(&misuse);
}

/* Shadows laid out back to back stay 64-byte aligned, whatever their shape. */
static void test_layout(void)
{
    CHECK(floem_sync_bytes(3, 32) % 64 == 0 && floem_sync_bytes(1, 32) % 64 == 0);
    CHECK(floem_sync_bytes(5, 128) >= 5 * 128 && floem_sync_bytes(7, 32) >= 7 * 32);
    CHECK(floem_sync_bytes(8, 64) > floem_sync_bytes(7, 64));
}

static void run_single_threaded(void)
{
    test_layout();
#ifndef FLOEM_SYNC_BLOCKING
    test_states();
    test_unready_tail();
    test_release_count();
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    test_release_out_of_order();
#endif
    test_short_fetch();
#endif
    test_used_bytes(TO_HOST);
    test_used_bytes(FROM_HOST);
    const uint32_t shapes[][3] = {{1, 1, 32}, {2, 3, 64}, {7, 3, 64}, {13, 4, 32}, {64, 32, 128},
                                  {100, 16, 32}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        test_laps(TO_HOST, shapes[i][0], shapes[i][1], shapes[i][2]);
        test_laps(FROM_HOST, shapes[i][0], shapes[i][1], shapes[i][2]);
    }
    test_partial_batch();
    test_out_of_order();
    test_access_interface();
    test_wire_order();
    test_misuse();
}

/* ---- Threaded end to end ---------------------------------------------------------- */

/* One end-to-end case: `workers` NIC threads (managing inline when there is no manager
 * thread) and `hosts` host threads move `total` entries through `r`. A NIC producer sends
 * (its id << 40 | its count k) on channel k % 5; a host producer sends 0, 1, 2, ... */
struct e2e {
    struct ring r;
    floem_sync_dir_t dir;
    uint64_t total;
    unsigned workers, hosts;
    bool manager;
    unsigned next_id;           /* NIC workers: the next worker id to take */
    uint64_t received;          /* entries the consumers took so far */
    uint64_t seq_sum;           /* consumers: sum of the counts (to_host) or sequence numbers */
    int stop;                   /* tells the manager thread to stop */
};

/* A host consumer: each producer's entries come in order (consecutive with one consumer). */
static void host_consume(struct e2e *t)
{
    unsigned spins = 0;
    uint64_t last[2] = {0}, taken[2] = {0}, sum = 0;
    while (__atomic_load_n(&t->received, __ATOMIC_ACQUIRE) < t->total) {
        uint64_t seq = 0;
        uint16_t channel = 0;
        if (!host_get(&t->r, t->hosts > 1, &seq, &channel)) {
            idle(&spins);
            continue;
        }
        uint64_t id = seq >> 40, k = seq & ((1ull << 40) - 1);
        CHECK(id < t->workers && channel == k % 5);
        CHECK(t->hosts > 1 ? taken[id] == 0 || k > last[id] : k == taken[id]);
        last[id] = k;
        taken[id]++;
        sum += k;
        __atomic_fetch_add(&t->received, 1, __ATOMIC_RELEASE);
    }
    __atomic_fetch_add(&t->seq_sum, sum, __ATOMIC_RELAXED);
}

static void *host_thread(void *arg)
{
    struct e2e *t = arg;
    unsigned spins = 0;
    if (t->dir == TO_HOST) {
        host_consume(t);
        return NULL;
    }
    for (uint64_t n = 0; n < t->total;) {
        if (put(&t->r, FROM_HOST, n))
            n++;
        else
            idle(&spins);
    }
    return NULL;
}

/* A NIC producer: its share of the entries, then (with no manager thread) write-backs
 * until the host has them all. */
static void nic_produce(struct e2e *t, uint64_t id)
{
    unsigned spins = 0;
    for (uint64_t k = 0; k < t->total / t->workers;) {
        struct item *it = floem_sync_enq_reserve(t->r.s);
        if (it == NULL) {
            if (!t->manager)
                floem_sync_manage(t->r.s);
            idle(&spins);
            continue;
        }
        fill(it, id << 40 | k);
        floem_sync_enq_commit(t->r.s, it, (uint16_t)(k % 5), sizeof *it);
        k++;
    }
    while (!t->manager && __atomic_load_n(&t->received, __ATOMIC_ACQUIRE) < t->total) {
        floem_sync_flush(t->r.s);
        idle(&spins);
    }
}

/* A NIC consumer: entries until all have been taken; its own ones come in order. */
static void nic_consume(struct e2e *t)
{
    unsigned spins = 0;
    uint64_t sum = 0, taken = 0, last = 0;
    while (__atomic_load_n(&t->received, __ATOMIC_ACQUIRE) < t->total) {
        uint16_t channel;
        struct item *it = floem_sync_deq_acquire(t->r.s, &channel);
        if (it == NULL) {
            if (!t->manager)
                floem_sync_manage(t->r.s);
            idle(&spins);
            continue;
        }
        uint64_t seq = seq_of(it);
        CHECK(channel == seq % 5);
        CHECK(taken == 0 || seq > last);
        last = seq;
        sum += seq;
        taken++;
        floem_sync_deq_release(t->r.s, it);
        __atomic_fetch_add(&t->received, 1, __ATOMIC_RELEASE);
    }
    __atomic_fetch_add(&t->seq_sum, sum, __ATOMIC_RELAXED);
}

static void *nic_thread(void *arg)
{
    struct e2e *t = arg;
    unsigned id = __atomic_fetch_add(&t->next_id, 1, __ATOMIC_RELAXED);
    if (t->dir == TO_HOST)
        nic_produce(t, id);
    else
        nic_consume(t);
    return NULL;
}

static void *manager_thread(void *arg)
{
    struct e2e *t = arg;
    unsigned spins = 0;
    while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
        floem_sync_manage(t->r.s);
        idle(&spins);
    }
    floem_sync_flush(t->r.s);
    return NULL;
}

static void run_e2e(const char *name, floem_sync_dir_t dir, uint64_t total, unsigned workers,
                    unsigned hosts, bool manager)
{
    floem_dma_model_t model = floem_dma_model_from_env();
    struct e2e t = {.r = ring_new(256, 64, dir, 32, workers > 1, &model), .dir = dir,
                    .total = total, .workers = workers, .hosts = hosts, .manager = manager};
    uint64_t t0 = now_ns();
    pthread_t host[2], nic[2], mgr;
    CHECK(workers <= 2 && hosts <= 2 && (dir == TO_HOST || hosts == 1));
    for (unsigned i = 0; i < hosts; i++)
        CHECK(pthread_create(&host[i], NULL, host_thread, &t) == 0);
    for (unsigned i = 0; i < workers; i++)
        CHECK(pthread_create(&nic[i], NULL, nic_thread, &t) == 0);
    if (manager)
        CHECK(pthread_create(&mgr, NULL, manager_thread, &t) == 0);
    for (unsigned i = 0; i < hosts; i++)
        CHECK(pthread_join(host[i], NULL) == 0);
    for (unsigned i = 0; i < workers; i++)
        CHECK(pthread_join(nic[i], NULL) == 0);
    __atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
    if (manager)
        CHECK(pthread_join(mgr, NULL) == 0);
    double secs = (double)(now_ns() - t0) / 1e9;
    floem_sync_stats_t st;
    floem_sync_stats(t.r.s, &st);
    CHECK(st.entries == total && t.received == total);
    uint64_t share = total / workers;
    CHECK(t.seq_sum == (dir == TO_HOST ? workers * (share * (share - 1) / 2)
                                       : total * (total - 1) / 2));
    printf("%s: %llu entries in %.2f s, %llu reads, %llu writes, %llu partial batches\n", name,
           (unsigned long long)total, secs, (unsigned long long)st.read_requests,
           (unsigned long long)st.write_requests, (unsigned long long)st.flushes);
    fflush(stdout);
    ring_free(&t.r);
}

static void run_threaded(double scale)
{
    uint64_t n = (uint64_t)(2000000 * scale) / 2 * 2;
    if (n < 1000)
        n = 1000;
    run_e2e("to_host, manager thread", TO_HOST, n, 1, 1, true);
    run_e2e("from_host, manager thread", FROM_HOST, n, 1, 1, true);
    run_e2e("to_host, 2 workers managing inline", TO_HOST, n, 2, 1, false);
    run_e2e("from_host, 2 workers managing inline", FROM_HOST, n, 2, 1, false);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    run_e2e("to_host, 2 workers, manager thread, 2 host consumers", TO_HOST, n, 2, 2, true);
#endif
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "e2e") == 0)
        run_threaded(atof(argv[2]));
    else if (argc == 1)
        run_single_threaded();
    else {
        fprintf(stderr, "usage: %s [e2e SCALE]\n", argv[0]);
        return 2;
    }
    printf("ok\n");
    return 0;
}
