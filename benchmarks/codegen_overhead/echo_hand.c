/* Hand-written echo: what examples/echo/echo.py does, written directly in C.
 *
 * Receive bursts of 32 frames, check each like CheckUDP (counting passed and
 * dropped frames, and drops by reason), swap the addresses of valid frames
 * and send them back, give the others back, flush after each burst. The
 * packet I/O is the Floem runtime's (floem/net.h over the pcap backend), the
 * same calls the generated echo makes. Stops when the capture is replayed
 * (--net pcap) or at SIGINT/SIGTERM (any backend; then FLOEM_REPORT=1 prints the
 * runtime's counters like a generated program's).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "hand.h"

#define BATCH 32

static uint64_t passed, dropped, reasons[V_VERDICTS];
static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
    (void)sig;
    stop = 1;
}

int main(void)
{
    floem_net_frame_t frames[BATCH];
    signal(SIGINT, on_stop);
    signal(SIGTERM, on_stop);
    floem_net_init();
    while (!stop) {
        unsigned n = floem_net_rx(0, frames, BATCH);
        if (unlikely(n == 0)) {
            if (floem_net_rx_done())
                break;
            continue;
        }
        for (unsigned i = 0; i < n; i++) {
            floem_packet_t pkt = floem_net_packet(frames[i]);
            uint8_t *f = pkt.data;
            unsigned v = udp_verdict(f, pkt.len);
            if (likely(v == V_OK)) {
                passed++;
                udp_swap(f);
                floem_net_tx(0, &pkt);
            } else {
                dropped++;
                reasons[v]++;
                floem_net_free(&pkt);
            }
        }
        floem_net_flush(0);
    }
    floem_net_finalize();
    printf("echo: passed %" PRIu64 ", dropped %" PRIu64 "\n", passed, dropped);
    return 0;
}
