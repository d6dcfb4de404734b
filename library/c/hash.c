/* Jenkins lookup3, CRC32C and Toeplitz hashes (see hash.h). */
#include "hash.h"

#include <string.h>

/* CRC-32C of each 4-bit value (reflected polynomial 0x82f63b78). */
static const uint32_t crc32c_nibble[16] = {
    0x00000000, 0x105ec76f, 0x20bd8ede, 0x30e349b1, 0x417b1dbc, 0x5125dad3, 0x61c69362,
    0x7198540d, 0x82f63b78, 0x92a8fc17, 0xa24bb5a6, 0xb21572c9, 0xc38d26c4, 0xd3d3e1ab,
    0xe330a81a, 0xf36e6f75,
};

uint32_t floem_crc32c(uint32_t crc, const void *data, size_t length)
{
    const uint8_t *p = (const uint8_t *)data;
    crc = ~crc;
    for (size_t i = 0; i < length; i++) {
        crc ^= p[i];
        crc = crc >> 4 ^ crc32c_nibble[crc & 15];
        crc = crc >> 4 ^ crc32c_nibble[crc & 15];
    }
    return ~crc;
}

uint32_t floem_toeplitz(const uint8_t *key, size_t key_len, const void *data, size_t length)
{
    const uint8_t *p = (const uint8_t *)data;
    if (key_len < length + 4)
        return 0;
    uint32_t window = (uint32_t)key[0] << 24 | (uint32_t)key[1] << 16 |
                      (uint32_t)key[2] << 8 | key[3];
    uint32_t hash = 0;
    for (size_t i = 0; i < length; i++) {
        uint8_t next = key[i + 4];
        for (int bit = 7; bit >= 0; bit--) {
            if (p[i] >> bit & 1)
                hash ^= window;
            window = window << 1 | (uint32_t)(next >> bit & 1);
        }
    }
    return hash;
}

const uint8_t floem_rss_default_key[40] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};
