/* Floem frames kept where they arrived: the NIC side of payload slicing (docs/slicing.md).
 *
 * A frame received by the process that owns the network port (the NIC process when the
 * packet I/O elements run on the NIC) may cross a queue to the other device. When the
 * compiler finds that the other side reads and writes only the frame's first bytes (its
 * header window), the enqueue keeps the frame's buffer here, payload and all, and sends
 * the window with a reference to the kept buffer. When the frame comes back, the dequeue
 * takes the buffer out with that reference and writes the (possibly rewritten) window
 * over the frame's first bytes: the frame is whole again, in the buffer it arrived in.
 *
 * The pool is bounded: `slots` kept frames at most. A reference is
 *     generation << 32 | slot << 1 | 1
 * and a slot's generation grows each time it is reused, so a reference whose frame was
 * taken back (or reclaimed) never matches again: a stale or duplicated reference is
 * refused and counted, never splices another frame's payload. References are odd and
 * buffer addresses even, so a frame's buffer field holds either a buffer of the process
 * it is in, or a reference to a frame kept elsewhere (floem_frame_is_ref).
 *
 * A frame that does not come back within `timeout_ns` is reclaimed: its buffer goes back
 * to the network and the slot is counted as expired. Reclaiming is done by the keeps
 * themselves: each keep looks at the next slot round the pool as well, so a pool in use is
 * swept once every `slots` keeps (no thread of its own). A full pool keeps nothing (the
 * frame then crosses whole: counted as `full`), and dropping is never the pool's doing.
 *
 * Every function may be called from any thread of the process (one lock).
 */
#ifndef FLOEM_FRAMES_H
#define FLOEM_FRAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "floem/net.h"

typedef struct {
    uint64_t kept;      /* frames kept (each keep that returned a reference) */
    uint64_t taken;     /* frames taken back by their reference */
    uint64_t dropped;   /* frames given back by dropping their reference (in a process
                         * without a pool: references dropped, the frame kept elsewhere) */
    uint64_t expired;   /* kept frames reclaimed after the timeout */
    uint64_t full;      /* keeps refused: every slot held (the frame crossed whole) */
    uint64_t stale;     /* references taken or dropped that match no frame held: taken
                         * or dropped before, reclaimed, or never made here */
    uint32_t held;      /* slots holding a frame now: kept = taken + dropped + expired + held */
    uint32_t slots;
} floem_frames_stats_t;

/* Make the pool of this process: `slots` frames at most (0: never keep), reclaimed after
 * `timeout_ns`. Called by the generated floem_init of the process owning the port. */
void floem_frames_init(uint32_t slots, uint64_t timeout_ns);
/* Give the frames still kept back to the network (counted as expired); free the pool. */
void floem_frames_finalize(void);

/* Byte order of header members (a typed frame's members are in network order). */
static inline uint16_t floem_ntoh16(uint16_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return __builtin_bswap16(v);
#else
    return v;
#endif
}

static inline uint32_t floem_ntoh32(uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return __builtin_bswap32(v);
#else
    return v;
#endif
}

#define floem_hton16 floem_ntoh16
#define floem_hton32 floem_ntoh32

/* The Internet checksum `csum` (a header member, as stored) after a 16-bit word of what it
 * covers changed from `old` to `new` (members as stored too): RFC 1624, eqn. 3. The sum is
 * the same in either byte order, so no member needs converting. */
static inline uint16_t floem_csum_replace16(uint16_t csum, uint16_t old, uint16_t new)
{
    uint32_t sum = (uint16_t)~csum + (uint32_t)(uint16_t)~old + new;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* The same for a 32-bit member (an IPv4 address): two 16-bit words. */
static inline uint16_t floem_csum_replace32(uint16_t csum, uint32_t old, uint32_t new)
{
    csum = floem_csum_replace16(csum, (uint16_t)(old >> 16), (uint16_t)(new >> 16));
    return floem_csum_replace16(csum, (uint16_t)old, (uint16_t)new);
}

static inline bool floem_frame_is_ref(const void *buffer)
{
    return ((uintptr_t)buffer & 1u) != 0;
}

/* Keep the frame whose bytes start at `data` in `buffer`: its reference, or 0 when the
 * pool is full or off (the caller then sends the frame whole and frees it). */
uint64_t floem_frame_keep(void *buffer, void *data);
/* Take back the frame kept under `ref`: its buffer and data, or false (counted) when the
 * reference is stale. */
bool floem_frame_take(uint64_t ref, void **buffer, void **data);
/* Give a frame back without sending it: a buffer of this process goes back to the network
 * (floem_net_free); a reference gives back the frame this process keeps under it (a stale
 * one is counted), and in a process without a pool is only counted (the frame is
 * reclaimed where it is kept, after the timeout); NULL (a frame that crossed whole, away
 * from its port: no buffer) does nothing. The common case, a buffer, is inline; in a
 * process whose frames never cross (the compiler defines FLOEM_FRAMES_OWN there) it is the
 * only case, and nothing is tested. */
void floem_frame_drop_crossed(void *buffer);
static inline void floem_frame_drop(void *buffer)
{
#if defined(FLOEM_NET_UDP) || defined(FLOEM_NET_TCP) || defined(FLOEM_NET_PCAP) \
    || defined(FLOEM_NET_DPDK) || defined(FLOEM_NET_XDP)
#ifndef FLOEM_FRAMES_OWN
    if (__builtin_expect(buffer == NULL || floem_frame_is_ref(buffer), 0)) {
        floem_frame_drop_crossed(buffer);
        return;
    }
#endif
    floem_packet_t pkt = {NULL, 0, buffer};         /* a buffer of this process's port */
    floem_net_free(&pkt);
#else
    floem_frame_drop_crossed(buffer);
#endif
}

void floem_frames_stats(floem_frames_stats_t *out);
/* One line: "floem: frames (process P): kept K, taken T, dropped D, expired E, held H of N,
 * full F, stale S". */
void floem_frames_report(FILE *out, const char *process);

#endif
