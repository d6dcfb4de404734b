/* What queue_bench.c shares with floem_side.c, which run.sh compiles once per Floem queue
 * under test (the working tree's, and the revisions in QUEUE_REVS). */
#ifndef QUEUE_BENCH_H
#define QUEUE_BENCH_H

#include <stdint.h>

#define ENTRY_BYTES 64
#define BURST 32

/* What travels: 64 bytes for rte_ring; the Floem payload is its first 56 bytes. */
struct elem {
    uint64_t seq;
    uint64_t words[7];
};

/* One timed run: the queue under test, how many entries, and what the consumer saw. */
struct run {
    void *queue;            /* a Floem queue instance or an rte_ring */
    uint64_t entries;
    int ready, go;
    uint64_t checksum;
};

/* A Floem queue implementation: its thread bodies (arg: a struct run) and its setup. */
struct floem_side {
    const char *label;
    void *(*make)(uint32_t size);    /* a zero-filled, initialised instance of 64-byte entries */
    void (*counters)(void *queue, uint64_t *enqueued, uint64_t *dequeued, uint64_t *full_spins);
    void *(*single_producer)(void *);
    void *(*single_consumer)(void *);
    void *(*burst_producer)(void *);
    void *(*burst_consumer)(void *);
};

/* The Floem queues under test, NULL-terminated (sides.c, written by run.sh). */
extern const struct floem_side *const floem_sides[];

/* Setup helpers in queue_bench.c. */
void pin(int side);                 /* 0: the producer's CPU, 1: the consumer's */
void wait_for_go(struct run *r);
void bad_entry(uint64_t got, uint64_t expected);    /* reports and aborts */

/* Pauses after a failed reserve, acquire, enqueue or dequeue (the same for every queue). */
extern unsigned backoff_pauses;

/* Per-entry helpers, inline in every queue's loops alike. */
static inline void back_off(void)
{
    for (unsigned i = 0; i < backoff_pauses; i++)
        __builtin_ia32_pause();     /* what rte_pause() is on x86 */
}

static inline void fill(struct elem *e, uint64_t seq)
{
    e->seq = seq;
    for (int k = 0; k < 6; k++)
        e->words[k] = seq + (uint64_t)k;
}

static inline void check(const struct elem *e, uint64_t seq, uint64_t *sum)
{
    if (e->seq != seq || e->words[5] != seq + 5)
        bad_entry(e->seq, seq);
    *sum += e->words[2];
}

#endif
