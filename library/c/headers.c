/* Ethernet / IPv4 / UDP / TCP parsing, checksums and builders (see headers.h). */
#include "headers.h"

#include <string.h>

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


void floem_tcp_set_length(void *frame, size_t size)
{
    struct floem_ipv4_hdr *ip = (struct floem_ipv4_hdr *)((uint8_t *)frame + FLOEM_ETHER_LEN);
    struct floem_tcp_hdr *tcp = (struct floem_tcp_hdr *)((uint8_t *)ip + floem_ipv4_header_len(ip));
    floem_put16(&ip->total_len, (uint16_t)(size - FLOEM_ETHER_LEN));
    floem_put16(&ip->checksum, floem_ipv4_checksum(ip));
    floem_put16(&tcp->checksum, 0);
}
