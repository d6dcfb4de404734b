/* The pool of kept frames (floem/frames.h): a table of slots, a stack of free ones, a lock. */
#include "floem/frames.h"

#include <stdlib.h>

#include "floem/runtime.h"

struct slot {
    void *buffer;           /* NULL: free */
    void *data;
    uint64_t kept_at;       /* floem_now_ns() when kept */
    uint32_t generation;    /* grows each time the slot is reused */
};

static struct slot *slots;
static uint32_t *free_slots;        /* a stack of free slot numbers */
static uint32_t n_slots, n_free, hand;
static uint64_t timeout;
static floem_frames_stats_t counts;
static int lock;

/* Give a frame's buffer back to the network (a build without packet I/O has no buffers). */
static void give_back(floem_packet_t *pkt)
{
#if defined(FLOEM_NET_UDP) || defined(FLOEM_NET_TCP) || defined(FLOEM_NET_PCAP) \
    || defined(FLOEM_NET_DPDK) || defined(FLOEM_NET_XDP)
    floem_net_free(pkt);
#else
    (void)pkt;
#endif
}

static void acquire(void)
{
    floem_spin_lock(&lock);
}

static void release(void)
{
    floem_spin_unlock(&lock);
}

void floem_frames_init(uint32_t n, uint64_t timeout_ns)
{
    slots = n ? calloc(n, sizeof *slots) : NULL;
    free_slots = n ? malloc(n * sizeof *free_slots) : NULL;
    if (n && (slots == NULL || free_slots == NULL)) {
        fprintf(stderr, "floem: frames: no memory for %u kept frames\n", n);
        abort();
    }
    for (uint32_t i = 0; i < n; i++)
        free_slots[i] = n - 1 - i;          /* slot 0 on top */
    n_slots = n_free = n;
    hand = 0;
    timeout = timeout_ns;
    counts = (floem_frames_stats_t){.slots = n};
}

/* Empty slot i (the lock held) and hand its frame to the caller. */
static floem_packet_t vacate(uint32_t i)
{
    floem_packet_t pkt = {slots[i].data, 0, slots[i].buffer};
    slots[i].buffer = NULL;
    slots[i].generation++;
    free_slots[n_free++] = i;
    return pkt;
}

void floem_frames_finalize(void)
{
    for (uint32_t i = 0; i < n_slots; i++)
        if (slots[i].buffer != NULL) {
            floem_packet_t pkt = vacate(i);
            counts.expired++;
            give_back(&pkt);
        }
    free(slots);
    free(free_slots);
    slots = NULL;
    free_slots = NULL;
    n_slots = n_free = 0;
}

static uint64_t reference(uint32_t i)
{
    return (uint64_t)slots[i].generation << 32 | (uint64_t)i << 1 | 1u;
}

uint64_t floem_frame_keep(void *buffer, void *data)
{
    if (n_slots == 0)
        return 0;
    uint64_t now = floem_now_ns();
    floem_packet_t expired = {NULL, 0, NULL};
    acquire();
    uint32_t looked = hand;
    hand = hand + 1 == n_slots ? 0 : hand + 1;
    if (slots[looked].buffer != NULL && now - slots[looked].kept_at > timeout) {
        expired = vacate(looked);
        counts.expired++;
    }
    uint64_t ref = 0;
    if (n_free > 0) {
        uint32_t i = free_slots[--n_free];
        slots[i] = (struct slot){buffer, data, now, slots[i].generation};
        ref = reference(i);
        counts.kept++;
    } else {
        counts.full++;
    }
    release();
    if (expired.buffer != NULL)
        give_back(&expired);
    return ref;
}

/* The slot `ref` names while it still holds that frame, else n_slots (the lock held). */
static uint32_t find(uint64_t ref)
{
    uint32_t i = (uint32_t)(ref >> 1) & 0x7fffffffu;
    if ((ref & 1u) == 0 || i >= n_slots || slots[i].buffer == NULL ||
        slots[i].generation != (uint32_t)(ref >> 32))
        return n_slots;
    return i;
}

bool floem_frame_take(uint64_t ref, void **buffer, void **data)
{
    acquire();
    uint32_t i = find(ref);
    bool found = i < n_slots;
    if (found) {
        floem_packet_t pkt = vacate(i);
        *buffer = pkt.buffer;
        *data = pkt.data;
        counts.taken++;
    } else {
        counts.stale++;
    }
    release();
    return found;
}

void floem_frame_drop_crossed(void *buffer)
{
    if (buffer == NULL)         /* a frame that crossed whole: its bytes were all in the entry */
        return;
    if (!floem_frame_is_ref(buffer)) {          /* a build without packet I/O has no buffers */
        floem_packet_t pkt = {NULL, 0, buffer};
        give_back(&pkt);
        return;
    }
    floem_packet_t kept = {NULL, 0, NULL};
    acquire();
    if (n_slots == 0) {
        counts.dropped++;                   /* kept elsewhere: reclaimed there in time */
    } else {
        uint32_t i = find((uint64_t)(uintptr_t)buffer);
        if (i < n_slots) {
            kept = vacate(i);
            counts.dropped++;
        } else {
            counts.stale++;
        }
    }
    release();
    if (kept.buffer != NULL)
        give_back(&kept);
}

void floem_frames_stats(floem_frames_stats_t *out)
{
    acquire();
    *out = counts;
    out->held = n_slots - n_free;
    release();
}

void floem_frames_report(FILE *out, const char *process)
{
    floem_frames_stats_t st;
    floem_frames_stats(&st);
    fprintf(out, "floem: frames (process %s): kept %llu, taken %llu, dropped %llu, expired %llu, "
            "held %u of %u, full %llu, stale %llu\n", process, (unsigned long long)st.kept,
            (unsigned long long)st.taken, (unsigned long long)st.dropped,
            (unsigned long long)st.expired, st.held, st.slots, (unsigned long long)st.full,
            (unsigned long long)st.stale);
}
