/* AES-128-CBC: portable T-table code and AES-NI (see aes.h).
 *
 * The key schedule is computed by the portable code for both: AES-NI's
 * aesenc/aesdec use exactly the standard round keys and the round keys of the
 * equivalent inverse cipher, stored as bytes. The portable tables (S-box,
 * inverse S-box, one T-table each way) are computed once, at first use.
 */
#include "aes.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <wmmintrin.h>      /* AES-NI and SSE2: not all of immintrin.h (slow to parse) */
#define FLOEM_AES_X86 1
#endif

static uint8_t sbox[256], inv_sbox[256];
static uint32_t te[256], td[256];   /* [2s,s,s,3s] and [14s',9s',13s',11s'] as big-endian words */
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static uint8_t xtime(uint8_t x)
{
    return (uint8_t)(x << 1 ^ (x & 0x80 ? 0x1b : 0));
}

static uint8_t gmul(uint8_t a, uint8_t b)
{
    uint8_t p = 0;
    for (; b; b >>= 1, a = xtime(a))
        if (b & 1)
            p ^= a;
    return p;
}

static uint8_t rotl8(uint8_t x, int k)
{
    return (uint8_t)(x << k | x >> (8 - k));
}

static void make_tables(void)
{
    uint8_t p = 1, q = 1;
    do {                                  /* p runs over all nonzero bytes, q = 1/p */
        p = (uint8_t)(p ^ xtime(p));
        q ^= (uint8_t)(q << 1);
        q ^= (uint8_t)(q << 2);
        q ^= (uint8_t)(q << 4);
        if (q & 0x80)
            q ^= 0x09;
        sbox[p] = (uint8_t)(q ^ rotl8(q, 1) ^ rotl8(q, 2) ^ rotl8(q, 3) ^ rotl8(q, 4) ^ 0x63);
    } while (p != 1);
    sbox[0] = 0x63;
    for (int i = 0; i < 256; i++)
        inv_sbox[sbox[i]] = (uint8_t)i;
    for (int i = 0; i < 256; i++) {
        uint8_t s = sbox[i], r = inv_sbox[i];
        te[i] = (uint32_t)xtime(s) << 24 | (uint32_t)s << 16 | (uint32_t)s << 8 |
                (uint8_t)(xtime(s) ^ s);
        td[i] = (uint32_t)gmul(r, 14) << 24 | (uint32_t)gmul(r, 9) << 16 |
                (uint32_t)gmul(r, 13) << 8 | gmul(r, 11);
    }
}

static uint32_t ror(uint32_t x, int k)
{
    return x >> k | x << (32 - k);
}

static uint32_t load32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t sub_word(uint32_t w)
{
    return (uint32_t)sbox[w >> 24] << 24 | (uint32_t)sbox[w >> 16 & 0xff] << 16 |
           (uint32_t)sbox[w >> 8 & 0xff] << 8 | sbox[w & 0xff];
}

static uint32_t inv_mix_column(uint32_t w)
{
    return td[sbox[w >> 24]] ^ ror(td[sbox[w >> 16 & 0xff]], 8) ^
           ror(td[sbox[w >> 8 & 0xff]], 16) ^ ror(td[sbox[w & 0xff]], 24);
}

#ifdef FLOEM_AES_X86
static int cpu_has_aesni(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("aes") != 0;
}
#else
static int cpu_has_aesni(void)
{
    return 0;
}
#endif

int floem_aes_ni_usable(void)
{
    const char *portable = getenv("FLOEM_AES_PORTABLE");
    if (portable != NULL && strcmp(portable, "0") != 0)
        return 0;
    return cpu_has_aesni();
}

void floem_aes128_init(struct floem_aes128 *ctx, const uint8_t key[16], int allow_aesni)
{
    pthread_once(&tables_once, make_tables);
    uint32_t w[44];
    uint8_t rcon = 1;
    for (int i = 0; i < 4; i++)
        w[i] = load32(key + 4 * i);
    for (int i = 4; i < 44; i++) {
        uint32_t t = w[i - 1];
        if (i % 4 == 0) {
            t = sub_word(t << 8 | t >> 24) ^ (uint32_t)rcon << 24;
            rcon = xtime(rcon);
        }
        w[i] = w[i - 4] ^ t;
    }
    for (int i = 0; i < 44; i++)
        store32(ctx->enc + 4 * i, w[i]);
    for (int round = 0; round <= 10; round++)
        for (int c = 0; c < 4; c++) {
            uint32_t k = w[4 * (10 - round) + c];
            store32(ctx->dec + 16 * round + 4 * c,
                    round == 0 || round == 10 ? k : inv_mix_column(k));
        }
    ctx->aesni = allow_aesni && floem_aes_ni_usable();
}

void floem_aes128_init_once(struct floem_aes128 *ctx, int *once, const uint8_t key[16],
                            int allow_aesni)
{
    if (__atomic_load_n(once, __ATOMIC_ACQUIRE) == 2)
        return;
    int expected = 0;
    if (__atomic_compare_exchange_n(once, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        floem_aes128_init(ctx, key, allow_aesni);
        __atomic_store_n(once, 2, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(once, __ATOMIC_ACQUIRE) != 2)
        sched_yield();          /* the first caller is expanding the key: let it run */
}

static void encrypt_block(const uint8_t *rk, const uint8_t in[16], uint8_t out[16])
{
    uint32_t s0 = load32(in) ^ load32(rk), s1 = load32(in + 4) ^ load32(rk + 4);
    uint32_t s2 = load32(in + 8) ^ load32(rk + 8), s3 = load32(in + 12) ^ load32(rk + 12);
    for (int round = 1; round < 10; round++) {
        const uint8_t *k = rk + 16 * round;
        uint32_t t0 = te[s0 >> 24] ^ ror(te[s1 >> 16 & 0xff], 8) ^ ror(te[s2 >> 8 & 0xff], 16) ^
                      ror(te[s3 & 0xff], 24) ^ load32(k);
        uint32_t t1 = te[s1 >> 24] ^ ror(te[s2 >> 16 & 0xff], 8) ^ ror(te[s3 >> 8 & 0xff], 16) ^
                      ror(te[s0 & 0xff], 24) ^ load32(k + 4);
        uint32_t t2 = te[s2 >> 24] ^ ror(te[s3 >> 16 & 0xff], 8) ^ ror(te[s0 >> 8 & 0xff], 16) ^
                      ror(te[s1 & 0xff], 24) ^ load32(k + 8);
        uint32_t t3 = te[s3 >> 24] ^ ror(te[s0 >> 16 & 0xff], 8) ^ ror(te[s1 >> 8 & 0xff], 16) ^
                      ror(te[s2 & 0xff], 24) ^ load32(k + 12);
        s0 = t0, s1 = t1, s2 = t2, s3 = t3;
    }
    const uint8_t *k = rk + 160;
#define LAST(a, b, c, d) ((uint32_t)sbox[(a) >> 24] << 24 | (uint32_t)sbox[(b) >> 16 & 0xff] << 16 | \
                          (uint32_t)sbox[(c) >> 8 & 0xff] << 8 | sbox[(d) & 0xff])
    store32(out, LAST(s0, s1, s2, s3) ^ load32(k));
    store32(out + 4, LAST(s1, s2, s3, s0) ^ load32(k + 4));
    store32(out + 8, LAST(s2, s3, s0, s1) ^ load32(k + 8));
    store32(out + 12, LAST(s3, s0, s1, s2) ^ load32(k + 12));
#undef LAST
}

static void decrypt_block(const uint8_t *rk, const uint8_t in[16], uint8_t out[16])
{
    uint32_t s0 = load32(in) ^ load32(rk), s1 = load32(in + 4) ^ load32(rk + 4);
    uint32_t s2 = load32(in + 8) ^ load32(rk + 8), s3 = load32(in + 12) ^ load32(rk + 12);
    for (int round = 1; round < 10; round++) {
        const uint8_t *k = rk + 16 * round;
        uint32_t t0 = td[s0 >> 24] ^ ror(td[s3 >> 16 & 0xff], 8) ^ ror(td[s2 >> 8 & 0xff], 16) ^
                      ror(td[s1 & 0xff], 24) ^ load32(k);
        uint32_t t1 = td[s1 >> 24] ^ ror(td[s0 >> 16 & 0xff], 8) ^ ror(td[s3 >> 8 & 0xff], 16) ^
                      ror(td[s2 & 0xff], 24) ^ load32(k + 4);
        uint32_t t2 = td[s2 >> 24] ^ ror(td[s1 >> 16 & 0xff], 8) ^ ror(td[s0 >> 8 & 0xff], 16) ^
                      ror(td[s3 & 0xff], 24) ^ load32(k + 8);
        uint32_t t3 = td[s3 >> 24] ^ ror(td[s2 >> 16 & 0xff], 8) ^ ror(td[s1 >> 8 & 0xff], 16) ^
                      ror(td[s0 & 0xff], 24) ^ load32(k + 12);
        s0 = t0, s1 = t1, s2 = t2, s3 = t3;
    }
    const uint8_t *k = rk + 160;
#define LAST(a, b, c, d) ((uint32_t)inv_sbox[(a) >> 24] << 24 | \
                          (uint32_t)inv_sbox[(b) >> 16 & 0xff] << 16 | \
                          (uint32_t)inv_sbox[(c) >> 8 & 0xff] << 8 | inv_sbox[(d) & 0xff])
    store32(out, LAST(s0, s3, s2, s1) ^ load32(k));
    store32(out + 4, LAST(s1, s0, s3, s2) ^ load32(k + 4));
    store32(out + 8, LAST(s2, s1, s0, s3) ^ load32(k + 8));
    store32(out + 12, LAST(s3, s2, s1, s0) ^ load32(k + 12));
#undef LAST
}

#ifdef FLOEM_AES_X86
__attribute__((target("aes,sse4.1")))
static void cbc_encrypt_aesni(const uint8_t *rk, const uint8_t iv[16], const uint8_t *in,
                              uint8_t *out, size_t blocks)
{
    __m128i k[11];
    for (int i = 0; i < 11; i++)
        k[i] = _mm_loadu_si128((const __m128i *)(const void *)(rk + 16 * i));
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)iv);
    for (size_t b = 0; b < blocks; b++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(in + 16 * b));
        x = _mm_xor_si128(_mm_xor_si128(x, c), k[0]);
        for (int r = 1; r < 10; r++)
            x = _mm_aesenc_si128(x, k[r]);
        c = _mm_aesenclast_si128(x, k[10]);
        _mm_storeu_si128((__m128i *)(void *)(out + 16 * b), c);
    }
}

__attribute__((target("aes,sse4.1")))
static void cbc_decrypt_aesni(const uint8_t *rk, const uint8_t iv[16], const uint8_t *in,
                              uint8_t *out, size_t blocks)
{
    __m128i k[11];
    for (int i = 0; i < 11; i++)
        k[i] = _mm_loadu_si128((const __m128i *)(const void *)(rk + 16 * i));
    __m128i prev = _mm_loadu_si128((const __m128i *)(const void *)iv);
    for (size_t b = 0; b < blocks; b++) {
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(in + 16 * b));
        __m128i x = _mm_xor_si128(c, k[0]);
        for (int r = 1; r < 10; r++)
            x = _mm_aesdec_si128(x, k[r]);
        x = _mm_aesdeclast_si128(x, k[10]);
        _mm_storeu_si128((__m128i *)(void *)(out + 16 * b), _mm_xor_si128(x, prev));
        prev = c;
    }
}
#endif

int floem_aes128_cbc_encrypt(const struct floem_aes128 *ctx, const uint8_t iv[16],
                             const uint8_t *in, uint8_t *out, size_t len)
{
    if (len % 16 != 0)
        return -1;
#ifdef FLOEM_AES_X86
    if (ctx->aesni) {
        cbc_encrypt_aesni(ctx->enc, iv, in, out, len / 16);
        return 0;
    }
#endif
    uint8_t chain[16];
    memcpy(chain, iv, 16);
    for (size_t at = 0; at < len; at += 16) {
        uint8_t block[16];
        for (int i = 0; i < 16; i++)
            block[i] = in[at + i] ^ chain[i];
        encrypt_block(ctx->enc, block, out + at);
        memcpy(chain, out + at, 16);
    }
    return 0;
}

int floem_aes128_cbc_decrypt(const struct floem_aes128 *ctx, const uint8_t iv[16],
                             const uint8_t *in, uint8_t *out, size_t len)
{
    if (len % 16 != 0)
        return -1;
#ifdef FLOEM_AES_X86
    if (ctx->aesni) {
        cbc_decrypt_aesni(ctx->dec, iv, in, out, len / 16);
        return 0;
    }
#endif
    uint8_t chain[16];
    memcpy(chain, iv, 16);
    for (size_t at = 0; at < len; at += 16) {
        uint8_t cipher[16], plain[16];
        memcpy(cipher, in + at, 16);
        decrypt_block(ctx->dec, cipher, plain);
        for (int i = 0; i < 16; i++)
            out[at + i] = plain[i] ^ chain[i];
        memcpy(chain, cipher, 16);
    }
    return 0;
}
