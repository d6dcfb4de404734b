/* Floem host queue vs DPDK rte_ring: two threads moving 64-byte entries.
 *
 * Usage: queue_bench [ENTRIES [REPEATS [SIZES [PAUSES]]]]
 *        (defaults: 10000000 entries per run, 5 repeats, sizes 256,1024,4096, 1 pause)
 * Built and run by run.sh. For each queue size in SIZES (comma-separated), a producer
 * thread sends ENTRIES entries to a consumer thread, each pinned to its own CPU (the
 * first two the process may use), through
 *   - one Floem queue instance, single producer / single consumer, SIZE entries of
 *     64 bytes (8-byte header + 56-byte payload), for each Floem queue linked in
 *     (floem_side.c: the working tree's in both layouts, and any revisions run.sh was
 *     asked to compare), and
 *   - an rte_ring made with rte_ring_create_elem(count SIZE, esize 64,
 *     RING_F_SP_ENQ | RING_F_SC_DEQ) (SIZE - 1 usable), used through its SP/SC _elem
 *     functions,
 * one entry per call ("single") and 32 per call ("burst": for Floem, up to 32
 * reserve/commit or acquire/release in a row). Both sides copy each entry from or to
 * a local buffer, as generated code does with per-packet state, and the consumer
 * checks every sequence number. A side that finds the queue full or empty pauses
 * PAUSES times (rte_pause) before it tries again. All variants of all sizes run in turn,
 * REPEATS times (forwards, then backwards, alternately); the table shows the median
 * (min-max) in millions of entries per second, and each Floem queue's ratio to rte_ring.
 */
#define _GNU_SOURCE
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

#include "bench.h"

#define MAX_REPEATS 99
#define MAX_SIDES 8
#define MAX_SIZES 8

_Static_assert(sizeof(struct elem) == ENTRY_BYTES, "element size");

/* The CPUs for the producer and the consumer (the first two the process may use), or -1. */
static int cpus[2] = {-1, -1};

void pin(int side)
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

void wait_for_go(struct run *r)
{
    __atomic_fetch_add(&r->ready, 1, __ATOMIC_ACQ_REL);
    while (!__atomic_load_n(&r->go, __ATOMIC_ACQUIRE))
        rte_pause();
}

unsigned backoff_pauses = 1;

void bad_entry(uint64_t got, uint64_t expected)
{
    fprintf(stderr, "queue_bench: got entry %llu, expected %llu\n", (unsigned long long)got,
            (unsigned long long)expected);
    abort();
}

static void *ring_single_producer(void *arg)
{
    struct run *r = arg;
    struct elem e;
    pin(0);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries; i++) {
        fill(&e, i);
        while (rte_ring_sp_enqueue_elem(r->queue, &e, ENTRY_BYTES) != 0)
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
        while (rte_ring_sc_dequeue_elem(r->queue, &e, ENTRY_BYTES) != 0)
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
            unsigned m = rte_ring_sp_enqueue_burst_elem(r->queue, &buf[sent], ENTRY_BYTES,
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
        unsigned n = rte_ring_sc_dequeue_burst_elem(r->queue, buf, ENTRY_BYTES, BURST, NULL);
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

/* One queue of one size in one mode, and its results. */
struct variant {
    long size;
    const char *mode;   /* "single" or "burst 32" */
    const char *label;  /* "rte_ring" or the Floem side's */
    void *queue;
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
static double measure(struct variant *v, uint64_t entries)
{
    struct run r = {.queue = v->queue, .entries = entries};
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
        fprintf(stderr, "queue_bench: %s %s: bad checksum\n", v->label, v->mode);
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

/* The queue sizes of "256,1024,4096" (powers of two from 2 to 2^20), or 0 when malformed. */
static int parse_sizes(const char *text, long *sizes)
{
    int n = 0;
    for (const char *p = text; *p != '\0' && n < MAX_SIZES;) {
        char *end;
        long size = strtol(p, &end, 10);
        if (end == p || size < 2 || size > (1 << 20) || (size & (size - 1)) != 0 ||
            (*end != ',' && *end != '\0'))
            return 0;
        sizes[n++] = size;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    uint64_t entries = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    int repeats = argc > 2 ? atoi(argv[2]) : 5;
    long sizes[MAX_SIZES];
    int n_sizes = parse_sizes(argc > 3 ? argv[3] : "256,1024,4096", sizes);
    backoff_pauses = argc > 4 ? (unsigned)atoi(argv[4]) : 1;
    if (argc > 5 || entries == 0 || repeats < 1 || repeats > MAX_REPEATS || n_sizes == 0 ||
        backoff_pauses < 1) {
        fprintf(stderr, "usage: %s [ENTRIES [REPEATS <= %d [SIZES (powers of two, "
                "comma-separated) [PAUSES >= 1]]]]\n", argv[0], MAX_REPEATS);
        return 2;
    }
    int n_sides = 0;
    while (floem_sides[n_sides] != NULL)
        n_sides++;
    if (n_sides < 1 || n_sides > MAX_SIDES) {
        fprintf(stderr, "queue_bench: between 1 and %d Floem queues, not %d\n", MAX_SIDES,
                n_sides);
        return 2;
    }
    choose_cpus();
    char *eal_args[] = {argv[0], "--no-huge", "--no-pci", "-m", "256", "--no-shconf",
                        "--no-telemetry", "-l", "0", "--log-level=lib.eal:error"};
    if (rte_eal_init((int)(sizeof eal_args / sizeof eal_args[0]), eal_args) < 0) {
        fprintf(stderr, "queue_bench: rte_eal_init: %s\n", rte_strerror(rte_errno));
        return 1;
    }
    /* Per size, per mode: rte_ring, then each Floem queue. */
    static struct variant variants[MAX_SIZES * 2 * (MAX_SIDES + 1)];
    struct rte_ring *rings[MAX_SIZES];
    void *queues[MAX_SIZES][MAX_SIDES];
    const int per_mode = n_sides + 1, n_variants = n_sizes * 2 * per_mode;
    for (int z = 0; z < n_sizes; z++) {
        char name[32];
        snprintf(name, sizeof name, "bench%d", z);
        rings[z] = rte_ring_create_elem(name, ENTRY_BYTES, (unsigned)sizes[z], SOCKET_ID_ANY,
                                        RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (rings[z] == NULL) {
            fprintf(stderr, "queue_bench: rte_ring_create_elem: %s\n", rte_strerror(rte_errno));
            return 1;
        }
        for (int i = 0; i < n_sides; i++)
            if ((queues[z][i] = floem_sides[i]->make((uint32_t)sizes[z])) == NULL) {
                fprintf(stderr, "queue_bench: cannot set up %s\n", floem_sides[i]->label);
                return 1;
            }
        for (int m = 0; m < 2; m++) {
            struct variant *v = &variants[(z * 2 + m) * per_mode];
            v->size = sizes[z];
            v->mode = m == 0 ? "single" : "burst 32";
            v->label = "rte_ring";
            v->queue = rings[z];
            v->producer = m == 0 ? ring_single_producer : ring_burst_producer;
            v->consumer = m == 0 ? ring_single_consumer : ring_burst_consumer;
            for (int i = 0; i < n_sides; i++) {
                const struct floem_side *f = floem_sides[i];
                v[1 + i] = (struct variant){
                    .size = sizes[z], .mode = v->mode, .label = f->label, .queue = queues[z][i],
                    .producer = m == 0 ? f->single_producer : f->burst_producer,
                    .consumer = m == 0 ? f->single_consumer : f->burst_consumer,
                };
            }
        }
    }
    printf("%llu entries of %d bytes per run, %d repeats, %u pause%s per failed poll, ",
           (unsigned long long)entries, ENTRY_BYTES, repeats, backoff_pauses,
           backoff_pauses == 1 ? "" : "s");
    if (cpus[0] >= 0)
        printf("producer on CPU %d, consumer on CPU %d\n", cpus[0], cpus[1]);
    else
        printf("threads not pinned (one CPU)\n");
    for (int rep = 0; rep < repeats; rep++)
        for (int k = 0; k < n_variants; k++) {
            struct variant *v = &variants[rep % 2 ? n_variants - 1 - k : k];
            v->mps[rep] = measure(v, entries);
        }

    printf("\n| size | mode | rte_ring (Mentries/s) |");
    for (int i = 0; i < n_sides; i++)
        printf(" %s (Mentries/s) | %s / rte_ring |", floem_sides[i]->label, floem_sides[i]->label);
    printf("\n| ---: | --- | --- |");
    for (int i = 0; i < n_sides; i++)
        printf(" --- | ---: |");
    printf("\n");
    for (int k = 0; k < n_variants; k += per_mode) {
        struct variant *v = &variants[k];
        double mr = median(v->mps, repeats);
        printf("| %ld | %s | %.1f (%.1f-%.1f) |", v->size, v->mode, mr, lowest(v->mps, repeats),
               highest(v->mps, repeats));
        for (int i = 1; i <= n_sides; i++) {
            double mf = median(v[i].mps, repeats);
            printf(" %.1f (%.1f-%.1f) | %.2fx |", mf, lowest(v[i].mps, repeats),
                   highest(v[i].mps, repeats), mf / mr);
        }
        printf("\n");
    }
    printf("\n");
    for (int i = 0; i < n_sides; i++) {
        uint64_t enqueued = 0, dequeued = 0, full_spins = 0;
        for (int z = 0; z < n_sizes; z++) {
            uint64_t e, d, f;
            floem_sides[i]->counters(queues[z][i], &e, &d, &f);
            enqueued += e;
            dequeued += d;
            full_spins += f;
            free(queues[z][i]);
        }
        printf("%s counters (all sizes): %llu enqueued, %llu dequeued, %llu full spins\n",
               floem_sides[i]->label, (unsigned long long)enqueued,
               (unsigned long long)dequeued, (unsigned long long)full_spins);
    }
    for (int z = 0; z < n_sizes; z++)
        rte_ring_free(rings[z]);
    rte_eal_cleanup();
    return 0;
}
