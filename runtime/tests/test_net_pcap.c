/* Tests of the pcap packet I/O backend (floem/net.h built with FLOEM_NET_PCAP).
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -pthread -Iruntime/include -DFLOEM_NET_PCAP
 *        runtime/tests/test_net_pcap.c runtime/src/net*.c runtime/src/threads.c
 *        runtime/src/shared.c runtime/src/count.c -o test_net_pcap
 * Run with FLOEM_PCAP_IN and FLOEM_PCAP_OUT set: replays the input in bursts
 * of 7, checks frames come in file order until floem_net_rx_done(), sends every
 * frame unchanged (so the output should hold the input's frames), and checks
 * allocation limits and counters. Prints one line per received frame
 * ("frame I LEN FIRSTBYTE") and "ok: N checks", then the stats line.
 * `test_net_pcap read-past-end` reads one byte past the first frame, which an
 * AddressSanitizer build must report. `test_net_pcap take N` receives and sends
 * N frames (an endless replay, FLOEM_PCAP_LOOP=0, never ends), then stops.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define POOL 4096

static floem_packet_t held[POOL + 1];

/* Allocation: sizes up to a buffer work, larger ones and an empty pool fail and are counted. */
static void test_alloc(void)
{
    floem_net_stats_t st;
    floem_net_stats(&st);
    uint64_t failed = st.alloc_failed;
    CHECK(floem_net_alloc(2048, &held[0]) && held[0].len == 2048 && held[0].data != NULL);
    memset(held[0].data, 0xab, 2048);
    floem_net_free(&held[0]);
    CHECK(!floem_net_alloc(2049, &held[0]));
    unsigned n = 0;
    while (n <= POOL && floem_net_alloc(64, &held[n]))
        n++;
    CHECK(n == POOL);
    for (unsigned i = 0; i < n; i++)
        floem_net_free(&held[i]);
    floem_net_stats(&st);
    CHECK(st.alloc_failed == failed + 2);
    CHECK(floem_net_alloc(100, &held[0]));
    floem_net_free(&held[0]);
}

/* Read one byte past a received frame: AddressSanitizer builds must stop here. */
static int read_past_end(void)
{
    floem_packet_t p;
    CHECK(floem_net_rx(0, &p, 1) == 1);
    volatile uint8_t *data = p.data;
    printf("byte past the end: %d\n", data[p.len]);
    return 0;
}

/* Receive and send `n` frames, then print the counters. */
static int take(unsigned long n)
{
    for (unsigned long got = 0; got < n;) {
        floem_packet_t p;
        CHECK(!floem_net_rx_done());
        if (floem_net_rx(0, &p, 1) == 1) {
            floem_net_tx(0, &p);
            floem_net_flush(0);
            got++;
        }
    }
    floem_net_stats_t st;
    floem_net_stats(&st);
    printf("rx %llu tx %llu rx_dropped %llu\n", (unsigned long long)st.rx,
           (unsigned long long)st.tx, (unsigned long long)st.rx_dropped);
    floem_net_finalize();
    return 0;
}

int main(int argc, char **argv)
{
    floem_net_init();
    if (argc == 2 && strcmp(argv[1], "read-past-end") == 0)
        return read_past_end();
    if (argc == 3 && strcmp(argv[1], "take") == 0)
        return take(strtoul(argv[2], NULL, 10));
    CHECK(floem_net_queues() == 1);
    test_alloc();
    unsigned frames = 0;
    for (int idle = 0; !floem_net_rx_done() || idle < 2;) {
        floem_packet_t pkts[7];
        unsigned n = floem_net_rx(0, pkts, 7);
        idle = n == 0 ? idle + 1 : 0;
        for (unsigned i = 0; i < n; i++, frames++) {
            printf("frame %u %u %d\n", frames, pkts[i].len,
                   pkts[i].len ? ((uint8_t *)pkts[i].data)[0] : -1);
            floem_net_tx(0, &pkts[i]);
        }
        floem_net_flush(0);
        CHECK(idle < 1000);
    }
    floem_packet_t extra;
    CHECK(floem_net_rx(0, &extra, 1) == 0);
    floem_net_stats_t st;
    floem_net_stats(&st);
    CHECK(st.rx == frames && st.tx == frames && st.tx_dropped == 0);
    printf("ok: %lu checks\n", checks);
    printf("rx %llu tx %llu rx_dropped %llu\n", (unsigned long long)st.rx,
           (unsigned long long)st.tx, (unsigned long long)st.rx_dropped);
    floem_net_finalize();
    return 0;
}
