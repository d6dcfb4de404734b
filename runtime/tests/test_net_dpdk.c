/* Tests of the dpdk packet I/O backend (floem/net.h built with FLOEM_NET_DPDK).
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -pthread -Iruntime/include -DFLOEM_NET_DPDK
 *        $(pkg-config --cflags libdpdk) runtime/tests/test_net_dpdk.c runtime/src/net*.c runtime/src/threads.c
 *        runtime/src/shared.c runtime/src/count.c
 *        $(pkg-config --libs libdpdk) -o test_net_dpdk
 * Run with FLOEM_DPDK_EAL naming one port, no hugepages needed:
 *   test_net_dpdk loop     port = net_ring0 (each queue's TX ring is its RX ring):
 *                          frames sent on every queue come back intact, in order,
 *                          also after moving `data` and shrinking `len`, also sent
 *                          back within the burst that received them, in the order they
 *                          were sent; chained mbufs
 *                          and frames outside their mbuf are dropped; allocation limits.
 *   test_net_dpdk client N port = the client end of a net_memif pair whose server
 *                          is the echo example: N Ethernet/IPv4/UDP frames go out,
 *                          N come back with MAC, IPv4 and UDP endpoints swapped.
 * Prints "ok: N checks".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t pattern(unsigned frame, unsigned i)
{
    return (uint8_t)(frame * 13 + i);
}

/* Receive exactly `want` frames from `queue` within two seconds. */
static unsigned receive(unsigned queue, floem_packet_t *pkts, unsigned want)
{
    floem_net_frame_t frames[64];
    unsigned n = 0;
    for (double deadline = now() + 2; n < want && now() < deadline;) {
        unsigned got = floem_net_rx(queue, frames, want - n < 64 ? want - n : 64);
        for (unsigned i = 0; i < got; i++)
            pkts[n++] = floem_net_packet(frames[i]);
    }
    floem_net_flush(queue);
    return n;
}

/* What FromNet does: frames received in one burst are sent back before its flush, the
 * ones left where they came staged inline as their mbufs, the others (moved and shortened,
 * as an element may) re-pointed when staged. */
static void test_send_within_burst(unsigned q)
{
    enum { FRAMES = 8 };
    floem_packet_t p, got[FRAMES];
    for (unsigned k = 0; k < FRAMES; k++) {
        CHECK(floem_net_alloc(100 + k, &p));
        for (unsigned i = 0; i < p.len; i++)
            ((uint8_t *)p.data)[i] = pattern(k + q, i);
        floem_net_tx(q, &p);
    }
    floem_net_frame_t frames[FRAMES];
    unsigned n = 0;
    for (double deadline = now() + 2; n < FRAMES && now() < deadline;)
        n += floem_net_rx(q, frames + n, FRAMES - n);   /* one burst: no flush in between */
    CHECK(n == FRAMES);
    for (unsigned k = 0; k < n; k++) {
        floem_packet_t pkt = floem_net_packet(frames[k]);
        CHECK(pkt.len == 100 + k);
        if (k % 2) {
            pkt.data = (uint8_t *)pkt.data + 3;
            pkt.len -= 5;
        }
        floem_net_tx(q, &pkt);
    }
    floem_net_flush(q);
    CHECK(receive(q, got, FRAMES) == FRAMES);
    for (unsigned k = 0; k < FRAMES; k++) {
        unsigned skip = k % 2 ? 3 : 0;
        CHECK(got[k].len == 100 + k - (k % 2 ? 5 : 0));
        for (unsigned i = 0; i < got[k].len; i++)
            CHECK(((uint8_t *)got[k].data)[i] == pattern(k + q, i + skip));
        floem_net_free(&got[k]);
    }
}

/* A frame of `len` bytes, each of them `id`, sent at once (outside a receive burst). */
static void send_filled(unsigned q, uint32_t len, uint8_t id)
{
    floem_packet_t p;
    CHECK(floem_net_alloc(len, &p));
    memset(p.data, id, len);
    floem_net_tx(q, &p);
}

/* The frames sent while handling a receive burst go out in the order they were sent, whether
 * each is the handled frame itself (staged inline when unchanged, re-pointed when moved), a
 * second one, a frame allocated or held from an earlier frame, with frames given back in
 * between. */
static void test_send_order(unsigned q)
{
    enum { FRAMES = 12 };
    for (unsigned k = 0; k < FRAMES; k++)
        send_filled(q, 64 + k, (uint8_t)k);
    floem_net_frame_t frames[FRAMES];
    unsigned n = 0;
    for (double deadline = now() + 2; n == 0 && now() < deadline;)
        n = floem_net_rx(q, frames, FRAMES);
    CHECK(n == FRAMES);                                 /* the ring holds them all: one burst */
    uint8_t order[2 * FRAMES];
    uint32_t lens[2 * FRAMES];
    unsigned sent = 0;
    floem_packet_t held = {0}, extra;
    for (unsigned k = 0; k < n; k++) {
        floem_packet_t pkt = floem_net_packet(frames[k]);
        CHECK(pkt.len == 64 + k && ((uint8_t *)pkt.data)[0] == k);
        if (k == 3) {                                   /* held: sent while handling frame 5 */
            held = pkt;
            continue;
        }
        if (k == 5) {
            order[sent] = 3, lens[sent++] = held.len;
            floem_net_tx(q, &held);
        }
        if (k == 6 || k == 7) {                         /* given back; 6 sends a new frame */
            if (k == 6) {
                CHECK(floem_net_alloc(64, &extra));
                memset(extra.data, 100 + k, 64);
                order[sent] = (uint8_t)(100 + k), lens[sent++] = 64;
                floem_net_tx(q, &extra);
            }
            floem_net_free(&pkt);
            continue;
        }
        if (k == 1 || k == 5) {                         /* moved and shortened */
            pkt.data = (uint8_t *)pkt.data + 3;
            pkt.len -= 5;
        }
        order[sent] = (uint8_t)k, lens[sent++] = pkt.len;
        floem_net_tx(q, &pkt);
        if (k == 2) {                                   /* a second frame for frame 2 */
            CHECK(floem_net_alloc(64, &extra));
            memset(extra.data, 100 + k, 64);
            order[sent] = (uint8_t)(100 + k), lens[sent++] = 64;
            floem_net_tx(q, &extra);
        }
    }
    floem_net_flush(q);
    floem_packet_t got[2 * FRAMES];
    CHECK(receive(q, got, sent) == sent);
    for (unsigned i = 0; i < sent; i++) {
        CHECK(got[i].len == lens[i]);
        for (unsigned j = 0; j < got[i].len; j++)
            CHECK(((uint8_t *)got[i].data)[j] == order[i]);
        floem_net_free(&got[i]);
    }
}

/* A chained (multi-segment) mbuf is dropped and counted when received: no element sees it. */
static void test_chained_dropped(void)
{
    floem_net_stats_t before, after;
    floem_packet_t head, tail;
    CHECK(floem_net_alloc(100, &head) && floem_net_alloc(100, &tail));
    CHECK(rte_pktmbuf_chain(head.buffer, tail.buffer) == 0);
    floem_net_stats(&before);
    floem_net_tx(0, &head);                             /* the ring hands it back chained */
    floem_net_frame_t frames[4];
    unsigned n = 0;
    for (double deadline = now() + 0.5; now() < deadline;) {
        n += floem_net_rx(0, frames, 4);
        floem_net_flush(0);
        floem_net_stats(&after);
        if (after.rx_dropped > before.rx_dropped)
            break;
    }
    CHECK(n == 0 && after.rx_dropped == before.rx_dropped + 1 && after.rx == before.rx);
}

static void test_loop(void)
{
    unsigned queues = floem_net_queues();
    for (unsigned q = 0; q < queues; q++) {
        enum { FRAMES = 40 };
        floem_packet_t p, got[FRAMES];
        for (unsigned k = 0; k < FRAMES; k++) {
            uint32_t len = 60 + k * 37;
            CHECK(floem_net_alloc(len, &p) && p.len == len);
            for (unsigned i = 0; i < len; i++)
                ((uint8_t *)p.data)[i] = pattern(k + q, i);
            if (k % 2) {            /* an element may drop leading bytes and shorten */
                p.data = (uint8_t *)p.data + 10;
                p.len -= 20;
            }
            floem_net_tx(q, &p);
        }
        CHECK(receive(q, got, FRAMES) == FRAMES);
        for (unsigned k = 0; k < FRAMES; k++) {
            unsigned skip = k % 2 ? 10 : 0;
            CHECK(got[k].len == 60 + k * 37 - 2 * skip);
            for (unsigned i = 0; i < got[k].len; i++)
                CHECK(((uint8_t *)got[k].data)[i] == pattern(k + q, i + skip));
            floem_net_free(&got[k]);
        }
        test_send_within_burst(q);
        test_send_order(q);
    }
    test_chained_dropped();
    floem_net_stats_t before, after;
    floem_net_stats(&before);
    floem_packet_t p;
    CHECK(floem_net_alloc(64, &p));
    p.data = (uint8_t *)p.data + 4096;                  /* outside the mbuf: dropped */
    floem_net_tx(0, &p);
    CHECK(floem_net_alloc(64, &p));
    p.len = 65536;                                      /* longer than the mbuf: dropped */
    floem_net_tx(0, &p);
    floem_net_stats(&after);
    CHECK(after.tx_dropped == before.tx_dropped + 2 && after.tx == before.tx);
    CHECK(!floem_net_alloc(4096, &p));
    floem_net_stats(&after);
    CHECK(after.alloc_failed == before.alloc_failed + 1);
}

/* An Ethernet/IPv4/UDP frame of `len` bytes whose payload starts with its number `k`. */
static void make_udp_frame(uint8_t *f, uint32_t len, unsigned k)
{
    static const uint8_t head[34] = {
        0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x08, 0x00,
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
    memcpy(f, head, sizeof head);
    f[16] = (uint8_t)((len - 14) >> 8), f[17] = (uint8_t)(len - 14);
    f[34] = 0x30, f[35] = 0x39;                         /* source port 12345 */
    f[36] = 0x23, f[37] = 0x28;                         /* destination port 9000 */
    f[38] = (uint8_t)((len - 34) >> 8), f[39] = (uint8_t)(len - 34);
    f[40] = f[41] = 0;
    f[42] = (uint8_t)(k >> 8), f[43] = (uint8_t)k;
    for (uint32_t i = 44; i < len; i++)
        f[i] = pattern(k, i);
}

static uint32_t frame_len(unsigned k)
{
    return 60 + (k * 97) % 1400;
}

static void test_client(unsigned frames)
{
    CHECK(frames > 0 && frames <= 1024);
    static bool seen[1024];
    unsigned distinct = 0;
    /* Frames sent before the memif link is up are lost: resend the unanswered ones. */
    for (double deadline = now() + 20, resend = 0; distinct < frames && now() < deadline;) {
        if (now() >= resend) {
            for (unsigned k = 0; k < frames; k++) {
                if (seen[k])
                    continue;
                floem_packet_t p;
                CHECK(floem_net_alloc(frame_len(k), &p));
                make_udp_frame(p.data, p.len, k);
                floem_net_tx(0, &p);
            }
            floem_net_flush(0);
            resend = now() + 0.5;
        }
        floem_net_frame_t received[64];
        floem_packet_t got[64];
        unsigned n = floem_net_rx(0, received, 64);
        floem_net_flush(0);
        for (unsigned i = 0; i < n; i++) {
            got[i] = floem_net_packet(received[i]);
            const uint8_t *f = got[i].data;
            CHECK(got[i].len >= 44);
            unsigned k = (unsigned)f[42] << 8 | f[43];
            CHECK(k < frames && got[i].len == frame_len(k));
            CHECK(f[5] == 0x0a && f[11] == 0x0b);           /* MACs swapped */
            CHECK(f[29] == 2 && f[33] == 1);                /* IPv4 addresses swapped */
            CHECK(f[34] == 0x23 && f[36] == 0x30);          /* UDP ports swapped */
            for (uint32_t j = 44; j < got[i].len; j++)
                CHECK(f[j] == pattern(k, j));
            if (!seen[k]) {
                seen[k] = true;
                distinct++;
            }
            floem_net_free(&got[i]);
        }
        if (n == 0)
            usleep(1000);
    }
    if (distinct != frames)
        fprintf(stderr, "answered: %u of %u frames\n", distinct, frames);
    CHECK(distinct == frames);
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    floem_net_init();
    if (strcmp(argv[1], "loop") == 0)
        test_loop();
    else if (strcmp(argv[1], "client") == 0 && argc == 3)
        test_client((unsigned)atoi(argv[2]));
    else
        CHECK(!"usage: test_net_dpdk loop | client N");
    unsigned queues = floem_net_queues();
    floem_net_finalize();
    printf("ok: %lu checks, %u queues\n", checks, queues);
    return 0;
}
