/* Ethernet / IPv4 / UDP parsing, checksums and builders (see headers.h). */
#include "headers.h"

#include <string.h>

enum floem_udp_verdict floem_udp_parse(void *frame, size_t size, int verify_checksums,
                                       struct floem_udp_view *view)
{
    uint8_t *bytes = (uint8_t *)frame;
    if (frame == NULL || size < FLOEM_ETHER_LEN)
        return FLOEM_UDP_TRUNCATED;
    struct floem_ether_hdr *eth = (struct floem_ether_hdr *)bytes;
    if (floem_get16(&eth->type) != FLOEM_ETHERTYPE_IPV4)
        return FLOEM_UDP_NOT_IPV4;
    if (size < FLOEM_ETHER_LEN + FLOEM_IPV4_MIN_LEN)
        return FLOEM_UDP_TRUNCATED;
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

uint32_t floem_csum_add(uint32_t sum, const void *data, size_t len)
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

uint16_t floem_csum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

uint16_t floem_ipv4_checksum(const struct floem_ipv4_hdr *ip)
{
    size_t ihl = floem_ipv4_header_len(ip);
    uint32_t sum = floem_csum_add(0, ip, offsetof(struct floem_ipv4_hdr, checksum));
    size_t after = offsetof(struct floem_ipv4_hdr, checksum) + 2;
    sum = floem_csum_add(sum, (const uint8_t *)ip + after, ihl - after);
    return floem_csum_fold(sum);
}

uint16_t floem_udp_checksum(const struct floem_ipv4_hdr *ip, const struct floem_udp_hdr *udp)
{
    size_t udp_len = floem_get16(&udp->len);
    uint32_t sum = floem_csum_add(0, &ip->src, 8);
    sum += FLOEM_IPPROTO_UDP + (uint32_t)udp_len;
    sum = floem_csum_add(sum, udp, offsetof(struct floem_udp_hdr, checksum));
    sum = floem_csum_add(sum, (const uint8_t *)udp + FLOEM_UDP_LEN, udp_len - FLOEM_UDP_LEN);
    uint16_t c = floem_csum_fold(sum);
    return c == 0 ? 0xffff : c;
}

void floem_udp_fill(void *frame, size_t payload_len, const struct floem_udp_endpoints *ends,
                    int udp_checksum)
{
    struct floem_udp_frame *f = (struct floem_udp_frame *)frame;
    memcpy(f->eth.dst, ends->dst_mac, 6);
    memcpy(f->eth.src, ends->src_mac, 6);
    floem_put16(&f->eth.type, FLOEM_ETHERTYPE_IPV4);
    f->ip.version_ihl = 0x45;
    f->ip.tos = 0;
    floem_put16(&f->ip.id, 0);
    floem_put16(&f->ip.frag_off, 0x4000);              /* don't fragment */
    f->ip.ttl = 64;
    f->ip.protocol = FLOEM_IPPROTO_UDP;
    floem_put32(&f->ip.src, ends->src_ip);
    floem_put32(&f->ip.dst, ends->dst_ip);
    floem_put16(&f->udp.src_port, ends->src_port);
    floem_put16(&f->udp.dst_port, ends->dst_port);
    floem_udp_set_length(frame, FLOEM_UDP_FRAME_LEN + payload_len, udp_checksum);
}

void floem_udp_set_length(void *frame, size_t size, int udp_checksum)
{
    struct floem_ipv4_hdr *ip = (struct floem_ipv4_hdr *)((uint8_t *)frame + FLOEM_ETHER_LEN);
    size_t ihl = floem_ipv4_header_len(ip);
    struct floem_udp_hdr *udp = (struct floem_udp_hdr *)((uint8_t *)ip + ihl);
    floem_put16(&ip->total_len, (uint16_t)(size - FLOEM_ETHER_LEN));
    floem_put16(&ip->checksum, floem_ipv4_checksum(ip));
    floem_put16(&udp->len, (uint16_t)(size - FLOEM_ETHER_LEN - ihl));
    floem_put16(&udp->checksum, udp_checksum ? floem_udp_checksum(ip, udp) : 0);
}

void floem_udp_swap(void *frame)
{
    struct floem_ether_hdr *eth = (struct floem_ether_hdr *)frame;
    struct floem_ipv4_hdr *ip = (struct floem_ipv4_hdr *)((uint8_t *)frame + FLOEM_ETHER_LEN);
    struct floem_udp_hdr *udp = (struct floem_udp_hdr *)((uint8_t *)ip + floem_ipv4_header_len(ip));
    uint8_t mac[6];
    memcpy(mac, eth->dst, 6);
    memcpy(eth->dst, eth->src, 6);
    memcpy(eth->src, mac, 6);
    uint32_t addr = ip->src;            /* raw swaps: byte order does not matter */
    ip->src = ip->dst;
    ip->dst = addr;
    uint16_t port = udp->src_port;
    udp->src_port = udp->dst_port;
    udp->dst_port = port;
}

void floem_udp_flow_key(const void *frame, struct floem_flow_key *key)
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
