/* Floem host queue vs DPDK rte_ring: two threads moving 64-byte entries.
 *
 * Usage: queue_bench [ENTRIES [REPEATS [SIZE [PAUSES]]]]
 *        (defaults: 10000000 entries per run, 5 repeats, 1024 entries, 1 pause)
 * Built and run by run.sh. A producer thread sends ENTRIES entries to a consumer
 * thread, each pinned to its own CPU (the first two the process may use), through
 *   - one Floem queue instance, single producer / single consumer, SIZE entries of
 *     64 bytes (8-byte header + 56-byte payload), and
 *   - an rte_ring made with rte_ring_create_elem(count SIZE, esize 64,
 *     RING_F_SP_ENQ | RING_F_SC_DEQ) (SIZE - 1 usable), used through its SP/SC _elem
 *     functions,
 * one entry per call ("single") and 32 per call ("burst": for Floem, up to 32
 * reserve/commit or acquire/release in a row). Both sides copy each entry from or to
 * a local buffer, as generated code does with per-packet state, and the consumer
 * checks every sequence number. A side that finds the queue full or empty pauses
 * PAUSES times (rte_pause) before it tries again. The four variants run alternately
 * REPEATS times; the table shows the median (min-max) in millions of entries per second.
 */
#define _GNU_SOURCE
#include "floem/queue.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#define ENTRY_BYTES 64
#define BURST 32
#define MAX_REPEATS 99

/* What travels: 64 bytes for rte_ring; the Floem payload is its first 56 bytes. */
struct elem {
    uint64_t seq;
    uint64_t words[7];
};
#define FLOEM_PAYLOAD (ENTRY_BYTES - FLOEM_QUEUE_ENTRY_HEADER_BYTES)

_Static_assert(sizeof(struct elem) == ENTRY_BYTES, "element size");

struct run {
    floem_queue_t *floem;
    struct rte_ring *ring;
    uint64_t entries;
    int ready, go;
    uint64_t checksum;
};

/* The CPUs for the producer and the consumer (the first two the process may use), or -1. */
static int cpus[2] = {-1, -1};

static void pin(int side)
{
    if (cpus[side] < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[side], &set);
    int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (err != 0) {
        fprintf(stderr, "queue_bench: cannot pin to CPU %d: %s\n", cpus[side], strerror(err));
        exit(1);
    }
}

static void choose_cpus(void)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2)
        return;
    for (int cpu = 0, n = 0; n < 2; cpu++)
        if (CPU_ISSET(cpu, &allowed))
            cpus[n++] = cpu;
}

static void wait_for_go(struct run *r)
{
    __atomic_fetch_add(&r->ready, 1, __ATOMIC_ACQ_REL);
    while (!__atomic_load_n(&r->go, __ATOMIC_ACQUIRE))
        rte_pause();
}

/* Pauses after a failed reserve, acquire, enqueue or dequeue (the same for both queues). */
static unsigned backoff_pauses = 1;

static void back_off(void)
{
    for (unsigned i = 0; i < backoff_pauses; i++)
        rte_pause();
}

static void fill(struct elem *e, uint64_t seq)
{
    e->seq = seq;
    for (int k = 0; k < 6; k++)
        e->words[k] = seq + (uint64_t)k;
}

static void check(const struct elem *e, uint64_t seq, uint64_t *sum)
{
    if (e->seq != seq || e->words[5] != seq + 5) {
        fprintf(stderr, "queue_bench: got entry %llu, expected %llu\n",
                (unsigned long long)e->seq, (unsigned long long)seq);
        abort();
    }
    *sum += e->words[2];
}

static void *floem_single_producer(void *arg)
{
    struct run *r = arg;
    struct elem e;
    pin(0);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries; i++) {
        void *p;
        fill(&e, i);
        while ((p = floem_enq_reserve(r->floem, false)) == NULL)
            back_off();
        memcpy(p, &e, FLOEM_PAYLOAD);
        floem_enq_commit(r->floem, p, 0, FLOEM_PAYLOAD);
    }
    return NULL;
}

static void *floem_single_consumer(void *arg)
{
    struct run *r = arg;
    struct elem e;
    uint64_t sum = 0;
    pin(1);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries; i++) {
        void *p;
        while ((p = floem_deq_acquire(r->floem, false, NULL)) == NULL)
            back_off();
        memcpy(&e, p, FLOEM_PAYLOAD);
        floem_deq_release(r->floem, p);
        check(&e, i, &sum);
    }
    r->checksum = sum;
    return NULL;
}

static void *floem_burst_producer(void *arg)
{
    struct run *r = arg;
    struct elem buf[BURST];
    pin(0);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries;) {
        unsigned n = r->entries - i < BURST ? (unsigned)(r->entries - i) : BURST;
        for (unsigned k = 0; k < n; k++)
            fill(&buf[k], i + k);
        unsigned sent = 0;
        while (sent < n) {
            void *p = floem_enq_reserve(r->floem, false);
            if (p == NULL) {
                back_off();
                continue;
            }
            memcpy(p, &buf[sent++], FLOEM_PAYLOAD);
            floem_enq_commit(r->floem, p, 0, FLOEM_PAYLOAD);
        }
        i += n;
    }
    return NULL;
}

static void *floem_burst_consumer(void *arg)
{
    struct run *r = arg;
    struct elem buf[BURST];
    uint64_t sum = 0;
    pin(1);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries;) {
        unsigned n = 0;
        void *p;
        while (n < BURST && (p = floem_deq_acquire(r->floem, false, NULL)) != NULL) {
            memcpy(&buf[n++], p, FLOEM_PAYLOAD);
            floem_deq_release(r->floem, p);
        }
        if (n == 0) {
            back_off();
            continue;
        }
        for (unsigned k = 0; k < n; k++)
            check(&buf[k], i + k, &sum);
        i += n;
    }
    r->checksum = sum;
    return NULL;
}

static void *ring_single_producer(void *arg)
{
    struct run *r = arg;
    struct elem e;
    pin(0);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries; i++) {
        fill(&e, i);
        while (rte_ring_sp_enqueue_elem(r->ring, &e, ENTRY_BYTES) != 0)
            back_off();
    }
    return NULL;
}

static void *ring_single_consumer(void *arg)
{
    struct run *r = arg;
    struct elem e;
    uint64_t sum = 0;
    pin(1);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries; i++) {
        while (rte_ring_sc_dequeue_elem(r->ring, &e, ENTRY_BYTES) != 0)
            back_off();
        check(&e, i, &sum);
    }
    r->checksum = sum;
    return NULL;
}

static void *ring_burst_producer(void *arg)
{
    struct run *r = arg;
    struct elem buf[BURST];
    pin(0);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries;) {
        unsigned n = r->entries - i < BURST ? (unsigned)(r->entries - i) : BURST;
        for (unsigned k = 0; k < n; k++)
            fill(&buf[k], i + k);
        unsigned sent = 0;
        while (sent < n) {
            unsigned m = rte_ring_sp_enqueue_burst_elem(r->ring, &buf[sent], ENTRY_BYTES,
                                                        n - sent, NULL);
            if (m == 0)
                back_off();
            sent += m;
        }
        i += n;
    }
    return NULL;
}

static void *ring_burst_consumer(void *arg)
{
    struct run *r = arg;
    struct elem buf[BURST];
    uint64_t sum = 0;
    pin(1);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries;) {
        unsigned n = rte_ring_sc_dequeue_burst_elem(r->ring, buf, ENTRY_BYTES, BURST, NULL);
        if (n == 0) {
            back_off();
            continue;
        }
        for (unsigned k = 0; k < n; k++)
            check(&buf[k], i + k, &sum);
        i += n;
    }
    r->checksum = sum;
    return NULL;
}

struct variant {
    const char *mode;   /* "single" or "burst 32" */
    bool ring;
    void *(*producer)(void *);
    void *(*consumer)(void *);
    double mps[MAX_REPEATS];
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One timed run; returns millions of entries per second. */
static double measure(struct variant *v, floem_queue_t *q, struct rte_ring *ring, uint64_t entries)
{
    struct run r = {.floem = q, .ring = ring, .entries = entries};
    pthread_t prod, cons;
    if (pthread_create(&cons, NULL, v->consumer, &r) != 0 ||
        pthread_create(&prod, NULL, v->producer, &r) != 0) {
        fprintf(stderr, "queue_bench: cannot start threads\n");
        exit(1);
    }
    while (__atomic_load_n(&r.ready, __ATOMIC_ACQUIRE) < 2)
        sched_yield();
    double t0 = now();
    __atomic_store_n(&r.go, 1, __ATOMIC_RELEASE);
    pthread_join(prod, NULL);
    pthread_join(cons, NULL);
    double secs = now() - t0;
    uint64_t expected = entries * (entries - 1) / 2 + 2 * entries;
    if (r.checksum != expected) {
        fprintf(stderr, "queue_bench: %s %s: bad checksum\n", v->ring ? "rte_ring" : "floem",
                v->mode);
        exit(1);
    }
    return (double)entries / secs / 1e6;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *xs, int n)
{
    double sorted[MAX_REPEATS];
    memcpy(sorted, xs, sizeof(double) * (size_t)n);
    qsort(sorted, (size_t)n, sizeof(double), by_value);
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

static double lowest(const double *xs, int n)
{
    double m = xs[0];
    for (int i = 1; i < n; i++)
        m = xs[i] < m ? xs[i] : m;
    return m;
}

static double highest(const double *xs, int n)
{
    double m = xs[0];
    for (int i = 1; i < n; i++)
        m = xs[i] > m ? xs[i] : m;
    return m;
}

int main(int argc, char **argv)
{
    uint64_t entries = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    int repeats = argc > 2 ? atoi(argv[2]) : 5;
    long size = argc > 3 ? atol(argv[3]) : 1024;
    backoff_pauses = argc > 4 ? (unsigned)atoi(argv[4]) : 1;
    if (argc > 5 || entries == 0 || repeats < 1 || repeats > MAX_REPEATS || size < 2 ||
        size > (1 << 20) || (size & (size - 1)) != 0 || backoff_pauses < 1) {
        fprintf(stderr, "usage: %s [ENTRIES [REPEATS <= %d [SIZE (power of two) [PAUSES >= 1]]]]\n",
                argv[0], MAX_REPEATS);
        return 2;
    }
    choose_cpus();
    char *eal_args[] = {argv[0], "--no-huge", "--no-pci", "-m", "256", "--no-shconf",
                        "--no-telemetry", "-l", "0", "--log-level=lib.eal:error"};
    if (rte_eal_init((int)(sizeof eal_args / sizeof eal_args[0]), eal_args) < 0) {
        fprintf(stderr, "queue_bench: rte_eal_init: %s\n", rte_strerror(rte_errno));
        return 1;
    }
    struct rte_ring *ring = rte_ring_create_elem("bench", ENTRY_BYTES, (unsigned)size,
                                                 SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (ring == NULL) {
        fprintf(stderr, "queue_bench: rte_ring_create_elem: %s\n", rte_strerror(rte_errno));
        return 1;
    }
    uint32_t entry_size = floem_queue_entry_size(FLOEM_PAYLOAD);
    size_t bytes = floem_queue_bytes((uint32_t)size, entry_size);
    floem_queue_t *q = aligned_alloc(64, bytes);
    if (q == NULL || entry_size != ENTRY_BYTES) {
        fprintf(stderr, "queue_bench: cannot set up the Floem queue\n");
        return 1;
    }
    memset(q, 0, bytes);
    floem_queue_init(q, (uint32_t)size, entry_size);

    struct variant variants[] = {
        {"single", false, floem_single_producer, floem_single_consumer, {0}},
        {"single", true, ring_single_producer, ring_single_consumer, {0}},
        {"burst 32", false, floem_burst_producer, floem_burst_consumer, {0}},
        {"burst 32", true, ring_burst_producer, ring_burst_consumer, {0}},
    };
    const int n_variants = (int)(sizeof variants / sizeof variants[0]);
    printf("%llu entries of %d bytes per run, queue size %ld, %d repeats, %u pause%s per failed "
           "poll, ", (unsigned long long)entries, ENTRY_BYTES, size, repeats, backoff_pauses,
           backoff_pauses == 1 ? "" : "s");
    if (cpus[0] >= 0)
        printf("producer on CPU %d, consumer on CPU %d\n", cpus[0], cpus[1]);
    else
        printf("threads not pinned (one CPU)\n");
    for (int rep = 0; rep < repeats; rep++)
        for (int k = 0; k < n_variants; k++) {
            struct variant *v = &variants[rep % 2 ? n_variants - 1 - k : k];
            v->mps[rep] = measure(v, q, ring, entries);
        }

    printf("\n| mode | Floem queue (Mentries/s) | rte_ring (Mentries/s) | Floem / rte_ring |\n");
    printf("| --- | --- | --- | --- |\n");
    for (int k = 0; k < n_variants; k += 2) {
        struct variant *f = &variants[k], *r = &variants[k + 1];
        double mf = median(f->mps, repeats), mr = median(r->mps, repeats);
        printf("| %s | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.2fx |\n", f->mode, mf,
               lowest(f->mps, repeats), highest(f->mps, repeats), mr, lowest(r->mps, repeats),
               highest(r->mps, repeats), mf / mr);
    }
    floem_queue_stats_t st;
    floem_queue_stats(q, &st);
    printf("\nFloem queue counters: %llu enqueued, %llu dequeued, %llu full spins\n",
           (unsigned long long)st.enqueued, (unsigned long long)st.dequeued,
           (unsigned long long)st.full_spins);
    rte_ring_free(ring);
    free(q);
    rte_eal_cleanup();
    return 0;
}
