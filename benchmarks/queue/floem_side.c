/* The Floem side of queue_bench: producer and consumer threads on one Floem queue instance,
 * single producer / single consumer, one entry per call or up to 32 in a row.
 *
 * run.sh compiles this file once per queue implementation under test, each time against
 * that implementation's floem/queue.h, with -DFLOEM_SIDE=<name> and -DFLOEM_SIDE_LABEL=
 * "<label>" (the working tree's, or a git revision's); the global functions of that
 * revision's queue.c are renamed in both objects so that several link into one program.
 */
#include "floem/queue.h"

#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifndef FLOEM_SIDE
#define FLOEM_SIDE floem_side_work
#endif
#ifndef FLOEM_SIDE_LABEL
#define FLOEM_SIDE_LABEL "Floem queue"
#endif

#define FLOEM_PAYLOAD (ENTRY_BYTES - FLOEM_QUEUE_ENTRY_HEADER_BYTES)

/* The layout under test: FLOEM_SIDE_RING, the ring layout (queues between host threads; a
 * producer's turn ends with floem_queue_flush, here after each entry or burst); else the
 * turns in entries (queues the NIC reaches). */
#ifdef FLOEM_SIDE_RING
#define INIT floem_ring_init
#define RESERVE(q) floem_ring_enq_reserve(q)
#define COMMIT floem_ring_enq_commit
#define TURN_END() floem_queue_flush()
#define ACQUIRE(q) floem_ring_deq_acquire(q, NULL)
#define RELEASE floem_ring_deq_release
#else
#define INIT floem_queue_init
#define RESERVE(q) floem_enq_reserve(q, false)
#define COMMIT floem_enq_commit
#define TURN_END() ((void)0)
#define ACQUIRE(q) floem_deq_acquire(q, false, NULL)
#endif

/* The release call of the revision compiled: it takes the consumer's `multi` since the
 * single consumer's counted release (FLOEM_QUEUE_COUNTED), and the payload alone before. */
#ifndef RELEASE
#ifdef FLOEM_QUEUE_COUNTED
#define RELEASE(q, p) floem_deq_release(q, false, p)
#else
#define RELEASE(q, p) floem_deq_release(q, p)
#endif
#endif

static void *make(uint32_t size)
{
    uint32_t entry_size = floem_queue_entry_size(FLOEM_PAYLOAD);
    size_t bytes = floem_queue_bytes(size, entry_size);
    floem_queue_t *q = aligned_alloc(64, bytes);
    if (q == NULL || entry_size != ENTRY_BYTES)
        return NULL;
    memset(q, 0, bytes);
    INIT(q, size, entry_size);
    return q;
}

static void counters(void *queue, uint64_t *enqueued, uint64_t *dequeued, uint64_t *full_spins)
{
    floem_queue_stats_t st;
    floem_queue_stats(queue, &st);
    *enqueued = st.enqueued;
    *dequeued = st.dequeued;
    *full_spins = st.full_spins;
}

static void *single_producer(void *arg)
{
    struct run *r = arg;
    floem_queue_t *q = r->queue;
    struct elem e;
    pin(0);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries; i++) {
        void *p;
        fill(&e, i);
        while ((p = RESERVE(q)) == NULL)
            back_off();
        memcpy(p, &e, FLOEM_PAYLOAD);
        COMMIT(q, p, 0, FLOEM_PAYLOAD);
        TURN_END();
    }
    return NULL;
}

static void *single_consumer(void *arg)
{
    struct run *r = arg;
    floem_queue_t *q = r->queue;
    struct elem e;
    uint64_t sum = 0;
    pin(1);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries; i++) {
        void *p;
        while ((p = ACQUIRE(q)) == NULL)
            back_off();
        memcpy(&e, p, FLOEM_PAYLOAD);
        RELEASE(q, p);
        check(&e, i, &sum);
    }
    r->checksum = sum;
    return NULL;
}

static void *burst_producer(void *arg)
{
    struct run *r = arg;
    floem_queue_t *q = r->queue;
    struct elem buf[BURST];
    pin(0);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries;) {
        unsigned n = r->entries - i < BURST ? (unsigned)(r->entries - i) : BURST;
        for (unsigned k = 0; k < n; k++)
            fill(&buf[k], i + k);
        unsigned sent = 0;
        while (sent < n) {
            void *p = RESERVE(q);
            if (p == NULL) {
                back_off();
                continue;
            }
            memcpy(p, &buf[sent++], FLOEM_PAYLOAD);
            COMMIT(q, p, 0, FLOEM_PAYLOAD);
        }
        TURN_END();
        i += n;
    }
    return NULL;
}

static void *burst_consumer(void *arg)
{
    struct run *r = arg;
    floem_queue_t *q = r->queue;
    struct elem buf[BURST];
    uint64_t sum = 0;
    pin(1);
    wait_for_go(r);
    for (uint64_t i = 0; i < r->entries;) {
        unsigned n = 0;
        void *p;
        while (n < BURST && (p = ACQUIRE(q)) != NULL) {
            memcpy(&buf[n++], p, FLOEM_PAYLOAD);
            RELEASE(q, p);
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

const struct floem_side FLOEM_SIDE = {
    .label = FLOEM_SIDE_LABEL,
    .make = make,
    .counters = counters,
    .single_producer = single_producer,
    .single_consumer = single_consumer,
    .burst_producer = burst_producer,
    .burst_consumer = burst_consumer,
};
