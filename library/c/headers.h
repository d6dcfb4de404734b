/* Ethernet / IPv4 / UDP (and TCP) header views for floem.library.headers.
 *
 * The structs are packed views laid over frame bytes: multi-byte fields are
 * in network (big-endian) order, read and written with floem_get16/32 and
 * floem_put16/32, which work on any host byte order and alignment.
 * floem_udp_parse() checks a frame before anything else looks at it; the
 * other functions assume a frame it accepted (or one they build). What runs for
 * every packet is defined here, static inline, so that the elements calling it
 * compile it inline; building frames and checksums is in headers.c.
 */
#ifndef FLOEM_LIBRARY_HEADERS_H
#define FLOEM_LIBRARY_HEADERS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FLOEM_ETHER_LEN 14
#define FLOEM_IPV4_MIN_LEN 20
#define FLOEM_UDP_LEN 8
/* Ethernet + IPv4 without options + UDP: where a built frame's payload starts. */
#define FLOEM_UDP_FRAME_LEN 42
#define FLOEM_ETHERTYPE_IPV4 0x0800
#define FLOEM_IPPROTO_UDP 17
#define FLOEM_IPPROTO_TCP 6
#define FLOEM_TCP_LEN 20
/* Ethernet + IPv4 without options + TCP without options: where a message of the tcp
 * backend starts in its frame (floem/net.h, "Streams"). */
#define FLOEM_TCP_FRAME_LEN 54

struct floem_ether_hdr {
    uint8_t dst[6];
    uint8_t src[6];
    uint16_t type;
} __attribute__((packed));

struct floem_ipv4_hdr {
    uint8_t version_ihl;          /* version (4) << 4 | header length in 32-bit words */
    uint8_t tos;
    uint16_t total_len;           /* IPv4 header + UDP header + payload */
    uint16_t id;
    uint16_t frag_off;            /* flags (3 bits) and fragment offset */
    uint8_t ttl;
    uint8_t protocol;
    uint16_t checksum;
    uint32_t src;
    uint32_t dst;
} __attribute__((packed));

struct floem_udp_hdr {
    uint16_t src_port;
    uint16_t dst_port;
    uint16_t len;                 /* UDP header + payload */
    uint16_t checksum;            /* 0: not computed */
} __attribute__((packed));

/* A TCP header without options. */
struct floem_tcp_hdr {
    uint16_t src_port;
    uint16_t dst_port;
    uint32_t seq;
    uint32_t ack;
    uint8_t offset;               /* header length in 32-bit words << 4 */
    uint8_t flags;
    uint16_t window;
    uint16_t checksum;
    uint16_t urgent;
} __attribute__((packed));

/* A UDP frame as built by floem_udp_fill (IPv4 header without options). */
struct floem_udp_frame {
    struct floem_ether_hdr eth;
    struct floem_ipv4_hdr ip;
    struct floem_udp_hdr udp;
} __attribute__((packed));

/* Why floem_udp_parse rejected a frame (index of the CheckUDP drop counters). */
enum floem_udp_verdict {
    FLOEM_UDP_OK = 0,
    FLOEM_UDP_TRUNCATED,          /* a header or a length field reaches past the frame */
    FLOEM_UDP_NOT_IPV4,           /* EtherType is not IPv4 */
    FLOEM_UDP_BAD_IP_HEADER,      /* version, IHL or total length inconsistent */
    FLOEM_UDP_FRAGMENT,           /* a fragment: no whole UDP datagram */
    FLOEM_UDP_NOT_UDP,            /* IP protocol is not UDP */
    FLOEM_UDP_BAD_UDP_LENGTH,     /* UDP length below 8 or past the IP total length */
    FLOEM_UDP_BAD_CHECKSUM,       /* IPv4 header or (nonzero) UDP checksum wrong */
    FLOEM_UDP_VERDICTS
};

/* Where a parsed frame's parts are. */
struct floem_udp_view {
    struct floem_ether_hdr *eth;
    struct floem_ipv4_hdr *ip;
    struct floem_udp_hdr *udp;
    uint8_t *payload;
    size_t payload_len;           /* from the UDP length, not the frame size */
};

/* The flow key of a UDP packet, in network byte order, 13 bytes. */
struct floem_flow_key {
    uint32_t src_ip;
    uint32_t dst_ip;
    uint16_t src_port;
    uint16_t dst_port;
    uint8_t protocol;
} __attribute__((packed));

/* Addresses and ports of a frame to build, in host byte order (MACs as bytes). */
struct floem_udp_endpoints {
    uint8_t src_mac[6];
    uint8_t dst_mac[6];
    uint32_t src_ip;
    uint32_t dst_ip;
    uint16_t src_port;
    uint16_t dst_port;
};

static inline uint16_t floem_get16(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t floem_get32(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static inline void floem_put16(void *p, uint16_t v)
{
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)(v >> 8);
    b[1] = (uint8_t)v;
}

static inline void floem_put32(void *p, uint32_t v)
{
    uint8_t *b = (uint8_t *)p;
    b[0] = (uint8_t)(v >> 24);
    b[1] = (uint8_t)(v >> 16);
    b[2] = (uint8_t)(v >> 8);
    b[3] = (uint8_t)v;
}

static inline unsigned floem_ipv4_header_len(const struct floem_ipv4_hdr *ip)
{
    return (unsigned)(ip->version_ihl & 0x0f) * 4;
}

/* The one's-complement sum of `len` bytes (big-endian 16-bit words) added to `sum`. */
static inline uint32_t floem_csum_add(uint32_t sum, const void *data, size_t len)
{
    const uint8_t *b = (const uint8_t *)data;
    uint64_t acc = sum;
    size_t i = 0;
    for (; i + 1 < len; i += 2)
        acc += (uint32_t)(b[i] << 8 | b[i + 1]);
    if (i < len)
        acc += (uint32_t)b[i] << 8;
    while (acc >> 32)
        acc = (acc & 0xffffffffu) + (acc >> 32);
    return (uint32_t)acc;
}

/* Fold a sum into a 16-bit checksum (complemented). */
static inline uint16_t floem_csum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* Check that `frame` (`size` bytes) is Ethernet/IPv4/UDP with consistent lengths.
 * Reads only bytes below `size`. On FLOEM_UDP_OK, fills `view` (when not NULL).
 * With `verify_checksums`, also checks the IPv4 header checksum and a nonzero UDP checksum. */
static inline enum floem_udp_verdict
floem_udp_parse(void *frame, size_t size, int verify_checksums, struct floem_udp_view *view)
{
    uint8_t *bytes = (uint8_t *)frame;
    struct floem_ether_hdr *eth = (struct floem_ether_hdr *)bytes;
    /* One length check first for every frame long enough (the common case); a shorter one
     * gets the verdict the checks in order give: truncated, unless its EtherType (when
     * whole) already says it is not IPv4. */
    if (__builtin_expect(size < FLOEM_ETHER_LEN + FLOEM_IPV4_MIN_LEN || frame == NULL, 0))
        return frame != NULL && size >= FLOEM_ETHER_LEN
                       && floem_get16(&eth->type) != FLOEM_ETHERTYPE_IPV4
                   ? FLOEM_UDP_NOT_IPV4 : FLOEM_UDP_TRUNCATED;
    if (floem_get16(&eth->type) != FLOEM_ETHERTYPE_IPV4)
        return FLOEM_UDP_NOT_IPV4;
    struct floem_ipv4_hdr *ip = (struct floem_ipv4_hdr *)(bytes + FLOEM_ETHER_LEN);
    size_t ihl = floem_ipv4_header_len(ip);
    if (ip->version_ihl >> 4 != 4 || ihl < FLOEM_IPV4_MIN_LEN)
        return FLOEM_UDP_BAD_IP_HEADER;
    if (FLOEM_ETHER_LEN + ihl > size)
        return FLOEM_UDP_TRUNCATED;
    size_t total = floem_get16(&ip->total_len);
    if (total < ihl)
        return FLOEM_UDP_BAD_IP_HEADER;
    if (FLOEM_ETHER_LEN + total > size)
        return FLOEM_UDP_TRUNCATED;
    if (verify_checksums && floem_csum_fold(floem_csum_add(0, ip, ihl)) != 0)
        return FLOEM_UDP_BAD_CHECKSUM;
    if ((floem_get16(&ip->frag_off) & 0x3fff) != 0)     /* MF flag or a fragment offset */
        return FLOEM_UDP_FRAGMENT;
    if (ip->protocol != FLOEM_IPPROTO_UDP)
        return FLOEM_UDP_NOT_UDP;
    if (total < ihl + FLOEM_UDP_LEN)
        return FLOEM_UDP_TRUNCATED;
    struct floem_udp_hdr *udp = (struct floem_udp_hdr *)((uint8_t *)ip + ihl);
    size_t udp_len = floem_get16(&udp->len);
    if (udp_len < FLOEM_UDP_LEN || ihl + udp_len > total)
        return FLOEM_UDP_BAD_UDP_LENGTH;
    if (verify_checksums && floem_get16(&udp->checksum) != 0) {
        uint32_t sum = floem_csum_add(0, &ip->src, 8);
        sum += FLOEM_IPPROTO_UDP + (uint32_t)udp_len;
        if (floem_csum_fold(floem_csum_add(sum, udp, udp_len)) != 0)
            return FLOEM_UDP_BAD_CHECKSUM;
    }
    if (view != NULL) {
        view->eth = eth;
        view->ip = ip;
        view->udp = udp;
        view->payload = (uint8_t *)udp + FLOEM_UDP_LEN;
        view->payload_len = udp_len - FLOEM_UDP_LEN;
    }
    return FLOEM_UDP_OK;
}

/* The checksum an IPv4 header must carry (computed with its checksum field as zero). */
uint16_t floem_ipv4_checksum(const struct floem_ipv4_hdr *ip);
/* The UDP checksum (pseudo-header included) of a datagram whose length field is set;
 * never 0 (0 is sent as 0xffff). */
uint16_t floem_udp_checksum(const struct floem_ipv4_hdr *ip, const struct floem_udp_hdr *udp);

/* Write Ethernet, IPv4 (no options, TTL 64, DF) and UDP headers in front of a payload
 * of `payload_len` bytes at frame + FLOEM_UDP_FRAME_LEN; the UDP checksum when asked. */
void floem_udp_fill(void *frame, size_t payload_len, const struct floem_udp_endpoints *ends,
                    int udp_checksum);
/* After the payload of a parsed frame changed length: the frame is now `size` bytes.
 * Sets the IPv4 total length and UDP length, recomputes the IPv4 checksum, and the
 * UDP checksum when asked (else sets it to 0). */
void floem_udp_set_length(void *frame, size_t size, int udp_checksum);
/* Swap source and destination MACs, IPv4 addresses and UDP ports (a reply). */
static inline void floem_udp_swap(void *frame)
{
    struct floem_ether_hdr *eth = (struct floem_ether_hdr *)frame;
    struct floem_ipv4_hdr *ip = (struct floem_ipv4_hdr *)((uint8_t *)frame + FLOEM_ETHER_LEN);
    uint8_t *udp = (uint8_t *)ip + floem_ipv4_header_len(ip);
    uint32_t dst4, src4;                /* each MAC as 4 + 2 bytes, loaded before stored */
    uint16_t dst2, src2;
    memcpy(&dst4, eth->dst, 4);
    memcpy(&dst2, eth->dst + 4, 2);
    memcpy(&src4, eth->src, 4);
    memcpy(&src2, eth->src + 4, 2);
    memcpy(eth->dst, &src4, 4);
    memcpy(eth->dst + 4, &src2, 2);
    memcpy(eth->src, &dst4, 4);
    memcpy(eth->src + 4, &dst2, 2);
    uint64_t addrs;                     /* source and destination address: swap the halves */
    memcpy(&addrs, &ip->src, 8);        /* (raw swaps: byte order does not matter) */
    addrs = addrs >> 32 | addrs << 32;
    memcpy(&ip->src, &addrs, 8);
    uint32_t ports;                     /* source and destination port: swap the halves */
    memcpy(&ports, udp, 4);
    ports = ports >> 16 | ports << 16;
    memcpy(udp, &ports, 4);
}

/* Where the message of a frame of the tcp backend is (floem/net.h, "Streams"): FLOEM_UDP_OK
 * and its bytes in *payload, *len; FLOEM_UDP_TRUNCATED when it is cut (the IPv4 length says
 * more than the frame holds: *len is what it holds, *whole the message's length up to what
 * the length can say); another verdict when it is not an Ethernet/IPv4/TCP frame. Reads only
 * bytes below `size`. */
static inline enum floem_udp_verdict floem_tcp_message(const void *frame, size_t size,
                                                       const uint8_t **payload, size_t *len,
                                                       size_t *whole)
{
    const uint8_t *f = (const uint8_t *)frame;
    if (size < FLOEM_ETHER_LEN + FLOEM_IPV4_MIN_LEN + FLOEM_TCP_LEN)
        return FLOEM_UDP_TRUNCATED;
    if (floem_get16(f + 12) != FLOEM_ETHERTYPE_IPV4 || (f[14] >> 4) != 4)
        return FLOEM_UDP_NOT_IPV4;
    size_t ihl = (size_t)(f[14] & 0x0f) * 4, total = floem_get16(f + 16);
    if (f[23] != FLOEM_IPPROTO_TCP)
        return FLOEM_UDP_NOT_UDP;
    if (ihl < FLOEM_IPV4_MIN_LEN || FLOEM_ETHER_LEN + ihl + FLOEM_TCP_LEN > size
        || total < ihl + FLOEM_TCP_LEN)
        return FLOEM_UDP_BAD_IP_HEADER;
    size_t offset = (size_t)(f[FLOEM_ETHER_LEN + ihl + 12] >> 4) * 4;
    if (offset < FLOEM_TCP_LEN || ihl + offset > total || FLOEM_ETHER_LEN + ihl + offset > size)
        return FLOEM_UDP_BAD_IP_HEADER;
    size_t start = FLOEM_ETHER_LEN + ihl + offset;
    *payload = f + start;
    *whole = total - ihl - offset;
    *len = FLOEM_ETHER_LEN + total <= size ? *whole : size - start;
    return *len == *whole ? FLOEM_UDP_OK : FLOEM_UDP_TRUNCATED;
}

/* Swap the addresses and ports of a TCP frame, and its sequence and acknowledgement numbers
 * (a reply on the connection). */
static inline void floem_tcp_swap(void *frame)
{
    floem_udp_swap(frame);      /* MACs, addresses, and the ports (where UDP has them) */
    struct floem_ipv4_hdr *ip = (struct floem_ipv4_hdr *)((uint8_t *)frame + FLOEM_ETHER_LEN);
    struct floem_tcp_hdr *tcp = (struct floem_tcp_hdr *)((uint8_t *)ip + floem_ipv4_header_len(ip));
    uint32_t seq = tcp->seq;
    tcp->seq = tcp->ack;
    tcp->ack = seq;
}

/* After the message of a TCP frame changed length: the frame is now `size` bytes. Sets the
 * IPv4 total length and checksum; the TCP checksum is left out (0). */
void floem_tcp_set_length(void *frame, size_t size);

/* The flow key of a parsed frame. */
static inline void floem_udp_flow_key(const void *frame, struct floem_flow_key *key)
{
    const struct floem_ipv4_hdr *ip =
        (const struct floem_ipv4_hdr *)((const uint8_t *)frame + FLOEM_ETHER_LEN);
    const struct floem_udp_hdr *udp =
        (const struct floem_udp_hdr *)((const uint8_t *)ip + floem_ipv4_header_len(ip));
    key->src_ip = ip->src;
    key->dst_ip = ip->dst;
    key->src_port = udp->src_port;
    key->dst_port = udp->dst_port;
    key->protocol = ip->protocol;
}

/* The UDP payload of a frame floem_udp_parse accepted. */
static inline uint8_t *floem_udp_payload(void *frame)
{
    struct floem_ipv4_hdr *ip = (struct floem_ipv4_hdr *)((uint8_t *)frame + FLOEM_ETHER_LEN);
    return (uint8_t *)ip + floem_ipv4_header_len(ip) + FLOEM_UDP_LEN;
}

/* Its length, from the UDP length field. */
static inline size_t floem_udp_payload_len(const void *frame)
{
    const struct floem_ipv4_hdr *ip =
        (const struct floem_ipv4_hdr *)((const uint8_t *)frame + FLOEM_ETHER_LEN);
    const struct floem_udp_hdr *udp =
        (const struct floem_udp_hdr *)((const uint8_t *)ip + floem_ipv4_header_len(ip));
    return (size_t)floem_get16(&udp->len) - FLOEM_UDP_LEN;
}

#endif
