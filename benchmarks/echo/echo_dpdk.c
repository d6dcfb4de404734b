/* Hand-written echo on DPDK alone: what examples/echo/echo.py does, as a DPDK user writes it.
 *
 * The ceiling for any echo built on a per-frame program (benchmarks/echo/run.py): no Floem
 * runtime, no descriptors, one loop over each received mbuf array. The port is set up as
 * the Floem runtime sets it up (net_dpdk.c: the first port, one queue, 1024 receive and
 * transmit descriptors, 10,240 mbufs with a cache of 256, fast free where the device has
 * it); each frame is checked like CheckUDP (../codegen_overhead/hand.h, counting passed and
 * dropped frames and drops by reason), swapped and sent back; invalid frames are freed.
 *
 * Usage: echo_dpdk EAL-ARGUMENTS (e.g. --no-huge --no-pci -m 256 -l 0,1 --vdev=net_pcap0,...).
 * The loop runs on the first worker lcore (-l MAIN,WORKER), as testpmd's forwarding does, so
 * its thread does nothing but the echo; without a worker it runs on the main lcore. Prints
 * "echo_dpdk: port 0 started" on stderr once it serves, runs until SIGINT or SIGTERM, then
 * prints "echo_dpdk: rx N, tx N, dropped N, unsent N" there; fails if a frame it passed was
 * neither sent nor counted unsent.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "hand.h"

#define BURST 32
#define DESCRIPTORS 1024
#define MBUFS 10240
#define MBUF_CACHE 256

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
    (void)sig;
    stop = 1;
}

static void fail(const char *what, int err)
{
    fprintf(stderr, "echo_dpdk: %s: %s\n", what, rte_strerror(err));
    exit(1);
}

static void start_port(uint16_t port)
{
    struct rte_eth_dev_info info;
    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof conf);
    int err = rte_eth_dev_info_get(port, &info);
    if (err != 0)
        fail("rte_eth_dev_info_get", -err);
    if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
    struct rte_mempool *pool = rte_pktmbuf_pool_create("echo_mbufs", MBUFS, MBUF_CACHE, 0,
                                                       RTE_MBUF_DEFAULT_BUF_SIZE,
                                                       (int)rte_socket_id());
    if (pool == NULL)
        fail("rte_pktmbuf_pool_create", rte_errno);
    struct rte_eth_txconf txconf = info.default_txconf;
    txconf.offloads = conf.txmode.offloads;
    if ((err = rte_eth_dev_configure(port, 1, 1, &conf)) != 0)
        fail("rte_eth_dev_configure", -err);
    if ((err = rte_eth_rx_queue_setup(port, 0, DESCRIPTORS, rte_socket_id(), NULL, pool)) != 0)
        fail("rte_eth_rx_queue_setup", -err);
    if ((err = rte_eth_tx_queue_setup(port, 0, DESCRIPTORS, rte_socket_id(), &txconf)) != 0)
        fail("rte_eth_tx_queue_setup", -err);
    if ((err = rte_eth_dev_start(port)) != 0)
        fail("rte_eth_dev_start", -err);
}

/* What the loop counted, published when it ends (it counts in locals, as a DPDK program's
 * loop does). */
static uint64_t rx, tx, unsent, passed, dropped, reasons[V_VERDICTS];

static int echo(void *arg)
{
    uint16_t port = *(const uint16_t *)arg;
    uint64_t n_rx = 0, n_tx = 0, n_unsent = 0, n_passed = 0, n_dropped = 0;
    uint64_t n_reasons[V_VERDICTS] = {0};
    struct rte_mbuf *in[BURST], *out[BURST];
    while (!stop) {
        uint16_t n = rte_eth_rx_burst(port, 0, in, BURST);
        if (n == 0)
            continue;
        n_rx += n;
        uint16_t k = 0;
        for (uint16_t i = 0; i < n; i++) {
            uint8_t *f = rte_pktmbuf_mtod(in[i], uint8_t *);
            unsigned v = udp_verdict(f, in[i]->data_len);
            if (likely(v == V_OK)) {
                n_passed++;
                udp_swap(f);
                out[k++] = in[i];
            } else {
                n_dropped++;
                n_reasons[v]++;
                rte_pktmbuf_free(in[i]);
            }
        }
        uint16_t sent = rte_eth_tx_burst(port, 0, out, k);
        n_tx += sent;
        if (unlikely(sent < k)) {
            n_unsent += k - sent;
            rte_pktmbuf_free_bulk(out + sent, k - sent);
        }
    }
    rx = n_rx, tx = n_tx, unsent = n_unsent, passed = n_passed, dropped = n_dropped;
    memcpy(reasons, n_reasons, sizeof reasons);
    return 0;
}

int main(int argc, char **argv)
{
    if (rte_eal_init(argc, argv) < 0)
        fail("rte_eal_init", rte_errno);
    if (rte_eth_dev_count_avail() == 0) {
        fprintf(stderr, "echo_dpdk: no port (give EAL a --vdev)\n");
        return 1;
    }
    uint16_t port = 0;
    start_port(port);
    signal(SIGINT, on_stop);
    signal(SIGTERM, on_stop);
    fprintf(stderr, "echo_dpdk: port %u started\n", port);
    unsigned worker = rte_get_next_lcore(-1, 1, 0);
    if (worker < RTE_MAX_LCORE) {
        int err = rte_eal_remote_launch(echo, &port, worker);
        if (err != 0)
            fail("rte_eal_remote_launch", -err);
        while (!stop)                   /* asleep: rte_eal_mp_wait_lcore would spin */
            usleep(10000);
        rte_eal_mp_wait_lcore();
    } else {
        echo(&port);
    }
    fprintf(stderr, "echo_dpdk: rx %" PRIu64 ", tx %" PRIu64 ", dropped %" PRIu64
            ", unsent %" PRIu64 "\n", rx, tx, dropped, unsent);
    (void)rte_eth_dev_stop(port);
    (void)rte_eth_dev_close(port);
    rte_eal_cleanup();
    return passed == tx + unsent ? 0 : 1;
}
