/* Packet I/O backend `dpdk` (FLOEM_NET_DPDK): DPDK 22.11, the first ethdev port.
 *
 * floem_net_init calls rte_eal_init with FLOEM_DPDK_EAL split on spaces, after
 * EAL_DEFAULTS (quiet informational lines, no shared config files, no telemetry
 * socket; later arguments such as --log-level=info or --telemetry override
 * them), restores the caller's CPU affinity that EAL narrows (segment threads
 * inherit it), and opens the first port with FLOEM_NET_QUEUES receive and
 * transmit queues (fewer if the device has fewer), RSS over IP/UDP/TCP when
 * there are several and the device supports it. A frame is its mbuf
 * (floem_net_frame_t); its packet has `buffer` the struct rte_mbuf *, `data`
 * rte_pktmbuf_mtod; an element may move `data` and change `len` within the mbuf's
 * buffer before sending (floem_backend_frame then re-points the mbuf; a frame sent as
 * it came is staged as it is, inline in floem/net.h). Multi-segment mbufs are dropped
 * and counted. Segment threads register with EAL (rte_thread_register)
 * on first use, so the mempool's per-lcore caches serve them.
 *
 * What EAL prints goes to stderr, never to the program's stdout.
 *
 * Without hugepages or PCI devices, vdevs work as ports, e.g.
 *   FLOEM_DPDK_EAL="--no-huge --no-pci -m 256
 *                   --vdev=net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap"
 * EAL always makes a runtime directory (/var/run/dpdk/<file prefix> as root,
 * else $XDG_RUNTIME_DIR/dpdk/<prefix>); --no-shconf and --no-telemetry keep it
 * empty, and finalize removes it and its parent when they are empty, so a run
 * that ends normally leaves nothing behind. (--in-memory would do the same but
 * cannot be combined with --no-huge.) Floem processes are all DPDK primaries:
 * without shared config, DPDK secondary processes cannot attach to them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#ifdef FLOEM_NET_DPDK

#include "floem/net_backend.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

const char floem_backend_name[] = "dpdk";

#define RX_DESCRIPTORS 1024
#define TX_DESCRIPTORS 1024
#define MBUF_CACHE 256
#define SPARE_MBUFS 8192
#define TX_RETRIES 3
#define MAX_EAL_ARGS 128

static const char *const EAL_DEFAULTS[] = {"--log-level=notice", "--no-shconf", "--no-telemetry"};

static char *eal_text;
static char *eal_argv[MAX_EAL_ARGS + 2];
static uint16_t port_id;
static unsigned n_queues;
static bool rss;
static struct rte_mempool *pool;
static _Thread_local bool registered;
static char runtime_dir[PATH_MAX];

/* Let a segment thread use the mempool's per-lcore cache (once per thread). */
static inline void register_thread(void)
{
    if (__builtin_expect(!registered, 0)) {
        registered = true;
        (void)rte_thread_register();    /* without an lcore id the pool still works, uncached */
    }
}

static int split_eal_args(void)
{
    const char *text = getenv("FLOEM_DPDK_EAL");
    eal_text = strdup(text != NULL ? text : "");
    if (eal_text == NULL)
        floem_net_fail("out of memory");
    int argc = 0;
    eal_argv[argc++] = "floem";
    for (unsigned i = 0; i < sizeof EAL_DEFAULTS / sizeof EAL_DEFAULTS[0]; i++)
        eal_argv[argc++] = (char *)EAL_DEFAULTS[i];
    for (char *save = NULL, *arg = strtok_r(eal_text, " \t\n", &save); arg != NULL;
         arg = strtok_r(NULL, " \t\n", &save)) {
        if (argc == MAX_EAL_ARGS)
            floem_net_fail("FLOEM_DPDK_EAL has too many arguments (at most %d in all)",
                           MAX_EAL_ARGS);
        eal_argv[argc++] = arg;
    }
    eal_argv[argc] = NULL;
    return argc;
}

/* Remove EAL's runtime directory and its parent (.../dpdk) if nothing is left in them. */
static void remove_runtime_dir(void)
{
    if (runtime_dir[0] == '\0' || rmdir(runtime_dir) != 0)
        return;
    char *slash = strrchr(runtime_dir, '/');
    if (slash != NULL && slash != runtime_dir) {
        *slash = '\0';
        (void)rmdir(runtime_dir);
    }
    runtime_dir[0] = '\0';
}

/* rte_eal_init, with what EAL prints (usage, notices) on stderr: stdout is the program's. */
static void init_eal(void)
{
    cpu_set_t affinity;
    bool have_affinity = pthread_getaffinity_np(pthread_self(), sizeof affinity, &affinity) == 0;
    rte_openlog_stream(stderr);
    int argc = split_eal_args();
    fflush(stdout);
    int saved_stdout = dup(STDOUT_FILENO);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    int ret = rte_eal_init(argc, eal_argv);
    int err = rte_errno;
    fflush(stdout);
    if (saved_stdout >= 0) {
        dup2(saved_stdout, STDOUT_FILENO);
        close(saved_stdout);
    }
    const char *dir = rte_eal_get_runtime_dir();
    snprintf(runtime_dir, sizeof runtime_dir, "%s", dir != NULL ? dir : "");
    atexit(remove_runtime_dir);     /* also when setting up the port fails */
    if (ret < 0) {
        floem_net_fail("rte_eal_init failed: %s (EAL arguments from FLOEM_DPDK_EAL: %s)",
                       rte_strerror(err), getenv("FLOEM_DPDK_EAL") ? getenv("FLOEM_DPDK_EAL") : "");
    }
    if (have_affinity)
        pthread_setaffinity_np(pthread_self(), sizeof affinity, &affinity);
}

static void configure_port(unsigned wanted)
{
    struct rte_eth_dev_info info;
    int err = rte_eth_dev_info_get(port_id, &info);
    if (err != 0)
        floem_net_fail("port %u: rte_eth_dev_info_get: %s", port_id, rte_strerror(-err));
    n_queues = wanted;
    if (n_queues > info.max_rx_queues)
        n_queues = info.max_rx_queues;
    if (n_queues > info.max_tx_queues)
        n_queues = info.max_tx_queues;
    if (n_queues == 0)
        floem_net_fail("port %u (%s) has no receive or transmit queue", port_id, info.driver_name);
    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof conf);
    rss = n_queues > 1 && info.flow_type_rss_offloads != 0;
    if (rss) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf =
            (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP) & info.flow_type_rss_offloads;
    }
    if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
    err = rte_eth_dev_configure(port_id, (uint16_t)n_queues, (uint16_t)n_queues, &conf);
    if (err != 0)
        floem_net_fail("port %u: rte_eth_dev_configure (%u queues): %s", port_id, n_queues,
                       rte_strerror(-err));
    uint16_t rxd = RX_DESCRIPTORS, txd = TX_DESCRIPTORS;
    (void)rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &rxd, &txd);
    int socket = rte_eth_dev_socket_id(port_id);
    if (socket < 0)
        socket = (int)rte_socket_id();
    unsigned mbufs = n_queues * (rxd + txd) + SPARE_MBUFS;
    pool = rte_pktmbuf_pool_create("floem_mbufs", mbufs, MBUF_CACHE, 0,
                                   RTE_MBUF_DEFAULT_BUF_SIZE, socket);
    if (pool == NULL)
        floem_net_fail("cannot create a pool of %u mbufs: %s (give EAL more memory: -m)", mbufs,
                       rte_strerror(rte_errno));
    struct rte_eth_txconf txconf = info.default_txconf;
    txconf.offloads = conf.txmode.offloads;
    for (unsigned q = 0; q < n_queues; q++) {
        err = rte_eth_rx_queue_setup(port_id, (uint16_t)q, rxd, (unsigned)socket, NULL, pool);
        if (err == 0)
            err = rte_eth_tx_queue_setup(port_id, (uint16_t)q, txd, (unsigned)socket, &txconf);
        if (err != 0)
            floem_net_fail("port %u: queue %u setup: %s", port_id, q, rte_strerror(-err));
    }
    err = rte_eth_dev_start(port_id);
    if (err != 0)
        floem_net_fail("port %u: rte_eth_dev_start: %s", port_id, rte_strerror(-err));
    (void)rte_eth_promiscuous_enable(port_id);
}

unsigned floem_backend_init(unsigned wanted)
{
    init_eal();
    uint16_t id;
    bool found = false;
    RTE_ETH_FOREACH_DEV(id) {
        if (!found) {
            port_id = id;
            found = true;
        }
    }
    if (!found)
        floem_net_fail("no DPDK port: give EAL a device or a vdev, e.g. --vdev=net_ring0");
    configure_port(wanted);
    return n_queues;
}

void floem_backend_finalize(void)
{
    (void)rte_eth_dev_stop(port_id);
    (void)rte_eth_dev_close(port_id);
    rte_mempool_free(pool);
    pool = NULL;
    rte_eal_cleanup();
    remove_runtime_dir();
    free(eal_text);
    eal_text = NULL;
}

bool floem_backend_rx_done(void)
{
    return false;
}

bool floem_backend_rx_wait(unsigned queue)
{
    (void)queue;                    /* polled: never waits */
    return false;
}

/* Drop the chained mbufs among `n` received ones, keeping the others in order; how many
 * are left. */
static unsigned drop_chained(unsigned q, struct rte_mbuf **m, unsigned n)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < n; i++) {
        if (m[i]->nb_segs == 1) {
            m[kept++] = m[i];
        } else {
            rte_pktmbuf_free(m[i]);
            floem_net_queue[q].rx_dropped++;
        }
    }
    return kept;
}

unsigned floem_backend_rx(unsigned q, floem_net_frame_t *frames, unsigned max)
{
    register_thread();
    unsigned got = rte_eth_rx_burst(port_id, (uint16_t)q, frames, (uint16_t)max);
    /* Chained mbufs are rare: look for them without a branch a frame. Every nb_segs is at
     * least 1, so their OR is 1 exactly when none is chained. */
    uint16_t segs = 0;
    for (unsigned i = 0; i < got; i++)
        segs |= frames[i]->nb_segs;
    return __builtin_expect(segs > 1, 0) ? drop_chained(q, frames, got) : got;
}

/* The packet's mbuf, pointed at the packet's bytes when an element moved or resized it;
 * they must lie inside its buffer (every mbuf this backend hands out, received or allocated,
 * has one segment). */
bool floem_backend_frame(const floem_packet_t *pkt, floem_net_frame_t *frame)
{
    if (floem_net_frame_as_is(pkt, frame))
        return true;
    struct rte_mbuf *m = pkt->buffer;
    uintptr_t start = (uintptr_t)m->buf_addr, d = (uintptr_t)pkt->data;
    if (m->nb_segs != 1 || d < start || d - start > m->buf_len ||
        pkt->len > m->buf_len - (d - start)) {
        register_thread();
        rte_pktmbuf_free(m);
        return false;
    }
    m->data_off = (uint16_t)(d - start);
    m->data_len = (uint16_t)pkt->len;
    m->pkt_len = pkt->len;
    *frame = m;
    return true;
}

void floem_backend_send(unsigned q, floem_net_frame_t *frames, unsigned n)
{
    unsigned sent = 0;
    register_thread();
    for (int tries = 0; sent < n && tries <= TX_RETRIES; tries++)
        sent += rte_eth_tx_burst(port_id, (uint16_t)q, frames + sent, (uint16_t)(n - sent));
    if (sent < n)
        rte_pktmbuf_free_bulk(frames + sent, n - sent);
    floem_net_queue[q].tx += sent;
    floem_net_queue[q].tx_dropped += n - sent;
}

bool floem_backend_alloc(uint32_t len, floem_packet_t *pkt)
{
    register_thread();
    struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
    if (m == NULL)
        return false;
    if (len > rte_pktmbuf_tailroom(m)) {
        rte_pktmbuf_free(m);
        return false;
    }
    m->data_len = (uint16_t)len;
    m->pkt_len = len;
    *pkt = (floem_packet_t){rte_pktmbuf_mtod(m, void *), len, m};
    return true;
}

void floem_backend_free(floem_packet_t *pkt)
{
    register_thread();
    rte_pktmbuf_free(pkt->buffer);
}

void floem_backend_report(FILE *out)
{
    struct rte_eth_stats st;
    char name[RTE_ETH_NAME_MAX_LEN] = "?";
    (void)rte_eth_dev_get_name_by_port(port_id, name);
    if (rte_eth_stats_get(port_id, &st) != 0)
        return;
    fprintf(out, "floem: net dpdk: port %u (%s), rss %s: ipackets %llu, opackets %llu, "
            "imissed %llu, ierrors %llu, oerrors %llu, rx_nombuf %llu\n", port_id, name,
            rss ? "on" : "off", (unsigned long long)st.ipackets,
            (unsigned long long)st.opackets, (unsigned long long)st.imissed,
            (unsigned long long)st.ierrors, (unsigned long long)st.oerrors,
            (unsigned long long)st.rx_nombuf);
}

#endif
