/* AES-128-CBC for floem.library.aes: AES-NI when the CPU has it, portable C otherwise.
 *
 * Both implementations give the same bytes as OpenSSL's aes-128-cbc without
 * padding. Setting the environment variable FLOEM_AES_PORTABLE (to anything
 * but "0") makes every context use the portable code.
 */
#ifndef FLOEM_LIBRARY_AES_H
#define FLOEM_LIBRARY_AES_H

#include <stddef.h>
#include <stdint.h>

/* An expanded key: the round keys of encryption and of the equivalent inverse cipher. */
struct floem_aes128 {
    uint8_t enc[176];
    uint8_t dec[176];
    int aesni;                    /* 1: these round keys are used with AES-NI */
};

/* 1 when this CPU has AES-NI and FLOEM_AES_PORTABLE does not forbid it. */
int floem_aes_ni_usable(void);

/* Expand `key`; use AES-NI when `allow_aesni` and floem_aes_ni_usable(). */
void floem_aes128_init(struct floem_aes128 *ctx, const uint8_t key[16], int allow_aesni);

/* floem_aes128_init once for a context shared by threads: the first caller expands
 * the key, the others wait until it is ready, yielding the CPU (a spinning wait would be
 * counted as the packet's work, and would starve the first caller of a shared CPU).
 * `*once` must start at 0. */
void floem_aes128_init_once(struct floem_aes128 *ctx, int *once, const uint8_t key[16],
                            int allow_aesni);

/* CBC over `len` bytes (a multiple of 16) from `in` to `out` (which may be `in`);
 * returns 0, or -1 without touching `out` when `len` is not a multiple of 16. */
int floem_aes128_cbc_encrypt(const struct floem_aes128 *ctx, const uint8_t iv[16],
                             const uint8_t *in, uint8_t *out, size_t len);
int floem_aes128_cbc_decrypt(const struct floem_aes128 *ctx, const uint8_t iv[16],
                             const uint8_t *in, uint8_t *out, size_t len);

#endif
