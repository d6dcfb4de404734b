/* Unit tests of the host queues (floem/queue.h), single-threaded plus two processes.
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -Iruntime/include runtime/tests/test_queue.c
 *        runtime/src/queue.c -o test_queue
 * Every case runs with each combination of single/multi producer and consumer of the turns
 * layout, and most with the ring layout (whose producer ends a turn after each entry here:
 * floem_queue_flush); the ring's batches have cases of their own.
 * Prints "ok: N checks" and exits 0, or names the failed check and aborts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/queue.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long checks;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        checks++;                                                                        \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: check failed: %s (size %u, multi %d/%d, ring %d)\n",    \
                    __FILE__, __LINE__, #cond, cur_size, cur_mp, cur_mc, cur_ring);      \
            abort();                                                                     \
        }                                                                                \
    } while (0)

/* The case being run, for failure messages. */
static uint32_t cur_size;
static bool cur_mp, cur_mc, cur_ring;

static const uint32_t SIZES[] = {1, 2, 3, 5, 7, 8, 63, 64, 100, 1000, 1023};
#define N_SIZES (sizeof SIZES / sizeof SIZES[0])

struct item {
    uint64_t seq;
    uint64_t check;
};

/* Zero-filled, 64-byte-aligned memory for `size` entries of `entry_size` bytes. */
static floem_queue_t *zeroed(uint32_t size, uint32_t entry_size)
{
    size_t bytes = floem_queue_bytes(size, entry_size);
    floem_queue_t *q = aligned_alloc(64, bytes);
    if (q == NULL)
        abort();
    memset(q, 0, bytes);
    return q;
}

/* The calls of the layout under test (cur_ring: the ring's, the producer's turn ending
 * after each commit). */
static void init(floem_queue_t *q, uint32_t size, uint32_t entry_size)
{
    if (cur_ring)
        floem_ring_init(q, size, entry_size);
    else
        floem_queue_init(q, size, entry_size);
}

static void *reserve(floem_queue_t *q)
{
    return cur_ring ? floem_ring_enq_reserve(q) : floem_enq_reserve(q, cur_mp);
}

static void commit(floem_queue_t *q, void *p, uint16_t channel, size_t bytes)
{
    if (cur_ring) {
        floem_ring_enq_commit(q, p, channel, bytes);
        floem_queue_flush();
    } else {
        floem_enq_commit(q, p, channel, bytes);
    }
}

static void *acquire(floem_queue_t *q, uint16_t *channel)
{
    return cur_ring ? floem_ring_deq_acquire(q, channel) : floem_deq_acquire(q, cur_mc, channel);
}

static void release(floem_queue_t *q, void *p)
{
    if (cur_ring)
        floem_ring_deq_release(q, p);
    else
        floem_deq_release(q, p);
}

static floem_queue_t *new_queue(uint32_t size, uint32_t entry_size)
{
    floem_queue_t *q = zeroed(size, entry_size);
    init(q, size, entry_size);
    return q;
}

static bool put(floem_queue_t *q, uint64_t seq, uint16_t channel)
{
    struct item *it = reserve(q);
    if (it == NULL)
        return false;
    it->seq = seq;
    it->check = ~seq;
    commit(q, it, channel, sizeof *it);
    return true;
}

/* Take the next entry, check it carries `seq`, release it. */
static bool get(floem_queue_t *q, uint64_t seq, uint16_t channel)
{
    uint16_t ch = 0xdead;
    struct item *it = acquire(q, &ch);
    if (it == NULL)
        return false;
    CHECK(it->seq == seq);
    CHECK(it->check == ~seq);
    CHECK(ch == channel);
    release(q, it);
    return true;
}

static void test_sizes(void)
{
    CHECK(floem_queue_entry_size(0) == 32);
    CHECK(floem_queue_entry_size(1) == 32);
    CHECK(floem_queue_entry_size(24) == 32);
    CHECK(floem_queue_entry_size(25) == 64);
    CHECK(floem_queue_entry_size(56) == 64);
    CHECK(floem_queue_entry_size(57) == 128);
    CHECK(floem_queue_entry_size(64) == 128);
    CHECK(floem_queue_entry_size(1000) == 1024);
    CHECK(floem_queue_bytes(1, 32) == FLOEM_QUEUE_HEADER_BYTES + 64);
    CHECK(floem_queue_bytes(2, 32) == FLOEM_QUEUE_HEADER_BYTES + 64);
    CHECK(floem_queue_bytes(3, 64) == FLOEM_QUEUE_HEADER_BYTES + 192);
    CHECK(floem_queue_bytes(7, 128) == FLOEM_QUEUE_HEADER_BYTES + 896);
    CHECK(FLOEM_QUEUE_HEADER_BYTES % 64 == 0);
}

/* Empty at start; exactly `size` entries fit; one freed entry makes room for one more. */
static void test_empty_full(uint32_t size)
{
    floem_queue_t *q = new_queue(size, 32);
    CHECK(acquire(q, NULL) == NULL);
    for (uint32_t i = 0; i < size; i++)
        CHECK(put(q, i, 0));
    CHECK(!put(q, size, 0));
    CHECK(!put(q, size, 0));
    CHECK(get(q, 0, 0));
    CHECK(put(q, size, 0));
    CHECK(!put(q, size + 1, 0));
    for (uint32_t i = 1; i <= size; i++)
        CHECK(get(q, i, 0));
    CHECK(acquire(q, NULL) == NULL);
    floem_queue_stats_t st;
    floem_queue_stats(q, &st);
    CHECK(st.enqueued == size + 1u && st.dequeued == size + 1u);
    CHECK(st.full_spins == 3 && st.dropped == 0);
    free(q);
}

/* Many laps with fill/drain batches of varying length: FIFO, content and channel kept. */
static void test_laps(uint32_t size, uint32_t entry_size)
{
    floem_queue_t *q = new_queue(size, entry_size);
    uint64_t in = 0, out = 0;
    uint32_t batch = 1;
    while (out < 50ull * size + 1000) {
        for (uint32_t i = 0; i < batch && put(q, in, (uint16_t)in); i++)
            in++;
        CHECK(in - out <= size);
        for (uint32_t i = 0; i < (batch * 7) % (size + 2) + 1 && out < in; i++) {
            CHECK(get(q, out, (uint16_t)out));
            out++;
        }
        batch = batch * 5 % (2 * size + 3) + 1;
    }
    while (out < in) {
        CHECK(get(q, out, (uint16_t)out));
        out++;
    }
    CHECK(acquire(q, NULL) == NULL);
    floem_queue_stats_t st;
    floem_queue_stats(q, &st);
    CHECK(st.enqueued == in && st.dequeued == out);
    free(q);
}

/* An entry reserved first holds back one reserved later, even if that one commits first. */
static void test_reservation_order(void)
{
    floem_queue_t *q = new_queue(4, 64);
    struct item *a = floem_enq_reserve(q, cur_mp);
    struct item *b = floem_enq_reserve(q, cur_mp);
    CHECK(a != NULL && b != NULL && a != b);
    b->seq = 2;
    b->check = ~2ull;
    floem_enq_commit(q, b, 2, sizeof *b);
    CHECK(acquire(q, NULL) == NULL);
    a->seq = 1;
    a->check = ~1ull;
    floem_enq_commit(q, a, 1, sizeof *a);
    /* The consumer may hold an entry while the producer keeps going. */
    uint16_t ch;
    struct item *held = acquire(q, &ch);
    CHECK(held == a && ch == 1 && held->seq == 1);
    CHECK(put(q, 3, 3) && put(q, 4, 4));
    CHECK(!put(q, 5, 5));
    floem_deq_release(q, held);
    CHECK(put(q, 5, 5));
    for (uint64_t s = 2; s <= 5; s++)
        CHECK(get(q, s, (uint16_t)s));
    free(q);
}

/* Channel numbers travel with their entry, over the whole uint16_t range. */
static void test_channels(void)
{
    floem_queue_t *q = new_queue(5, 32);
    const uint16_t channels[] = {0, 1, 2, 255, 256, 32767, 32768, 65534, 65535};
    for (int lap = 0; lap < 3; lap++)
        for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++) {
            CHECK(put(q, i, channels[i]));
            CHECK(get(q, i, channels[i]));
        }
    struct item *it = reserve(q);
    commit(q, it, 7, sizeof *it);
    CHECK(acquire(q, NULL) == it);
    release(q, it);
    free(q);
}

/* Counters: enqueued, dequeued, dropped (lossy enqueue), full_spins. */
static void test_stats(void)
{
    floem_queue_t *q = new_queue(3, 64);
    floem_queue_stats_t st;
    floem_queue_stats(q, &st);
    CHECK(st.enqueued == 0 && st.dequeued == 0 && st.dropped == 0 && st.full_spins == 0);
    unsigned dropped = 0;
    for (uint64_t i = 0; i < 10; i++)
        if (!put(q, i, 0)) {
            floem_enq_drop(q);
            dropped++;
        }
    CHECK(dropped == 7);
    CHECK(get(q, 0, 0));
    floem_enq_drop(q);
    floem_queue_stats(q, &st);
    CHECK(st.enqueued == 3 && st.dequeued == 1 && st.dropped == 8 && st.full_spins == 7);
    free(q);
}

/* Payloads are 8-byte aligned (entry start + 8) and entries never overlap. */
static void test_alignment(uint32_t size)
{
    const uint32_t entry_sizes[] = {32, 64, 128, 192};
    for (size_t k = 0; k < sizeof entry_sizes / sizeof entry_sizes[0]; k++) {
        uint32_t es = entry_sizes[k];
        floem_queue_t *q = new_queue(size, es);
        char *base = (char *)q + FLOEM_QUEUE_HEADER_BYTES;
        for (uint32_t i = 0; i < 2 * size + 1; i++) {
            char *p = reserve(q);
            CHECK(p != NULL);
            CHECK((uintptr_t)p % 8 == 0);
            CHECK((uintptr_t)(p - FLOEM_QUEUE_ENTRY_HEADER_BYTES) % (es < 64 ? es : 64) == 0);
            CHECK(p == base + (size_t)(i % size) * es + FLOEM_QUEUE_ENTRY_HEADER_BYTES);
            memset(p, 0xa5, es - FLOEM_QUEUE_ENTRY_HEADER_BYTES);
            commit(q, p, (uint16_t)i, es - FLOEM_QUEUE_ENTRY_HEADER_BYTES);
            uint16_t ch;
            CHECK(acquire(q, &ch) == p && ch == (uint16_t)i);
            release(q, p);
        }
        CHECK((char *)q + floem_queue_bytes(size, es) >= base + (size_t)size * es);
        free(q);
    }
}

/* The 32-bit turn and lap counters wrap around (white box: start just before the wrap). */
static void test_turn_wraparound(uint32_t size)
{
    floem_queue_t *q = new_queue(size, 32);
    uint64_t lap = 0xfffffffeull;
    q->enq_cursor = q->deq_cursor = lap << 32;
    for (uint32_t i = 0; i < size; i++) {
        struct floem_queue_entry *e =
            (struct floem_queue_entry *)((char *)q + FLOEM_QUEUE_HEADER_BYTES + (size_t)i * 32);
        e->status = (uint32_t)(lap * 2);
    }
    uint64_t in = 0, out = 0;
    while (out < 5ull * size) {
        while (put(q, in, 0))
            in++;
        CHECK(in - out == size);
        while (out < in - size / 2) {
            CHECK(get(q, out, 0));
            out++;
        }
    }
    CHECK((q->enq_cursor >> 32) < 8 && (q->deq_cursor >> 32) < 8);
    free(q);
}

/* Cursor arithmetic (white box): (lap << 32) | index, wrapping to index 0 of the next lap. */
static void test_cursor_arithmetic(void)
{
    const uint64_t lap = 5ull << 32;
    CHECK(floem_queue_next_(lap | 0, 3) == (lap | 1));
    CHECK(floem_queue_next_(lap | 2, 3) == (6ull << 32));
    CHECK(floem_queue_next_(lap | 0, 1) == (6ull << 32));
    CHECK(floem_queue_next_(0xffffffffull << 32 | 6, 7) == 0);
    CHECK(floem_queue_ahead_(lap | 2, 10, 7) == (lap | 9));
    CHECK(floem_queue_ahead_(lap | 3, 10, 7) == (6ull << 32 | 0));
    CHECK(floem_queue_ahead_(lap | 9, 10, 9) == (6ull << 32 | 8));
    CHECK(floem_queue_ahead_(lap | 4, 1000, 0) == (lap | 4));
    CHECK(floem_queue_ahead_(0xffffffffull << 32 | 900, 1000, 200) == 100);
    CHECK(floem_queue_free_turn_(lap | 3) == 10);
    CHECK(floem_queue_free_turn_(0xffffffffull << 32) == 0xfffffffe);
}

/* Initialisation: idempotent with the same shape, refuses a different or bad one. */
static bool init_aborts(floem_queue_t *q, uint32_t size, uint32_t entry_size, bool ring)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (freopen("/dev/null", "w", stderr) == NULL)
            _exit(3);
        if (ring)
            floem_ring_init(q, size, entry_size);
        else
            floem_queue_init(q, size, entry_size);
        _exit(0);
    }
    int status;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void test_init(void)
{
    floem_queue_t *q = new_queue(5, 64);
    CHECK(put(q, 1, 1) && put(q, 2, 2));
    CHECK(get(q, 1, 1));
    init(q, 5, 64);
    CHECK(get(q, 2, 2));
    CHECK(acquire(q, NULL) == NULL);
    CHECK(init_aborts(q, 6, 64, cur_ring));
    CHECK(init_aborts(q, 5, 128, cur_ring));
    CHECK(init_aborts(q, 5, 64, !cur_ring));        /* the other layout */
    floem_queue_t *z = zeroed(8, 64);
    CHECK(init_aborts(z, 0, 64, cur_ring));
    CHECK(init_aborts(z, 4, 0, cur_ring));
    CHECK(init_aborts(z, 4, 16, cur_ring));
    CHECK(init_aborts(z, 4, 96, cur_ring));
    CHECK(init_aborts((floem_queue_t *)((char *)z + 32), 1, 32, cur_ring));
    CHECK(!init_aborts(z, 4, 32, cur_ring));
    free(q);
    free(z);
}

/* The ring publishes a batch of entries at once (a quarter of its size, at most
 * FLOEM_QUEUE_RING_BATCH), or all it holds back when the producer's turn ends or it finds
 * the ring full; and frees a batch of released entries at once, or all when the consumer
 * finds the ring empty. */
static void test_ring_batches(uint32_t size)
{
    floem_queue_t *q = zeroed(size, 64);
    floem_ring_init(q, size, 64);
    uint32_t batch = size / 4 < 1 ? 1 : size / 4 > 32 ? 32 : size / 4;
    uint64_t in = 0, out = 0;
    /* Committed entries stay unseen until a batch is complete. */
    for (uint32_t i = 0; i + 1 < batch; i++) {
        struct item *it = floem_ring_enq_reserve(q);
        CHECK(it != NULL);
        it->seq = in++;
        floem_ring_enq_commit(q, it, 0, sizeof *it);
        CHECK(floem_ring_deq_acquire(q, NULL) == NULL);
    }
    struct item *it = floem_ring_enq_reserve(q);
    it->seq = in++;
    floem_ring_enq_commit(q, it, 0, sizeof *it);
    CHECK(floem_queue_pending_.count == (batch > 1));       /* listed until the turn ends */
    floem_queue_flush();
    CHECK(floem_queue_pending_.count == 0);
    for (; out < batch; out++) {
        uint16_t ch;
        struct item *got = floem_ring_deq_acquire(q, &ch);
        CHECK(got != NULL && got->seq == out && ch == 0);
        floem_ring_deq_release(q, got);
    }
    /* Fill it; the last entries are published when the producer finds it full. */
    while ((it = floem_ring_enq_reserve(q)) != NULL) {
        it->seq = in++;
        floem_ring_enq_commit(q, it, 1, sizeof *it);
    }
    CHECK(in - out == size);
    CHECK(floem_queue_pending_.count == 0);
    /* Released entries are room for the producer a batch at a time. */
    for (uint32_t i = 0; i < batch; i++) {
        CHECK(floem_ring_enq_reserve(q) == NULL);
        struct item *got = floem_ring_deq_acquire(q, NULL);
        CHECK(got != NULL && got->seq == out++);
        floem_ring_deq_release(q, got);
    }
    for (uint32_t i = 0; i < batch; i++) {
        it = floem_ring_enq_reserve(q);
        CHECK(it != NULL);
        it->seq = in++;
        floem_ring_enq_commit(q, it, 2, sizeof *it);
    }
    CHECK(floem_ring_enq_reserve(q) == NULL);
    /* Drained: the consumer finding it empty frees every released entry. */
    struct item *got;
    while ((got = floem_ring_deq_acquire(q, NULL)) != NULL) {
        CHECK(got->seq == out++);
        floem_ring_deq_release(q, got);
    }
    CHECK(out == in);
    for (uint32_t i = 0; i < size; i++) {
        it = floem_ring_enq_reserve(q);
        CHECK(it != NULL);
        floem_ring_enq_commit(q, it, 0, sizeof *it);
    }
    CHECK(floem_ring_enq_reserve(q) == NULL);
    floem_queue_stats_t st;
    floem_queue_stats(q, &st);
    CHECK(st.enqueued == in + size && st.dequeued == out);
    free(q);
}

/* A thread's list of rings with entries held back: each listed once; past FLOEM_QUEUE_PENDING
 * rings a commit publishes at once. */
static void test_ring_pending(void)
{
    enum { N = FLOEM_QUEUE_PENDING + 3 };
    floem_queue_t *rings[N];
    for (int i = 0; i < N; i++) {
        rings[i] = zeroed(64, 32);
        floem_ring_init(rings[i], 64, 32);
    }
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < N; i++) {
            void *p = floem_ring_enq_reserve(rings[i]);
            CHECK(p != NULL);
            floem_ring_enq_commit(rings[i], p, (uint16_t)round, 0);
        }
    CHECK(floem_queue_pending_.count == FLOEM_QUEUE_PENDING);
    for (int i = FLOEM_QUEUE_PENDING; i < N; i++)        /* not listed: published at once */
        CHECK(floem_ring_deq_acquire(rings[i], NULL) != NULL);
    CHECK(floem_ring_deq_acquire(rings[0], NULL) == NULL);
    floem_queue_flush();
    for (int i = 0; i < N; i++) {
        uint16_t ch = 9;
        while (floem_ring_deq_acquire(rings[i], &ch) != NULL)
            CHECK(ch <= 1);
        CHECK(ch == 1);
        free(rings[i]);
    }
}

/* No pointers in the block: produce through one mapping, consume through another. */
static void test_two_mappings(void)
{
    const uint32_t size = 37, es = 64;
    size_t bytes = floem_queue_bytes(size, es);
    int fd = memfd_create("floem-queue-test", 0);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0);
    floem_queue_t *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    floem_queue_t *b = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(a != MAP_FAILED && b != MAP_FAILED && a != b);
    init(a, size, es);
    init(b, size, es);
    uint64_t in = 0, out = 0;
    while (out < 10000) {
        while (in - out < size / 3 + 1 && put(a, in, (uint16_t)(in * 3)))
            in++;
        while (out < in && get(b, out, (uint16_t)(out * 3)))
            out++;
    }
    floem_queue_stats_t st;
    floem_queue_stats(a, &st);
    CHECK(st.enqueued == in && st.dequeued == out);
    munmap(a, bytes);
    munmap(b, bytes);
    close(fd);
}

/* Two processes sharing one instance: the child produces, the parent consumes. */
static void test_processes(void)
{
    const uint32_t size = 100, es = 64;
    const uint64_t n = 200000;
    size_t bytes = floem_queue_bytes(size, es);
    floem_queue_t *q = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(q != MAP_FAILED);
    init(q, size, es);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        for (uint64_t i = 0; i < n; i++)
            while (!put(q, i, (uint16_t)i))
                sched_yield();
        _exit(0);
    }
    CHECK(pid > 0);
    for (uint64_t i = 0; i < n; i++)
        while (!get(q, i, (uint16_t)i))
            sched_yield();
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    floem_queue_stats_t st;
    floem_queue_stats(q, &st);
    CHECK(st.enqueued == n && st.dequeued == n && st.dropped == 0);
    munmap(q, bytes);
}

int main(void)
{
    test_sizes();
    test_cursor_arithmetic();
    for (int variant = 0; variant < 5; variant++) {
        cur_ring = variant == 4;
        cur_mp = !cur_ring && (variant & 1);
        cur_mc = !cur_ring && (variant & 2);
        for (size_t i = 0; i < N_SIZES; i++) {
            cur_size = SIZES[i];
            if (!cur_ring) {
                test_empty_full(cur_size);
                test_turn_wraparound(cur_size);
            } else {
                test_ring_batches(cur_size);
            }
            test_laps(cur_size, 32);
            test_laps(cur_size, 128);
            test_alignment(cur_size);
        }
        cur_size = 0;
        if (!cur_ring)
            test_reservation_order();
        else
            test_ring_pending();
        test_channels();
        test_stats();
        test_init();
        test_two_mappings();
        test_processes();
    }
    printf("ok: %lu checks\n", checks);
    return 0;
}
