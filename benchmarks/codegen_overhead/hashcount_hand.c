/* Hand-written parse-hash-count: what hashcount.py does, written directly in C.
 *
 * Receive bursts of 32 frames; check each like CheckUDP (counting passed,
 * dropped and drops by reason); hash the UDP payload (the key) with Bob
 * Jenkins' lookup3 hashlittle, seed 0, inlined here (the same function as
 * the library's floem_hashlittle, with word loads: this file assumes a
 * little-endian host); add one to bucket hash % BUCKETS; give every frame
 * back. Packet I/O is the Floem runtime's (floem/net.h, pcap backend), the
 * same calls the generated program makes. Prints the same checksum of the
 * buckets as hashcount.py's main. With -DHAND_LIBRARY_CALLS the check and
 * the hash call the library's functions out of line instead.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "hand.h"

#define BATCH 32
#define BUCKETS 1024

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "hashcount_hand.c loads key words in little-endian order"
#endif

static uint64_t passed, dropped, reasons[V_VERDICTS];
static uint64_t buckets[BUCKETS];

#ifdef HAND_LIBRARY_CALLS
#include "hash.h"
#define hashlittle floem_hashlittle
#else
static inline uint32_t rot(uint32_t x, int k)
{
    return x << k | x >> (32 - k);
}

static inline uint32_t load32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint32_t hashlittle(const void *key, size_t length, uint32_t initval)
{
    const uint8_t *k = key;
    uint32_t a, b, c;
    a = b = c = 0xdeadbeef + (uint32_t)length + initval;
    while (length > 12) {
        a += load32(k);
        b += load32(k + 4);
        c += load32(k + 8);
        a -= c; a ^= rot(c, 4);  c += b;
        b -= a; b ^= rot(a, 6);  a += c;
        c -= b; c ^= rot(b, 8);  b += a;
        a -= c; a ^= rot(c, 16); c += b;
        b -= a; b ^= rot(a, 19); a += c;
        c -= b; c ^= rot(b, 4);  b += a;
        length -= 12;
        k += 12;
    }
    if (length == 0)
        return c;
    uint8_t tail[12] = {0};
    memcpy(tail, k, length);
    a += load32(tail);
    b += load32(tail + 4);
    c += load32(tail + 8);
    c ^= b; c -= rot(b, 14);
    a ^= c; a -= rot(c, 11);
    b ^= a; b -= rot(a, 25);
    c ^= b; c -= rot(b, 16);
    a ^= c; a -= rot(c, 4);
    b ^= a; b -= rot(a, 14);
    c ^= b; c -= rot(b, 24);
    return c;
}
#endif

int main(void)
{
    floem_net_frame_t frames[BATCH];
    floem_net_init();
    for (;;) {
        unsigned n = floem_net_rx(0, frames, BATCH);
        if (unlikely(n == 0)) {
            if (floem_net_rx_done())
                break;
            continue;
        }
        for (unsigned i = 0; i < n; i++) {
            floem_packet_t pkt = floem_net_packet(frames[i]);
            uint8_t *f = pkt.data;
            unsigned v = udp_verdict(f, pkt.len);
            if (likely(v == V_OK)) {
                passed++;
                buckets[hashlittle(udp_payload(f), udp_payload_len(f), 0) % BUCKETS]++;
            } else {
                dropped++;
                reasons[v]++;
            }
            floem_net_free(&pkt);
        }
        floem_net_flush(0);
    }
    floem_net_finalize();
    uint64_t sum = 0;
    for (unsigned i = 0; i < BUCKETS; i++)
        sum += buckets[i] * (i + 1);
    printf("hashcount: passed %" PRIu64 ", dropped %" PRIu64 ", buckets checksum %" PRIu64 "\n",
           passed, dropped, sum);
    return 0;
}
