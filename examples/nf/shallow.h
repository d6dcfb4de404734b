/* What the shallow network functions' C bodies share (examples/nf/shallow.py): a flow hash,
 * FNV-1a, and open-addressing tables of 64-bit keys kept in persistent states.
 *
 * None of these takes a frame: bodies read the header members they need
 * (state->pkt->ip.src) and pass the values, so the compiler bounds what each body reads.
 */
#ifndef NF_SHALLOW_H
#define NF_SHALLOW_H

#include <stdbool.h>
#include <stdint.h>

/* 32-bit FNV-1a, fed a value's bytes most significant first (network order). */
#define NF_FNV_BASIS 0x811c9dc5u

static inline uint32_t nf_fnv1a(uint32_t h, uint32_t value, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        h = (h ^ ((value >> (8 * i)) & 0xffu)) * 0x01000193u;
    return h;
}

/* A 64-bit mix (splitmix64's finalizer): where a key starts probing a table. */
static inline uint64_t nf_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A table of `slots` entries of two 64-bit words (keys[2i], keys[2i + 1]), linear probing
 * over the whole table, entries never removed. A key's second word is never 0 (callers set
 * a bit in it): an entry whose second word is 0 is empty. Returns the slot holding the key,
 * or, when absent, -1 - (the empty slot where it would go), or -1 - slots when the table is
 * full (every slot was probed). */
static inline int64_t nf_table_find(const uint64_t *keys, uint32_t slots, uint64_t k0,
                                    uint64_t k1)
{
    uint32_t at = (uint32_t)(nf_mix64(k0 ^ nf_mix64(k1)) % slots);
    for (uint32_t n = 0; n < slots; n++) {
        if (keys[2 * at + 1] == 0)
            return -1 - (int64_t)at;
        if (keys[2 * at] == k0 && keys[2 * at + 1] == k1)
            return at;
        at = at + 1 == slots ? 0 : at + 1;
    }
    return -1 - (int64_t)slots;
}

/* The UDP checksum after an incremental update gave `csum`: 0 means "no checksum", so a
 * computed 0 is sent as 0xffff (RFC 768); the same bits in either byte order. */
static inline uint16_t nf_udp_csum(uint16_t csum)
{
    return csum == 0 ? 0xffff : csum;
}

#endif
