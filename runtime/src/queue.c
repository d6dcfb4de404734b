/* Host queues: sizing, initialisation and counters (the fast path is inline in floem/queue.h). */
#include "floem/queue.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const LAYOUTS[] = {"turns", "ring"};

_Thread_local struct floem_queue_pending floem_queue_pending_;

void floem_queue_flush_pending_(void)
{
    struct floem_queue_pending *p = &floem_queue_pending_;
    for (unsigned i = 0; i < p->count; i++) {
        floem_ring_publish_(p->instances[i]);
        p->instances[i]->listed = 0;
    }
    p->count = 0;
}

size_t floem_queue_bytes(uint32_t size, uint32_t entry_size)
{
    size_t bytes = FLOEM_QUEUE_HEADER_BYTES + (size_t)size * entry_size;
    return (bytes + 63) & ~(size_t)63;
}

uint32_t floem_queue_entry_size(size_t payload)
{
    if (payload > UINT32_MAX - 2 * 64) {
        fprintf(stderr, "floem: queue payload of %zu bytes is too large\n", payload);
        abort();
    }
    size_t bytes = FLOEM_QUEUE_ENTRY_HEADER_BYTES + payload;
    return bytes <= 32 ? 32 : (uint32_t)((bytes + 63) & ~(size_t)63);
}

/* Record the shape and layout of an instance, or check that it was recorded alike. */
static void init(floem_queue_t *q, uint32_t size, uint32_t entry_size, uint32_t layout)
{
    if (size == 0 || (entry_size != 32 && (entry_size == 0 || entry_size % 64 != 0))) {
        fprintf(stderr, "floem: bad queue shape: %u entries of %u bytes (need >= 1 entry of "
                "32 bytes or a multiple of 64)\n", size, entry_size);
        abort();
    }
    if (((uintptr_t)q & 63) != 0) {
        fprintf(stderr, "floem: queue at %p is not 64-byte aligned\n", (void *)q);
        abort();
    }
    uint32_t old_size = __atomic_load_n(&q->size, __ATOMIC_RELAXED);
    uint32_t old_entry_size = __atomic_load_n(&q->entry_size, __ATOMIC_RELAXED);
    uint32_t old_layout = __atomic_load_n(&q->layout, __ATOMIC_RELAXED);
    if ((old_size != 0 && (old_size != size || old_layout != layout)) ||
        (old_entry_size != 0 && old_entry_size != entry_size)) {
        fprintf(stderr, "floem: queue already initialised with %u entries of %u bytes (%s), "
                "not %u of %u (%s)\n", old_size, old_entry_size, LAYOUTS[old_layout & 1], size,
                entry_size, LAYOUTS[layout]);
        abort();
    }
    __atomic_store_n(&q->size, size, __ATOMIC_RELAXED);
    __atomic_store_n(&q->entry_size, entry_size, __ATOMIC_RELAXED);
    __atomic_store_n(&q->layout, layout, __ATOMIC_RELAXED);
    uint32_t batch = size / 4 < 1 ? 1 : size / 4;
    __atomic_store_n(&q->batch, batch < FLOEM_QUEUE_RING_BATCH ? batch : FLOEM_QUEUE_RING_BATCH,
                     __ATOMIC_RELAXED);
}

void floem_queue_init(floem_queue_t *q, uint32_t size, uint32_t entry_size)
{
    init(q, size, entry_size, FLOEM_QUEUE_TURNS);
}

void floem_ring_init(floem_queue_t *q, uint32_t size, uint32_t entry_size)
{
    init(q, size, entry_size, FLOEM_QUEUE_RING);
}

void floem_queue_stats(const floem_queue_t *q, floem_queue_stats_t *out)
{
    bool ring = __atomic_load_n(&q->layout, __ATOMIC_RELAXED) == FLOEM_QUEUE_RING;
    /* A ring counts its entries by position: every reservation is committed. */
    out->enqueued = __atomic_load_n(ring ? &q->enq_cursor : &q->enqueued, __ATOMIC_RELAXED);
    out->dequeued = __atomic_load_n(ring ? &q->deq_cursor : &q->dequeued, __ATOMIC_RELAXED);
    out->dropped = __atomic_load_n(&q->dropped, __ATOMIC_RELAXED);
    out->full_spins = __atomic_load_n(&q->full_spins, __ATOMIC_RELAXED);
}

void floem_queue_report(FILE *out, const char *name, const char *process,
                        floem_queue_t *const *instances, int count)
{
    for (int i = 0; i < count; i++) {
        floem_queue_stats_t s;
        floem_queue_stats(instances[i], &s);
        fprintf(out, "floem: queue %s[%d] (process %s): enqueued %llu, dequeued %llu, "
                     "dropped %llu, full-spins %llu\n",
                name, i, process, (unsigned long long)s.enqueued, (unsigned long long)s.dequeued,
                (unsigned long long)s.dropped, (unsigned long long)s.full_spins);
    }
}
