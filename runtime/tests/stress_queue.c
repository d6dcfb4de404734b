/* Stress test of the host queues: several producer and consumer threads on one instance.
 *
 * Usage: stress_queue [SCALE]   (default 1: about 10 million entries in all)
 * Build: cc -std=c11 -Wall -Wextra -Werror -pthread -Iruntime/include
 *        runtime/tests/stress_queue.c runtime/src/queue.c -o stress_queue
 * Meant to run under -fsanitize=thread as well as optimised.
 *
 * Each entry carries its producer id and sequence number, and fills the rest of the
 * payload with words derived from them. Checked: no entry lost or delivered twice
 * (lossless runs), every consumer sees each producer's entries in sequence order
 * (exactly consecutive with one consumer), content and channel intact, and the
 * counters match. Producers now and then hold a reservation across a yield, and
 * consumers hold an entry, so commits and releases happen out of order. The ring layout's
 * producer ends a turn (floem_queue_flush) after every few entries, as a generated
 * thread does.
 * Prints one line per scenario and "ok", or names the failed check and aborts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/queue.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 8

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: check failed: %s (scenario %s)\n", __FILE__, __LINE__, \
                    #cond, scenario->name);                                                \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

struct scenario {
    const char *name;
    int producers, consumers;
    bool multi_producer, multi_consumer, lossy, ring;
    uint32_t size, entry_size;
    double entries;  /* in all, at scale 1 */
};

static const struct scenario SCENARIOS[] = {
    {"spsc size 1000 x 64B", 1, 1, false, false, false, false, 1000, 64, 4e6},
    {"spsc size 3 x 32B", 1, 1, false, false, false, false, 3, 32, 4e5},
    {"mpmc 3x3 size 100 x 64B", 3, 3, true, true, false, false, 100, 64, 2e6},
    {"mpmc 2x2 size 1 x 32B", 2, 2, true, true, false, false, 1, 32, 3e5},
    {"mpsc 4x1 size 7 x 32B", 4, 1, true, false, false, false, 7, 32, 1e6},
    {"spmc 1x3 size 64 x 128B", 1, 3, false, true, false, false, 64, 128, 1e6},
    {"mpmc lossy 3x2 size 5 x 64B", 3, 2, true, true, true, false, 5, 64, 1.5e6},
    {"ring size 1000 x 64B", 1, 1, false, false, false, true, 1000, 64, 4e6},
    {"ring size 3 x 32B", 1, 1, false, false, false, true, 3, 32, 4e5},
    {"ring size 64 x 128B", 1, 1, false, false, false, true, 64, 128, 1e6},
    {"ring lossy size 5 x 64B", 1, 1, false, false, true, true, 5, 64, 1e6},
};

/* The payload: who, which, and a pattern that must survive the trip. */
struct item {
    uint32_t producer;
    uint32_t pad;
    uint64_t seq;
    uint64_t words[];
};

static const struct scenario *scenario;
static floem_queue_t *queue;
static uint64_t per_producer;
static size_t n_words;            /* pattern words in each payload */
static uint8_t *seen;             /* deliveries of (producer, seq) */
static int started, producers_done;
static uint64_t delivered, dropped_here;

static uint64_t pattern(uint32_t producer, uint64_t seq, size_t i)
{
    return (seq * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)producer << 48) ^ (i * 0x2545f4914f6cdd1dull);
}

/* The calls of the scenario's layout. */
static void *reserve(void)
{
    return scenario->ring ? floem_ring_enq_reserve(queue)
                          : floem_enq_reserve(queue, scenario->multi_producer);
}

static void *acquire(uint16_t *channel)
{
    return scenario->ring ? floem_ring_deq_acquire(queue, channel)
                          : floem_deq_acquire(queue, scenario->multi_consumer, channel);
}

static uint16_t channel_of(uint32_t producer, uint64_t seq)
{
    return (uint16_t)(seq * 31 + producer);
}

static void start_together(void)
{
    __atomic_fetch_add(&started, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < scenario->producers + scenario->consumers)
        sched_yield();
}

/* Spin a little, then give the core away (two cores run up to seven threads). */
static void back_off(unsigned *spins)
{
    if (++*spins % 256 == 0)
        sched_yield();
#if defined(__x86_64__) || defined(__i386__)
    else
        __builtin_ia32_pause();
#endif
}

static void *produce(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    start_together();
    uint64_t dropped = 0;
    for (uint64_t seq = 0; seq < per_producer; seq++) {
        struct item *it;
        unsigned spins = 0;
        while ((it = reserve()) == NULL) {
            if (scenario->lossy) {
                floem_enq_drop(queue);
                dropped++;
                break;
            }
            back_off(&spins);
        }
        if (it == NULL)
            continue;
        it->producer = id;
        it->seq = seq;
        for (size_t i = 0; i < n_words; i++)
            it->words[i] = pattern(id, seq, i);
        if (seq % 4096 == 17)
            sched_yield();
        if (scenario->ring) {
            floem_ring_enq_commit(queue, it, channel_of(id, seq), sizeof *it + n_words * 8);
            if (seq % 5 == 0)
                floem_queue_flush();        /* a turn ends */
        } else {
            floem_enq_commit(queue, it, channel_of(id, seq), sizeof *it + n_words * 8);
        }
    }
    floem_queue_flush();
    __atomic_fetch_add(&dropped_here, dropped, __ATOMIC_RELAXED);
    return NULL;
}

static void *consume(void *arg)
{
    (void)arg;
    uint64_t *last = malloc(sizeof(uint64_t) * (size_t)scenario->producers);
    CHECK(last != NULL);
    for (int p = 0; p < scenario->producers; p++)
        last[p] = UINT64_MAX;
    start_together();
    uint64_t count = 0;
    unsigned spins = 0;
    bool done = false;
    for (;;) {
        uint16_t channel;
        struct item *it = acquire(&channel);
        if (it == NULL) {
            if (done)
                break;
            done = __atomic_load_n(&producers_done, __ATOMIC_ACQUIRE);
            back_off(&spins);
            continue;
        }
        uint32_t p = it->producer;
        uint64_t seq = it->seq;
        CHECK(p < (uint32_t)scenario->producers && seq < per_producer);
        CHECK(channel == channel_of(p, seq));
        if (last[p] != UINT64_MAX)
            CHECK(seq > last[p]);
        if (!scenario->multi_consumer && !scenario->lossy)
            CHECK(seq == last[p] + 1);
        last[p] = seq;
        for (size_t i = 0; i < n_words; i++)
            CHECK(it->words[i] == pattern(p, seq, i));
        __atomic_fetch_add(&seen[p * per_producer + seq], 1, __ATOMIC_RELAXED);
        if (++count % 4096 == 5)
            sched_yield();
        if (scenario->ring)
            floem_ring_deq_release(queue, it);
        else
            floem_deq_release(queue, it);
    }
    __atomic_fetch_add(&delivered, count, __ATOMIC_RELAXED);
    free(last);
    return NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run(const struct scenario *s, double scale)
{
    scenario = s;
    per_producer = (uint64_t)(s->entries * scale / s->producers) + 1;
    uint64_t total = per_producer * (uint64_t)s->producers;
    n_words = (s->entry_size - FLOEM_QUEUE_ENTRY_HEADER_BYTES - sizeof(struct item)) / 8;
    size_t bytes = floem_queue_bytes(s->size, s->entry_size);
    queue = aligned_alloc(64, bytes);
    seen = calloc(total, 1);
    CHECK(queue != NULL && seen != NULL);
    memset(queue, 0, bytes);
    if (s->ring)
        floem_ring_init(queue, s->size, s->entry_size);
    else
        floem_queue_init(queue, s->size, s->entry_size);
    started = producers_done = 0;
    delivered = dropped_here = 0;

    pthread_t producers[MAX_THREADS], consumers[MAX_THREADS];
    double t0 = now();
    for (int i = 0; i < s->consumers; i++)
        CHECK(pthread_create(&consumers[i], NULL, consume, NULL) == 0);
    for (int i = 0; i < s->producers; i++)
        CHECK(pthread_create(&producers[i], NULL, produce, (void *)(uintptr_t)i) == 0);
    for (int i = 0; i < s->producers; i++)
        CHECK(pthread_join(producers[i], NULL) == 0);
    __atomic_store_n(&producers_done, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < s->consumers; i++)
        CHECK(pthread_join(consumers[i], NULL) == 0);
    double secs = now() - t0;

    floem_queue_stats_t st;
    floem_queue_stats(queue, &st);
    CHECK(acquire(NULL) == NULL);
    CHECK(st.enqueued == delivered && st.dequeued == delivered);
    CHECK(st.dropped == dropped_here && delivered + dropped_here == total);
    if (!s->lossy)
        CHECK(st.dropped == 0 && delivered == total);
    for (uint64_t i = 0; i < total; i++)
        CHECK(seen[i] <= 1 && (s->lossy || seen[i] == 1));
    printf("%-28s %9llu entries %8llu dropped %9llu full spins  %6.2f s  %6.2f Mentries/s\n",
           s->name, (unsigned long long)delivered, (unsigned long long)st.dropped,
           (unsigned long long)st.full_spins, secs, delivered / secs / 1e6);
    free(queue);
    free(seen);
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    if (argc > 2 || !(scale > 0)) {
        fprintf(stderr, "usage: %s [SCALE > 0]\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < sizeof SCENARIOS / sizeof SCENARIOS[0]; i++)
        run(&SCENARIOS[i], scale);
    printf("ok\n");
    return 0;
}
