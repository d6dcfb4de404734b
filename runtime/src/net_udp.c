/* Packet I/O backend `udp` (FLOEM_NET_UDP): kernel UDP sockets on FLOEM_NET_PORT of
 * FLOEM_NET_ADDR.
 *
 * Each queue is a socket bound to the port of the address (default 127.0.0.1, so
 * that only this host reaches it; 0.0.0.0: every IPv4 address of the host), with
 * SO_REUSEPORT when there are several, so the kernel spreads flows over them. Receiving
 * takes a batch of datagrams with recvmmsg and wraps each in a synthesised
 * frame: Ethernet (FLOEM_UDP_PEER_MAC -> FLOEM_UDP_PORT_MAC, IPv4), IPv4 (the
 * datagram's real source and destination addresses, TTL 64, no options) and
 * UDP (the real ports), with correct lengths and checksums. Sending parses each
 * frame's Ethernet/IPv4/UDP headers and sends the UDP payload with sendmmsg to
 * the frame's IPv4 destination and UDP destination port, from the frame's IPv4
 * source address (when it is one of this host's) and always from the served
 * port; so an element that swaps the addresses answers the sender. Frames that
 * are not IPv4/UDP, or whose UDP length does not fit the frame, are dropped and
 * counted. A datagram larger than a buffer (FLOEM_NET_BUFFER_BYTES minus the
 * 42 header bytes) arrives cut, as a capture's snap length cuts a frame: the
 * frame holds its first bytes, its IPv4 and UDP lengths are the whole datagram's
 * (so they reach past the frame, and checking a frame's lengths finds it cut) and
 * its UDP checksum is 0 (none). The report adds the
 * datagrams the kernel dropped at the sockets because their receive buffers
 * were full (the sockets' drop counts, SO_MEMINFO): with the frames received
 * and those dropped on receipt, they account for every datagram that reached
 * the port.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#ifdef FLOEM_NET_UDP

#include "floem/net_backend.h"
#include "floem/runtime.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const char floem_backend_name[] = "udp";

#define HEADERS (14 + 20 + 8)
#define SOCKET_BUFFER_BYTES (4 << 20)
/* Empty receive calls in a row before a receive waits (floem_backend_wait_readable) in
 * poll() for a datagram: an idle server sleeps instead of spinning on its core (a thread that
 * manages a sync layer makes more first: floem_backend_idle_due). */
#define IDLE_SPINS 2
/* How long a send that found the socket's buffer full waits for room, once. */
#define SEND_WAIT_MS 1

static const uint8_t port_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};

static struct {
    int fd;
    unsigned empty_calls;
    uint16_t ip_id;
    unsigned n_spare;
    void *spare[FLOEM_NET_RX_BURST];    /* buffers kept for the next receive */
} queues[FLOEM_NET_MAX_QUEUES];
static unsigned n_queues;
static uint16_t port;
static struct in_addr listen_addr;

static void enlarge_buffer(int fd, int force, int normal)
{
    int bytes = SOCKET_BUFFER_BYTES;
    if (setsockopt(fd, SOL_SOCKET, force, &bytes, sizeof bytes) != 0)
        (void)setsockopt(fd, SOL_SOCKET, normal, &bytes, sizeof bytes);
}

static int open_socket(bool shared)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        floem_net_fail("socket: %s", strerror(errno));
    int on = 1;
    if (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof on) != 0)
        floem_net_fail("IP_PKTINFO: %s", strerror(errno));
    if (shared && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0)
        floem_net_fail("SO_REUSEPORT: %s", strerror(errno));
    enlarge_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF);
    enlarge_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port),
                               .sin_addr = listen_addr};
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
        floem_net_fail("cannot serve UDP port %u of %s: %s", port, inet_ntoa(listen_addr),
                       strerror(errno));
    return fd;
}

unsigned floem_backend_init(unsigned wanted)
{
    port = floem_net_port_setting("UDP");
    listen_addr.s_addr = floem_net_addr_setting(htonl(INADDR_LOOPBACK));
    floem_pool_init();
    n_queues = wanted;
    for (unsigned q = 0; q < n_queues; q++) {
        memset(&queues[q], 0, sizeof queues[q]);
        queues[q].fd = open_socket(n_queues > 1);
    }
    /* Datagrams sent from now on are queued by the kernel until a thread receives them. */
    fprintf(stderr, "floem: net udp: ready on UDP port %u of %s\n", (unsigned)port,
            inet_ntoa(listen_addr));
    return n_queues;
}

void floem_backend_finalize(void)
{
    for (unsigned q = 0; q < n_queues; q++) {
        close(queues[q].fd);
        floem_pool_put(queues[q].spare, queues[q].n_spare);
        queues[q].n_spare = 0;
    }
    n_queues = 0;
    floem_pool_destroy();
}

bool floem_backend_rx_done(void)
{
    return false;
}

/* Write the Ethernet, IPv4 and UDP headers of a datagram of `payload` bytes in front of the
 * `held` of them at frame + HEADERS (fewer when the datagram was cut: no UDP checksum). */
static void synthesise(uint8_t *frame, size_t payload, size_t held,
                       const struct sockaddr_in *from, struct in_addr to, uint16_t ip_id)
{
    uint8_t *eth = frame, *ip = frame + 14, *udp = frame + 34;
    memcpy(eth, port_mac, 6);
    memcpy(eth + 6, peer_mac, 6);
    floem_net_put16(eth + 12, 0x0800);
    ip[0] = 0x45;
    ip[1] = 0;
    floem_net_put16(ip + 2, (uint16_t)(20 + 8 + payload));
    floem_net_put16(ip + 4, ip_id);
    floem_net_put16(ip + 6, 0x4000);                  /* don't fragment */
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    floem_net_put16(ip + 10, 0);
    memcpy(ip + 12, &from->sin_addr, 4);
    memcpy(ip + 16, &to, 4);
    floem_net_put16(ip + 10, floem_net_fold(floem_net_sum(0, ip, 20)));
    memcpy(udp, &from->sin_port, 2);
    floem_net_put16(udp + 2, port);
    floem_net_put16(udp + 4, (uint16_t)(8 + payload));
    floem_net_put16(udp + 6, 0);
    if (held < payload)
        return;
    uint32_t sum = floem_net_sum(0, ip + 12, 8);  /* pseudo header: addresses, protocol, length */
    sum += IPPROTO_UDP + 8 + (uint32_t)payload;
    uint16_t check = floem_net_fold(floem_net_sum(sum, udp, 8 + payload));
    floem_net_put16(udp + 6, check == 0 ? 0xffff : check);
}

bool floem_backend_rx_wait(unsigned q)
{
    return floem_backend_idle_due(&queues[q].empty_calls, IDLE_SPINS) &&
           floem_backend_wait_readable(queues[q].fd);
}

unsigned floem_backend_rx(unsigned q, floem_packet_t *pkts, unsigned max)
{
    void **spare = queues[q].spare;
    unsigned have = queues[q].n_spare;
    if (have < max) {
        unsigned got = floem_pool_get(spare + have, max - have);
        if (got < max - have)
            __atomic_fetch_add(&floem_net_alloc_failed, 1, __ATOMIC_RELAXED);
        have += got;
        queues[q].n_spare = have;
    }
    unsigned use = have < max ? have : max;
    struct mmsghdr msgs[FLOEM_NET_RX_BURST];
    struct iovec iov[FLOEM_NET_RX_BURST];
    struct sockaddr_in from[FLOEM_NET_RX_BURST];
    union {
        char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
        struct cmsghdr align;
    } control[FLOEM_NET_RX_BURST];
    for (unsigned i = 0; i < use; i++) {
        iov[i] = (struct iovec){(uint8_t *)spare[i] + HEADERS, FLOEM_NET_BUFFER_BYTES - HEADERS};
        msgs[i].msg_hdr = (struct msghdr){.msg_name = &from[i], .msg_namelen = sizeof from[i],
                                          .msg_iov = &iov[i], .msg_iovlen = 1,
                                          .msg_control = control[i].buf,
                                          .msg_controllen = sizeof control[i].buf};
    }
    int got = use == 0 ? 0 : recvmmsg(queues[q].fd, msgs, use, MSG_DONTWAIT | MSG_TRUNC, NULL);
    if (got <= 0)
        return 0;
    __atomic_store_n(&queues[q].empty_calls, 0, __ATOMIC_RELAXED);
    unsigned n = 0;
    for (int i = 0; i < got; i++) {
        struct msghdr *h = &msgs[i].msg_hdr;
        struct in_addr to = {0};
        for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c != NULL; c = CMSG_NXTHDR(h, c))
            if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
                struct in_pktinfo info;
                memcpy(&info, CMSG_DATA(c), sizeof info);
                to = info.ipi_addr;
            }
        if (h->msg_namelen != sizeof from[i]) {
            floem_net_queue[q].rx_dropped++;
            continue;
        }
        size_t datagram = msgs[i].msg_len;      /* its whole length, with MSG_TRUNC */
        size_t held = datagram < iov[i].iov_len ? datagram : iov[i].iov_len;
        uint8_t *frame = spare[i];
        synthesise(frame, datagram, held, &from[i], to, queues[q].ip_id++);
        floem_pool_frame(frame, (uint32_t)(HEADERS + held));
        pkts[n++] = (floem_packet_t){frame, (uint32_t)(HEADERS + held), frame};
        spare[i] = NULL;
    }
    /* Keep the buffers that hold nothing for the next call, packed at the front. */
    unsigned keep = 0;
    for (unsigned i = 0; i < have; i++)
        if (spare[i] != NULL)
            spare[keep++] = spare[i];
    queues[q].n_spare = keep;
    return n;
}

/* Where frame `p` goes: its UDP payload, destination and source; false if it is not IPv4/UDP. */
static bool parse_frame(const floem_packet_t *p, struct iovec *payload, struct sockaddr_in *to,
                        struct in_pktinfo *from)
{
    if (!floem_pool_holds(p->buffer, p->data, p->len))
        return false;
    const uint8_t *f = p->data;
    size_t len = p->len;
    if (len < HEADERS || floem_net_get16(f + 12) != 0x0800 || (f[14] >> 4) != 4 || f[23] != IPPROTO_UDP)
        return false;
    size_t ihl = (size_t)(f[14] & 0x0f) * 4;
    if (ihl < 20 || 14 + ihl + 8 > len)
        return false;
    const uint8_t *udp = f + 14 + ihl;
    size_t udp_len = floem_net_get16(udp + 4);
    if (udp_len < 8 || udp_len > len - 14 - ihl)
        return false;
    *payload = (struct iovec){(void *)(udp + 8), udp_len - 8};
    *to = (struct sockaddr_in){.sin_family = AF_INET};
    memcpy(&to->sin_addr, f + 30, 4);
    memcpy(&to->sin_port, udp + 2, 2);
    *from = (struct in_pktinfo){0};
    memcpy(&from->ipi_spec_dst, f + 26, 4);
    return true;
}

void floem_backend_send(unsigned q, floem_packet_t *pkts, unsigned n)
{
    struct mmsghdr msgs[FLOEM_NET_TX_BURST];
    struct iovec iov[FLOEM_NET_TX_BURST];
    struct sockaddr_in to[FLOEM_NET_TX_BURST];
    union {
        char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
        struct cmsghdr align;
    } control[FLOEM_NET_TX_BURST];
    void *buffers[FLOEM_NET_TX_BURST];
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++) {
        struct in_pktinfo from;
        buffers[i] = pkts[i].buffer;
        if (!parse_frame(&pkts[i], &iov[m], &to[m], &from)) {
            floem_net_queue[q].tx_dropped++;
            continue;
        }
        msgs[m].msg_hdr = (struct msghdr){.msg_name = &to[m], .msg_namelen = sizeof to[m],
                                          .msg_iov = &iov[m], .msg_iovlen = 1};
        if (from.ipi_spec_dst.s_addr != htonl(INADDR_ANY)) {
            msgs[m].msg_hdr.msg_control = control[m].buf;
            msgs[m].msg_hdr.msg_controllen = sizeof control[m].buf;
            struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[m].msg_hdr);
            c->cmsg_level = IPPROTO_IP;
            c->cmsg_type = IP_PKTINFO;
            c->cmsg_len = CMSG_LEN(sizeof from);
            memcpy(CMSG_DATA(c), &from, sizeof from);
        }
        m++;
    }
    unsigned done = 0;
    bool waited = false;
    while (done < m) {
        int sent = sendmmsg(queues[q].fd, msgs + done, m - done, 0);
        if (sent > 0) {
            done += (unsigned)sent;
            floem_net_queue[q].tx += (unsigned)sent;
        } else if ((errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) && !waited) {
            struct pollfd pfd = {.fd = queues[q].fd, .events = POLLOUT};
            (void)poll(&pfd, 1, SEND_WAIT_MS);
            waited = true;
        } else {
            done++;     /* this one failed (no route, bad source address...): skip it */
            floem_net_queue[q].tx_dropped++;
            waited = false;
        }
    }
    floem_pool_put(buffers, n);     /* aborts on a buffer the network never gave */
}

/* The datagrams the kernel dropped at socket `fd` (receive buffer full), in *drops; false
 * when it cannot say (errno set). */
static bool socket_drops(int fd, uint64_t *drops)
{
#ifdef SO_MEMINFO
    uint32_t info[SK_MEMINFO_VARS];
    socklen_t len = sizeof info;
    if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, info, &len) != 0)
        return false;
    if (len < (SK_MEMINFO_DROPS + 1) * sizeof info[0]) {
        errno = EINVAL;
        return false;
    }
    *drops = info[SK_MEMINFO_DROPS];
    return true;
#else
    (void)fd;
    (void)drops;
    errno = ENOPROTOOPT;
    return false;
#endif
}

void floem_backend_report(FILE *out)
{
    uint64_t drops = 0;
    for (unsigned q = 0; q < n_queues; q++) {
        uint64_t d;
        if (!socket_drops(queues[q].fd, &d)) {
            fprintf(out, "floem: net udp: socket drops unknown (SO_MEMINFO: %s)\n",
                    strerror(errno));
            return;
        }
        drops += d;
    }
    fprintf(out, "floem: net udp: socket drops %llu (the kernel's, receive buffers full)\n",
            (unsigned long long)drops);
}

#endif
