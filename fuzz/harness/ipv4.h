/* The harnesses' own reading of Ethernet/IPv4 frames (big-endian fields by offset), for the
 * oracles of the harnesses of typed frames (frame_check.c, nf_firewall.c, nf_nat.c,
 * nf_lb.c) and of UDP replies (nf_sequencer.c, nf_flowclass.c). Independent of the code
 * under test: nothing here comes from library/ or runtime/.
 *
 * Offsets in a frame without IPv4 options: IPv4 at 14 (checksum 24, source 26, destination
 * 30, protocol 23), transport at 34 (ports 34 and 36; UDP checksum 40, TCP checksum 50).
 */
#ifndef FUZZ_IPV4_H
#define FUZZ_IPV4_H

#include "fuzz.h"

static inline uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get32(const uint8_t *p)
{
    return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static inline void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

/* Does an IPv4Frame describe this frame, by CheckFrame's rules (library/packets.py)? */
static inline int ipv4_frame_ok(const uint8_t *f, size_t len)
{
    if (len < 34 || get16(f + 12) != 0x0800 || f[14] != 0x45)
        return 0;
    size_t total = get16(f + 16);
    if (total < 20 || 14 + total > len || (get16(f + 20) & 0x3fff) != 0)
        return 0;
    if (f[23] == 17)
        return total >= 28 && get16(f + 38) >= 8 && get16(f + 38) <= total - 20;
    if (f[23] == 6)
        return total >= 40 && f[46] >> 4 == 5;
    return 0;
}

/* Where the transport checksum of such a frame is. */
static inline size_t l4_checksum_at(const uint8_t *f)
{
    return f[23] == 6 ? 50 : 40;
}

/* The one's complement sum of `n` bytes (big-endian words, an odd byte padded), folded. */
static inline uint32_t sum_bytes(uint32_t sum, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        sum += get16(p + i);
    if (n % 2)
        sum += (uint32_t)p[n - 1] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return sum;
}

static inline int ip_checksum_ok(const uint8_t *f)
{
    return sum_bytes(0, f + 14, 20) == 0xffff;
}

/* The transport checksum over the pseudo-header and the segment (a UDP checksum of 0: none). */
static inline int l4_checksum_ok(const uint8_t *f)
{
    size_t total = get16(f + 16), seg = total - 20;
    if (f[23] == 17 && get16(f + 40) == 0)
        return 1;
    uint32_t sum = sum_bytes(0, f + 26, 8) + f[23] + (uint32_t)seg;
    return sum_bytes(sum, f + 34, seg) == 0xffff;
}

/* After a rewrite of `before` (an IPv4Frame) into `after` with the checksums updated
 * incrementally: each checksum that verified verifies, one that did not does not, and a
 * UDP checksum of 0 ("none") is still 0. */
static inline void check_checksums_kept(const uint8_t *before, const uint8_t *after)
{
    FUZZ_CHECK(ip_checksum_ok(after) == ip_checksum_ok(before));
    FUZZ_CHECK(l4_checksum_ok(after) == l4_checksum_ok(before));
    if (before[23] == 17)
        FUZZ_CHECK((get16(after + 40) == 0) == (get16(before + 40) == 0));
}

/* `after` is `before` (`size` bytes, an IPv4Frame) but for its checksums. */
static inline int same_but_checksums(const uint8_t *before, const uint8_t *after, size_t size)
{
    size_t l4 = l4_checksum_at(before);
    return memcmp(after, before, 24) == 0 && memcmp(after + 26, before + 26, l4 - 26) == 0 &&
           memcmp(after + l4 + 2, before + l4 + 2, size - l4 - 2) == 0;
}

/* A value per flow (the 5-tuple: addresses, protocol, ports) for up to FLOW_TABLE flows. */
#define FLOW_TABLE 256
#define FLOW_KEY 13

struct flow_table {
    uint8_t keys[FLOW_TABLE][FLOW_KEY];
    uint64_t values[FLOW_TABLE];
    unsigned n;
};

/* The value of the flow of frame `f` (its transport header at `l4`) in `t`, 0 for a flow new
 * to the table; NULL when the flow is new and the table full. */
static inline uint64_t *flow_value(struct flow_table *t, const uint8_t *f, size_t l4)
{
    uint8_t key[FLOW_KEY];
    memcpy(key, f + 26, 8);                     /* source and destination addresses */
    key[8] = f[23];                             /* protocol */
    memcpy(key + 9, f + l4, 4);                 /* source and destination ports */
    unsigned i = 0;
    while (i < t->n && memcmp(t->keys[i], key, FLOW_KEY) != 0)
        i++;
    if (i == FLOW_TABLE)
        return NULL;
    if (i == t->n) {
        memcpy(t->keys[t->n++], key, FLOW_KEY);
        t->values[i] = 0;
    }
    return &t->values[i];
}

/* What examples/nf/nf.py's Reply makes of a UDP frame whose transport header is at `udp`:
 * Ethernet addresses, IPv4 addresses and UDP ports swapped, UDP checksum 0. */
static inline void udp_reply_of(uint8_t *f, size_t udp)
{
    uint8_t t[6];
    memcpy(t, f, 6);
    memmove(f, f + 6, 6);
    memcpy(f + 6, t, 6);
    memcpy(t, f + 26, 4);
    memmove(f + 26, f + 30, 4);
    memcpy(f + 30, t, 4);
    memcpy(t, f + udp, 2);
    memmove(f + udp, f + udp + 2, 2);
    memcpy(f + udp + 2, t, 2);
    put16(f + udp + 6, 0);
}

#endif
