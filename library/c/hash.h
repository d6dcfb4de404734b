/* Hash functions for floem.library.hash: Jenkins lookup3, CRC32C, Toeplitz (RSS).
 *
 * All read their input byte by byte, so they give the same result on any
 * host byte order and for any alignment.
 */
#ifndef FLOEM_LIBRARY_HASH_H
#define FLOEM_LIBRARY_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* floem_hashlittle's rotation and little-endian load. */
static inline uint32_t floem_hash_rot(uint32_t x, int k)
{
    return x << k | x >> (32 - k);
}

static inline uint32_t floem_hash_load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bob Jenkins' lookup3 hashlittle(): the value of the reference code on a
 * little-endian machine, for `length` bytes at `key` and seed `initval`. Static
 * inline, so that an element hashing every packet compiles it inline. */
static inline uint32_t floem_hashlittle(const void *key, size_t length, uint32_t initval)
{
    const uint8_t *k = (const uint8_t *)key;
    uint32_t a, b, c;
    a = b = c = 0xdeadbeef + (uint32_t)length + initval;
    while (length > 12) {
        a += floem_hash_load_le32(k);
        b += floem_hash_load_le32(k + 4);
        c += floem_hash_load_le32(k + 8);
        /* mix(a, b, c) */
        a -= c; a ^= floem_hash_rot(c, 4);  c += b;
        b -= a; b ^= floem_hash_rot(a, 6);  a += c;
        c -= b; c ^= floem_hash_rot(b, 8);  b += a;
        a -= c; a ^= floem_hash_rot(c, 16); c += b;
        b -= a; b ^= floem_hash_rot(a, 19); a += c;
        c -= b; c ^= floem_hash_rot(b, 4);  b += a;
        length -= 12;
        k += 12;
    }
    if (length == 0)
        return c;
    uint8_t tail[12] = {0};             /* the last 1..12 bytes, zero-padded */
    memcpy(tail, k, length);
    a += floem_hash_load_le32(tail);
    b += floem_hash_load_le32(tail + 4);
    c += floem_hash_load_le32(tail + 8);
    /* final(a, b, c) */
    c ^= b; c -= floem_hash_rot(b, 14);
    a ^= c; a -= floem_hash_rot(c, 11);
    b ^= a; b -= floem_hash_rot(a, 25);
    c ^= b; c -= floem_hash_rot(b, 16);
    a ^= c; a -= floem_hash_rot(c, 4);
    b ^= a; b -= floem_hash_rot(a, 14);
    c ^= b; c -= floem_hash_rot(b, 24);
    return c;
}

/* CRC-32C (Castagnoli, as in iSCSI and SSE4.2): reflected, initial value and final
 * XOR all ones; `crc` is the value of a previous call (0 to start). */
uint32_t floem_crc32c(uint32_t crc, const void *data, size_t length);

/* The Toeplitz hash of `length` bytes with the secret `key` of `key_len` bytes, as
 * receive-side scaling computes it; needs key_len >= length + 4 (else returns 0). */
uint32_t floem_toeplitz(const uint8_t *key, size_t key_len, const void *data, size_t length);

/* The standard 40-byte RSS key of the Microsoft RSS specification. */
extern const uint8_t floem_rss_default_key[40];

#endif
