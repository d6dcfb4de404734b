/* A DPDK client that replays a capture into a port as fast as the port takes frames and
 * counts the frames that come back: benchmarks/explore/this_machine.py runs it as the memif
 * client of a Floem program served over `--net dpdk` (the memif server), each on a core of
 * its own, to measure the program's packets per second on this machine.
 *
 * Usage: replay [EAL arguments] -- CAPTURE SECONDS [PRELOAD]
 *
 * Frames are read with libpcap. First, when PRELOAD (a capture) is given, its frames are
 * sent once, at most WINDOW unanswered at a time, until each has had a frame back (a
 * key-value store's SETs of every key; at most PRELOAD_SECONDS). Then CAPTURE's frames are
 * sent in a loop for SECONDS, open loop: every turn a burst of the next frames is offered
 * to the port, which takes what its ring has room for (the rest is offered again), so the
 * server always has frames waiting; every frame that comes back is counted and freed.
 * CAPTURE's frames are put in mbufs once, before the loop, and sent again and again (a
 * reference taken for each sending), so that the client does as little as it can per frame
 * and keeps a server on another core busy; with memif's zero-copy client mode
 * (zero-copy=yes), nothing is copied on its side at all. The client prints "running" on
 * stdout when the loop starts, "stopped" when it ends, then
 *     sent=N received=N seconds=S full=F
 * (the frames sent and received in the loop; seconds by the client's clock; F the share of
 * the bursts offered that found the port's ring full: near 1, the server was the
 * bottleneck throughout). Exit status 1 when the port does not come up within
 * LINK_SECONDS, the preload is not answered, or a capture cannot be read; 2 for bad
 * arguments.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#define BURST 32
#define DESCRIPTORS 1024
#define SPARE_MBUFS 8192            /* beyond the capture's: the preload's and replies' */
#define WINDOW 256
#define LINK_SECONDS 30.0
#define PRELOAD_SECONDS 120.0

struct capture {
    size_t count;
    uint16_t *len;
    uint8_t (*data)[2048];
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool load(const char *path, struct capture *c)
{
    char error[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_open_offline(path, error);
    if (p == NULL) {
        fprintf(stderr, "replay: %s: %s\n", path, error);
        return false;
    }
    size_t room = 1024;
    c->count = 0;
    c->len = malloc(room * sizeof *c->len);
    c->data = malloc(room * sizeof *c->data);
    struct pcap_pkthdr *h;
    const unsigned char *bytes;
    while (c->len != NULL && c->data != NULL && pcap_next_ex(p, &h, &bytes) == 1) {
        if (h->caplen > sizeof c->data[0])
            continue;
        if (c->count == room) {
            room *= 2;
            c->len = realloc(c->len, room * sizeof *c->len);
            c->data = realloc(c->data, room * sizeof *c->data);
            if (c->len == NULL || c->data == NULL)
                break;
        }
        c->len[c->count] = (uint16_t)h->caplen;
        memcpy(c->data[c->count], bytes, h->caplen);
        c->count++;
    }
    pcap_close(p);
    if (c->len == NULL || c->data == NULL || c->count == 0) {
        fprintf(stderr, "replay: %s: no frames\n", path);
        return false;
    }
    return true;
}

/* Fill `out` with mbufs holding the next `n` frames of `c` from *next on; how many. */
static unsigned frames(struct rte_mempool *pool, const struct capture *c, size_t *next,
                       struct rte_mbuf **out, unsigned n)
{
    if (rte_pktmbuf_alloc_bulk(pool, out, n) != 0)
        return 0;
    for (unsigned i = 0; i < n; i++) {
        size_t k = (*next)++ % c->count;
        char *data = rte_pktmbuf_append(out[i], c->len[k]);
        memcpy(data, c->data[k], c->len[k]);
    }
    return n;
}

/* Every frame of `c` in an mbuf of its own (NULL when the pool runs out). */
static struct rte_mbuf **prebuilt(struct rte_mempool *pool, const struct capture *c)
{
    struct rte_mbuf **all = malloc(c->count * sizeof *all);
    size_t next = 0;
    if (all == NULL || frames(pool, c, &next, all, (unsigned)c->count) != c->count) {
        fprintf(stderr, "replay: no room for the capture's %zu frames\n", c->count);
        free(all);
        return NULL;
    }
    return all;
}

static unsigned drain(uint16_t port)
{
    struct rte_mbuf *got[BURST];
    uint16_t n = rte_eth_rx_burst(port, 0, got, BURST);
    rte_pktmbuf_free_bulk(got, n);
    return n;
}

static bool preload(uint16_t port, struct rte_mempool *pool, const struct capture *c)
{
    size_t next = 0;
    uint64_t sent = 0, answered = 0;
    double deadline = now() + PRELOAD_SECONDS;
    while (answered < c->count && now() < deadline) {
        answered += drain(port);
        if (sent < c->count && sent - answered < WINDOW) {
            struct rte_mbuf *one[1];
            if (frames(pool, c, &next, one, 1) == 1) {
                if (rte_eth_tx_burst(port, 0, one, 1) == 1)
                    sent++;
                else {
                    rte_pktmbuf_free(one[0]);
                    next--;
                }
            }
        }
    }
    if (answered < c->count)
        fprintf(stderr, "replay: the preload had %" PRIu64 " of %zu frames answered\n",
                answered, c->count);
    return answered >= c->count;
}

int main(int argc, char **argv)
{
    int eal = rte_eal_init(argc, argv);
    if (eal < 0) {
        fprintf(stderr, "replay: EAL initialisation failed\n");
        return 1;
    }
    argc -= eal;
    argv += eal;
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: replay [EAL arguments] -- CAPTURE SECONDS [PRELOAD]\n");
        return 2;
    }
    double seconds = atof(argv[2]);
    struct capture work, warm;
    if (!load(argv[1], &work) || (argc == 4 && !load(argv[3], &warm)))
        return 1;
    /* The loop's frames stay in their mbufs; the preload's are made one at a time, at most
     * WINDOW unanswered, and freed (the key-value store's 100,000 SETs would not fit in
     * EAL's 256 MB as mbufs of their own). */
    size_t mbufs = work.count + SPARE_MBUFS;
    struct rte_mempool *pool = rte_pktmbuf_pool_create("replay", (unsigned)mbufs, 256, 0,
                                                       RTE_MBUF_DEFAULT_BUF_SIZE,
                                                       (int)rte_socket_id());
    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof conf);
    uint16_t port = 0;
    if (pool == NULL || rte_eth_dev_count_avail() == 0
        || rte_eth_dev_configure(port, 1, 1, &conf) != 0
        || rte_eth_rx_queue_setup(port, 0, DESCRIPTORS, (unsigned)rte_socket_id(), NULL,
                                  pool) != 0
        || rte_eth_tx_queue_setup(port, 0, DESCRIPTORS, (unsigned)rte_socket_id(), NULL) != 0
        || rte_eth_dev_start(port) != 0) {
        fprintf(stderr, "replay: cannot start the port\n");
        return 1;
    }
    struct rte_eth_link link;
    double deadline = now() + LINK_SECONDS;
    do {
        rte_eth_link_get_nowait(port, &link);
    } while (link.link_status != RTE_ETH_LINK_UP && now() < deadline);
    if (link.link_status != RTE_ETH_LINK_UP) {
        fprintf(stderr, "replay: the port did not come up in %.0f s\n", LINK_SECONDS);
        return 1;
    }
    if (argc == 4 && !preload(port, pool, &warm))
        return 1;
    struct rte_mbuf **loop = prebuilt(pool, &work);
    if (loop == NULL)
        return 1;
    printf("running\n");
    fflush(stdout);
    struct rte_mbuf *pending[BURST];
    unsigned waiting = 0;
    size_t next = 0;
    uint64_t sent = 0, received = 0, offered = 0, full = 0;
    double start = now(), end = start + seconds;
    while (now() < end) {
        received += drain(port);
        for (; waiting < BURST; waiting++) {
            pending[waiting] = loop[next++ % work.count];
            rte_mbuf_refcnt_update(pending[waiting], 1);
        }
        uint16_t taken = rte_eth_tx_burst(port, 0, pending, (uint16_t)waiting);
        offered++;
        full += taken < waiting;
        sent += taken;
        memmove(pending, pending + taken, (waiting - taken) * sizeof pending[0]);
        waiting -= taken;
    }
    double stop = now();
    printf("stopped\n");
    fflush(stdout);
    while (now() < stop + 0.2)
        drain(port);
    rte_pktmbuf_free_bulk(pending, waiting);
    printf("sent=%" PRIu64 " received=%" PRIu64 " seconds=%.3f full=%.3f\n", sent, received,
           stop - start, offered ? (double)full / (double)offered : 0.0);
    rte_eth_dev_stop(port);
    rte_eal_cleanup();
    return 0;
}
