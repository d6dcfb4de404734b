/* Packet I/O backend `xdp` (FLOEM_NET_XDP): AF_XDP sockets on the interface FLOEM_XDP_IFACE.
 *
 * The kernel's network stack keeps the interface: an XDP program (below) hands the frames
 * of UDP port FLOEM_NET_PORT (default 9000) to FLOEM_NET_ADDR (default: any address) to this
 * program's AF_XDP sockets, one per queue, and passes every other frame on to the kernel (ARP,
 * ICMP, other ports: the interface keeps working for everything else). Clients reach the
 * program through the kernel's network stack, as they reach a UDP server; the program reads
 * whole Ethernet frames from the receive ring and writes whole frames to the transmit ring,
 * with no socket layer in between.
 *
 * Queue q's socket is bound to the interface's receive queue q (FLOEM_NET_QUEUES sockets;
 * the interface's own RSS spreads flows over them); all share one UMEM, the frame buffer
 * pool of net.c (FLOEM_NET_BUFFER_BYTES-byte buffers, page-aligned), so a received frame is
 * a pool buffer whose data begins XDP_PACKET_HEADROOM bytes in, NetAlloc gives a pool buffer,
 * and an element may move a frame's data or shorten it within its buffer before sending. The
 * kernel picks zero-copy where the driver can, copy mode elsewhere (veth). Each queue keeps
 * its fill ring stocked from the pool at every receive and returns what the completion ring
 * hands back at every receive and send.
 *
 * The XDP program is attached through a BPF link owned by this process, so it is detached
 * when the process ends, however it ends; an interface that already has an XDP program is
 * refused. It is assembled here (a few instructions, like libbpf's own default AF_XDP
 * program): an IPv4 frame without options, not a fragment, of UDP to the port (and address)
 * goes to the socket of its receive queue if there is one (bpf_redirect_map on an XSKMAP);
 * everything else, and frames of a queue with no socket, are XDP_PASS. Needs root
 * (CAP_NET_ADMIN, CAP_BPF) and a kernel with XDP and AF_XDP (5.9 or later: BPF links).
 * The report adds the sockets' own counters (XDP_STATISTICS).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#ifdef FLOEM_NET_XDP

#include "floem/net_backend.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>

const char floem_backend_name[] = "xdp";

/* Descriptors in each ring of a socket (fill, completion, receive, transmit). */
#define RING_SIZE 1024
/* Bytes of a frame: Ethernet, IPv4 without options, UDP. */
#define UDP_HEADERS (14 + 20 + 8)
/* Empty receive calls in a row before a receive waits (floem_backend_wait_readable) in
 * poll() for frames on the receive ring: an idle server sleeps instead of spinning on its
 * core (a thread that manages a sync layer makes more first: floem_backend_idle_due). */
#define IDLE_SPINS 2
/* Buffers a fill ring is short of before the receive restocks it from the pool. */
#define RESTOCK_AT 16

static struct {
    struct xsk_socket *xsk;
    struct xsk_ring_prod fill, tx;
    struct xsk_ring_cons comp, rx;
    unsigned stocked;           /* buffers on the fill ring or the kernel's for receiving */
    bool zero_copy;             /* else copy mode: every send needs a system call */
    unsigned empty_calls;       /* receives in a row that found nothing (atomic) */
} queues[FLOEM_NET_MAX_QUEUES];
static unsigned n_queues, stock;
static struct xsk_umem *umem;
static unsigned char *area;
static int prog_fd = -1, map_fd = -1, link_fd = -1;
static char iface[IF_NAMESIZE];
static unsigned ifindex;

#define INSN(c, d, s, o, i) \
    ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
#define MOV_REG(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ADD_IMM(d, i) INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define AND_IMM(d, i) INSN(BPF_ALU64 | BPF_AND | BPF_K, d, 0, 0, i)
#define LOAD(size, d, s, o) INSN(BPF_LDX | BPF_MEM | (size), d, s, o, 0)
#define JNE_IMM(d, i) INSN(BPF_JMP32 | BPF_JNE | BPF_K, d, 0, 0, i)
#define JGT_REG(d, s) INSN(BPF_JMP | BPF_JGT | BPF_X, d, s, 0, 0)
#define CALL(f) INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* A BPF program being assembled: its instructions and the jumps to its final XDP_PASS. */
typedef struct {
    struct bpf_insn insn[32];
    unsigned n, jumps[16], n_jumps;
} program_t;

static void emit(program_t *p, struct bpf_insn insn)
{
    p->insn[p->n++] = insn;
}

/* A conditional jump whose target is the XDP_PASS at the end. */
static void pass_if(program_t *p, struct bpf_insn jump)
{
    p->jumps[p->n_jumps++] = p->n;
    emit(p, jump);
}

/* The XDP program: frames of UDP `port` (network order) to `addr` (INADDR_ANY: any) go to
 * the XSKMAP `map` at their receive queue; the rest pass to the kernel. */
static int load_program(uint16_t port, struct in_addr addr, int map)
{
    program_t p = {.n = 0};
    emit(&p, MOV_REG(BPF_REG_6, BPF_REG_1));                             /* r6 = ctx */
    emit(&p, LOAD(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(struct xdp_md, data)));
    emit(&p, LOAD(BPF_W, BPF_REG_3, BPF_REG_6, offsetof(struct xdp_md, data_end)));
    emit(&p, MOV_REG(BPF_REG_4, BPF_REG_2));
    emit(&p, ADD_IMM(BPF_REG_4, UDP_HEADERS));
    pass_if(&p, JGT_REG(BPF_REG_4, BPF_REG_3));                          /* shorter */
    emit(&p, LOAD(BPF_H, BPF_REG_4, BPF_REG_2, 12));                     /* EtherType */
    pass_if(&p, JNE_IMM(BPF_REG_4, htons(0x0800)));
    emit(&p, LOAD(BPF_B, BPF_REG_4, BPF_REG_2, 14));                     /* version, IHL */
    pass_if(&p, JNE_IMM(BPF_REG_4, 0x45));
    emit(&p, LOAD(BPF_B, BPF_REG_4, BPF_REG_2, 23));                     /* protocol */
    pass_if(&p, JNE_IMM(BPF_REG_4, IPPROTO_UDP));
    emit(&p, LOAD(BPF_H, BPF_REG_4, BPF_REG_2, 20));                     /* MF, fragment offset */
    emit(&p, AND_IMM(BPF_REG_4, htons(0x3fff)));
    pass_if(&p, JNE_IMM(BPF_REG_4, 0));
    emit(&p, LOAD(BPF_H, BPF_REG_4, BPF_REG_2, 36));                     /* UDP destination */
    pass_if(&p, JNE_IMM(BPF_REG_4, port));
    if (addr.s_addr != htonl(INADDR_ANY)) {
        emit(&p, LOAD(BPF_W, BPF_REG_4, BPF_REG_2, 30));                 /* IPv4 destination */
        pass_if(&p, JNE_IMM(BPF_REG_4, (int32_t)addr.s_addr));
    }
    emit(&p, LOAD(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(struct xdp_md, rx_queue_index)));
    emit(&p, INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map));
    emit(&p, INSN(0, 0, 0, 0, 0));                                      /* the fd's upper half */
    emit(&p, MOV_IMM(BPF_REG_3, XDP_PASS));         /* what a queue without a socket gets */
    emit(&p, CALL(BPF_FUNC_redirect_map));
    emit(&p, EXIT());
    for (unsigned i = 0; i < p.n_jumps; i++)
        p.insn[p.jumps[i]].off = (int16_t)(p.n - p.jumps[i] - 1);
    emit(&p, MOV_IMM(BPF_REG_0, XDP_PASS));
    emit(&p, EXIT());
    static char log[65536];
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .log_buf = log, .log_size = sizeof log);
    int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "floem_xdp", "Dual BSD/GPL", p.insn, p.n, &opts);
    if (fd < 0) {
        int err = errno;
        opts.log_level = 1;     /* again, for the verifier's account */
        (void)bpf_prog_load(BPF_PROG_TYPE_XDP, "floem_xdp", "Dual BSD/GPL", p.insn, p.n, &opts);
        floem_net_fail("cannot load the XDP program: bpf_prog_load: %s%s%s", strerror(err),
                       log[0] ? "\n" : "", log);
    }
    return fd;
}

static void restock(unsigned q);

/* The queue's socket on receive queue q of the interface, its rings in the shared UMEM;
 * 0 or a negative errno (-EINVAL: the interface has no queue q). */
static int open_socket(unsigned q)
{
    struct xsk_socket_config cfg = {
        .rx_size = RING_SIZE, .tx_size = RING_SIZE,
        .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,    /* ours is attached */
        .bind_flags = XDP_USE_NEED_WAKEUP,
    };
    int err = xsk_socket__create_shared(&queues[q].xsk, iface, q, umem, &queues[q].rx,
                                        &queues[q].tx, &queues[q].fill, &queues[q].comp, &cfg);
    if (err != 0)
        return err;
    int fd = xsk_socket__fd(queues[q].xsk);
    struct xdp_options opt;
    socklen_t len = sizeof opt;
    queues[q].zero_copy = getsockopt(fd, SOL_XDP, XDP_OPTIONS, &opt, &len) == 0 &&
                          (opt.flags & XDP_OPTIONS_ZEROCOPY);
    if (bpf_map_update_elem(map_fd, &q, &fd, BPF_ANY) != 0)
        floem_net_fail("%s queue %u: cannot enter the socket in the XSKMAP: %s", iface, q,
                       strerror(errno));
    return 0;
}

unsigned floem_backend_init(unsigned wanted)
{
    const char *name = getenv("FLOEM_XDP_IFACE");
    if (name == NULL || name[0] == '\0')
        floem_net_fail("no interface: set FLOEM_XDP_IFACE (floem run --iface NAME)");
    if (strlen(name) >= sizeof iface)
        floem_net_fail("FLOEM_XDP_IFACE=%s: not an interface name", name);
    strcpy(iface, name);
    ifindex = if_nametoindex(iface);
    if (ifindex == 0)
        floem_net_fail("no interface %s: %s", iface, strerror(errno));
    uint16_t port = floem_net_port_setting("UDP");
    struct in_addr addr = {floem_net_addr_setting(htonl(INADDR_ANY))};
    n_queues = wanted;
    map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "floem_xsks", sizeof(int), sizeof(int),
                            wanted, NULL);
    if (map_fd < 0)
        floem_net_fail("cannot create an XSKMAP: bpf_map_create: %s (AF_XDP needs root and a "
                       "kernel with CONFIG_XDP_SOCKETS)", strerror(errno));
    prog_fd = load_program(htons(port), addr, map_fd);
    link_fd = bpf_link_create(prog_fd, (int)ifindex, BPF_XDP, NULL);
    if (link_fd < 0) {
        int err = errno;
        floem_net_fail("cannot attach the XDP program to %s: bpf_link_create: %s%s", iface,
                       strerror(err), err == EBUSY || err == EEXIST
                       ? " (the interface has an XDP program already)" : "");
    }
    floem_pool_init();
    area = floem_pool_area();
    struct xsk_umem_config ucfg = {
        .fill_size = RING_SIZE, .comp_size = RING_SIZE,
        .frame_size = FLOEM_NET_BUFFER_BYTES, .frame_headroom = 0,
    };
    int err = xsk_umem__create(&umem, area, (uint64_t)FLOEM_NET_POOL_BUFFERS *
                               FLOEM_NET_BUFFER_BYTES, &queues[0].fill, &queues[0].comp, &ucfg);
    if (err != 0)
        floem_net_fail("cannot register the frame buffers as a UMEM: %s", strerror(-err));
    /* Half the pool on the fill rings at most: the rest for NetAlloc and frames in flight. */
    stock = FLOEM_NET_POOL_BUFFERS / 2 / wanted;
    if (stock > RING_SIZE)
        stock = RING_SIZE;
    for (unsigned q = 0; q < wanted; q++) {
        int err = open_socket(q);
        if (err == -EINVAL && q > 0) {      /* no more queues: as many as the interface has */
            n_queues = q;
            break;
        }
        if (err != 0)
            floem_net_fail("%s queue %u: cannot open an AF_XDP socket: %s", iface, q,
                           strerror(-err));
        restock(q);             /* frames arriving from now on have buffers */
    }
    char a[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &addr, a, sizeof a);
    fprintf(stderr, "floem: net xdp: ready on UDP port %u of %s, interface %s\n",
            (unsigned)port, addr.s_addr == htonl(INADDR_ANY) ? "any address" : a, iface);
    return n_queues;
}

/* Give the pool back the buffers of the frames the kernel has sent. */
static void reclaim(unsigned q)
{
    uint32_t idx;
    unsigned done = xsk_ring_cons__peek(&queues[q].comp, RING_SIZE, &idx);
    if (done == 0)
        return;
    void *bufs[64];
    for (unsigned i = 0; i < done;) {
        unsigned k = 0;
        for (; k < 64 && i < done; k++, i++) {
            uint64_t addr = *xsk_ring_cons__comp_addr(&queues[q].comp, idx + i);
            bufs[k] = area + (addr & ~(uint64_t)(FLOEM_NET_BUFFER_BYTES - 1));
        }
        floem_pool_put(bufs, k);
    }
    xsk_ring_cons__release(&queues[q].comp, done);
}

/* Keep the fill ring stocked with free buffers for the kernel to receive into. */
static void restock(unsigned q)
{
    unsigned want = stock - queues[q].stocked;
    if (want < RESTOCK_AT)
        return;
    void *bufs[RING_SIZE];
    unsigned got = floem_pool_get(bufs, want);
    uint32_t idx;
    unsigned room = xsk_ring_prod__reserve(&queues[q].fill, got, &idx);
    for (unsigned i = 0; i < room; i++)
        *xsk_ring_prod__fill_addr(&queues[q].fill, idx + i) =
            (uint64_t)((unsigned char *)bufs[i] - area);
    xsk_ring_prod__submit(&queues[q].fill, room);
    floem_pool_put(bufs + room, got - room);
    __atomic_store_n(&queues[q].stocked, queues[q].stocked + room, __ATOMIC_RELAXED);
}

void floem_backend_finalize(void)
{
    for (unsigned q = 0; q < n_queues; q++) {
        xsk_socket__delete(queues[q].xsk);
        memset(&queues[q], 0, sizeof queues[q]);
    }
    if (umem != NULL)
        (void)xsk_umem__delete(umem);
    umem = NULL;
    close(link_fd);     /* detaches the program */
    close(prog_fd);
    close(map_fd);
    link_fd = prog_fd = map_fd = -1;
    n_queues = 0;
    floem_pool_destroy();
}

bool floem_backend_rx_done(void)
{
    return false;
}

bool floem_backend_rx_wait(unsigned q)
{
    if (!floem_backend_idle_due(&queues[q].empty_calls, IDLE_SPINS))
        return false;
    /* A fill ring the pool could not stock (every buffer in the program) receives nothing,
     * so nothing would end the wait: the thread's back-off takes over until it is stocked. */
    if (__atomic_load_n(&queues[q].stocked, __ATOMIC_RELAXED) + RESTOCK_AT <= stock)
        return false;
    return floem_backend_wait_readable(xsk_socket__fd(queues[q].xsk));
}

unsigned floem_backend_rx(unsigned q, floem_net_frame_t *frames, unsigned max)
{
    reclaim(q);
    restock(q);
    uint32_t idx;
    unsigned got = xsk_ring_cons__peek(&queues[q].rx, max, &idx);
    if (got == 0) {
        if (xsk_ring_prod__needs_wakeup(&queues[q].fill))
            (void)recvfrom(xsk_socket__fd(queues[q].xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
        return 0;
    }
    for (unsigned i = 0; i < got; i++) {
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&queues[q].rx, idx + i);
        unsigned char *buffer = area + (d->addr & ~(uint64_t)(FLOEM_NET_BUFFER_BYTES - 1));
        frames[i] = (floem_packet_t){area + d->addr, d->len, buffer};
        floem_pool_frame_at(buffer, area + d->addr, d->len);
    }
    xsk_ring_cons__release(&queues[q].rx, got);
    __atomic_store_n(&queues[q].stocked, queues[q].stocked - got, __ATOMIC_RELAXED);
    __atomic_store_n(&queues[q].empty_calls, 0, __ATOMIC_RELAXED);
    return got;
}

void floem_backend_send(unsigned q, floem_packet_t *pkts, unsigned n)
{
    void *dropped[FLOEM_NET_TX_BURST];
    const floem_packet_t *ok[FLOEM_NET_TX_BURST];
    unsigned n_dropped = 0, n_ok = 0;
    for (unsigned i = 0; i < n; i++) {
        if (floem_pool_holds(pkts[i].buffer, pkts[i].data, pkts[i].len) && pkts[i].len > 0)
            ok[n_ok++] = &pkts[i];
        else
            dropped[n_dropped++] = pkts[i].buffer;
    }
    reclaim(q);
    uint32_t idx;
    unsigned room = xsk_ring_prod__reserve(&queues[q].tx, n_ok, &idx);
    for (unsigned i = 0; i < room; i++) {
        struct xdp_desc *d = xsk_ring_prod__tx_desc(&queues[q].tx, idx + i);
        d->addr = (uint64_t)((unsigned char *)ok[i]->data - area);
        d->len = ok[i]->len;
    }
    for (unsigned i = room; i < n_ok; i++)     /* the transmit ring is full */
        dropped[n_dropped++] = ok[i]->buffer;
    xsk_ring_prod__submit(&queues[q].tx, room);
    if (room > 0 && (!queues[q].zero_copy || xsk_ring_prod__needs_wakeup(&queues[q].tx)))
        (void)sendto(xsk_socket__fd(queues[q].xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
    floem_pool_put(dropped, n_dropped);     /* aborts on a buffer the network never gave */
    floem_net_queue[q].tx += room;
    floem_net_queue[q].tx_dropped += n_dropped;
    reclaim(q);
}

void floem_backend_report(FILE *out)
{
    struct xdp_statistics total = {0};
    bool zero_copy = false;
    for (unsigned q = 0; q < n_queues; q++) {
        struct xdp_statistics st;
        socklen_t len = sizeof st;
        int fd = xsk_socket__fd(queues[q].xsk);
        if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &st, &len) != 0) {
            fprintf(out, "floem: net xdp: socket counters unknown (XDP_STATISTICS: %s)\n",
                    strerror(errno));
            return;
        }
        total.rx_dropped += st.rx_dropped;
        total.rx_invalid_descs += st.rx_invalid_descs;
        total.tx_invalid_descs += st.tx_invalid_descs;
        total.rx_ring_full += st.rx_ring_full;
        total.rx_fill_ring_empty_descs += st.rx_fill_ring_empty_descs;
        zero_copy |= queues[q].zero_copy;
    }
    fprintf(out, "floem: net xdp: interface %s, %s: kernel rx dropped %llu, rx ring full %llu, "
            "fill ring empty %llu, invalid rx %llu, invalid tx %llu\n", iface,
            zero_copy ? "zero-copy" : "copy mode", (unsigned long long)total.rx_dropped,
            (unsigned long long)total.rx_ring_full,
            (unsigned long long)total.rx_fill_ring_empty_descs,
            (unsigned long long)total.rx_invalid_descs,
            (unsigned long long)total.tx_invalid_descs);
}

#endif
