/* What the hand-written programs share: inlined Ethernet/IPv4/UDP parsing and swapping.
 *
 * udp_verdict() makes exactly the checks of the library's floem_udp_parse()
 * (library/c/headers.c, verify_checksums = 0), in the same order and with the
 * same verdicts, never reading at or past frame + size; it is written for the
 * common case (direct unaligned loads, byte swaps, no view struct) and
 * inlined into the packet loop. udp_swap() swaps MACs, IPv4 addresses and UDP
 * ports like floem_udp_swap(). With -DHAND_LIBRARY_CALLS they call those
 * library functions instead, out of line: the "hand-written, library calls"
 * variant that separates what the library's C costs from what the generated
 * glue costs.
 */
#ifndef HAND_H
#define HAND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "floem/net.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* The verdicts, numbered as enum floem_udp_verdict (the index of the drop counters). */
enum { V_OK, V_TRUNCATED, V_NOT_IPV4, V_BAD_IP_HEADER, V_FRAGMENT, V_NOT_UDP,
       V_BAD_UDP_LENGTH, V_BAD_CHECKSUM, V_VERDICTS };

#ifdef HAND_LIBRARY_CALLS
#include "headers.h"

static inline unsigned udp_verdict(uint8_t *f, size_t size)
{
    return (unsigned)floem_udp_parse(f, size, 0, NULL);
}

static inline void udp_swap(uint8_t *f)
{
    floem_udp_swap(f);
}

#else

static inline unsigned be16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return __builtin_bswap16(v);
}

static inline unsigned udp_verdict(const uint8_t *f, size_t size)
{
    if (unlikely(size < 14 + 20))
        return size < 14 || be16(f + 12) == 0x0800 ? V_TRUNCATED : V_NOT_IPV4;
    if (unlikely(be16(f + 12) != 0x0800))
        return V_NOT_IPV4;
    unsigned vihl = f[14], ihl = (vihl & 15) * 4;
    if (unlikely((vihl >> 4) != 4 || ihl < 20))
        return V_BAD_IP_HEADER;
    if (unlikely(14 + ihl > size))
        return V_TRUNCATED;
    unsigned total = be16(f + 16);
    if (unlikely(total < ihl))
        return V_BAD_IP_HEADER;
    if (unlikely(14 + total > size))
        return V_TRUNCATED;
    if (unlikely(be16(f + 20) & 0x3fff))
        return V_FRAGMENT;
    if (unlikely(f[23] != 17))
        return V_NOT_UDP;
    if (unlikely(total < ihl + 8))
        return V_TRUNCATED;
    unsigned udp_len = be16(f + 14 + ihl + 4);
    if (unlikely(udp_len < 8 || ihl + udp_len > total))
        return V_BAD_UDP_LENGTH;
    return V_OK;
}

static inline void udp_swap(uint8_t *f)
{
    uint8_t mac[6];
    uint32_t ip;
    uint32_t ports;
    uint8_t *udp = f + 14 + (f[14] & 15) * 4;
    memcpy(mac, f, 6);
    memcpy(f, f + 6, 6);
    memcpy(f + 6, mac, 6);
    memcpy(&ip, f + 26, 4);
    memcpy(f + 26, f + 30, 4);
    memcpy(f + 30, &ip, 4);
    memcpy(&ports, udp, 4);
    ports = ports >> 16 | ports << 16;
    memcpy(udp, &ports, 4);
}
#endif

/* The UDP payload of a frame udp_verdict() accepted, and its length (from the UDP header). */
static inline uint8_t *udp_payload(uint8_t *f)
{
    return f + 14 + (f[14] & 15) * 4 + 8;
}

static inline size_t udp_payload_len(const uint8_t *f)
{
    const uint8_t *udp = f + 14 + (f[14] & 15) * 4;
    return (size_t)(((unsigned)udp[4] << 8 | udp[5]) - 8);
}

#endif
