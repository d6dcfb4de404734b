/* Hash functions for floem.library.hash: Jenkins lookup3, CRC32C, Toeplitz (RSS).
 *
 * All read their input byte by byte, so they give the same result on any
 * host byte order and for any alignment.
 */
#ifndef FLOEM_LIBRARY_HASH_H
#define FLOEM_LIBRARY_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Bob Jenkins' lookup3 hashlittle(): the value of the reference code on a
 * little-endian machine, for `length` bytes at `key` and seed `initval`. */
uint32_t floem_hashlittle(const void *key, size_t length, uint32_t initval);

/* CRC-32C (Castagnoli, as in iSCSI and SSE4.2): reflected, initial value and final
 * XOR all ones; `crc` is the value of a previous call (0 to start). */
uint32_t floem_crc32c(uint32_t crc, const void *data, size_t length);

/* The Toeplitz hash of `length` bytes with the secret `key` of `key_len` bytes, as
 * receive-side scaling computes it; needs key_len >= length + 4 (else returns 0). */
uint32_t floem_toeplitz(const uint8_t *key, size_t key_len, const void *data, size_t length);

/* The standard 40-byte RSS key of the Microsoft RSS specification. */
extern const uint8_t floem_rss_default_key[40];

#endif
