/* Tests of the udp packet I/O backend (floem/net.h built with FLOEM_NET_UDP).
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -pthread -Iruntime/include -DFLOEM_NET_UDP
 *        runtime/tests/test_net_udp.c runtime/src/net*.c runtime/src/threads.c
 *        runtime/src/shared.c runtime/src/count.c -o test_net_udp
 * Run with FLOEM_NET_PORT set to a free port (FLOEM_NET_QUEUES may be > 1). A
 * client socket on 127.0.0.1 sends datagrams of several sizes to the port; the
 * test receives them as frames and checks every synthesised header field and
 * both checksums, answers each with the addresses swapped and checks the client
 * gets the same payload back from the port. Frames that are not IPv4/UDP, and a
 * datagram larger than a buffer, are dropped and counted. `test_net_udp threads`
 * instead runs 4 echo threads over the queues (sharing them when there are
 * fewer), some replies in freshly allocated frames, against 4 clients sending
 * 250 datagrams each: every datagram is answered. `test_net_udp overflow`
 * sends OVERFLOW datagrams before receiving any, more than the socket buffers
 * hold, then receives until none is left and prints "sent N received M" before
 * the report, whose socket drop count must make up the difference. `test_net_udp order`
 * answers each of 50 datagrams with four frames made before it (floem_net_alloc_before),
 * sent by two threads in an order of their own, some given back instead, and the request's
 * own frame last: the client receives each datagram's answers in the order they were made.
 * Prints "ok: N checks".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/net.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static const size_t sizes[] = {0, 1, 2, 3, 17, 100, 1472, 2006};
#define N_SIZES (sizeof sizes / sizeof sizes[0])
#define TOO_BIG 65507                      /* the largest UDP datagram over IPv4 */

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* One's-complement sum of `len` bytes folded to 16 bits (0xffff when the data sums to zero). */
static uint16_t ones_sum(uint32_t sum, const uint8_t *p, size_t len)
{
    for (; len >= 2; p += 2, len -= 2)
        sum += (uint32_t)get16(p);
    if (len)
        sum += (uint32_t)p[0] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)sum;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t pattern(size_t size, size_t i)
{
    return (uint8_t)(size * 31 + i * 7);
}

/* Check a frame received from `client` (to 127.0.0.1:port); returns its payload size. */
/* Check a received frame's synthesised headers and payload; returns the datagram's length.
 * A datagram longer than a buffer arrives cut: the buffer's worth of its bytes, the IPv4 and
 * UDP lengths of the whole datagram, no UDP checksum. */
static size_t check_frame(const floem_packet_t *p, const struct sockaddr_in *client, uint16_t port)
{
    const uint8_t *f = p->data;
    CHECK(p->len >= 42 && p->buffer != NULL);
    CHECK(get16(f + 12) == 0x0800);
    const uint8_t *ip = f + 14, *udp = f + 34;
    CHECK(ip[0] == 0x45 && ip[9] == 17 && ip[8] == 64);
    CHECK(ones_sum(0, ip, 20) == 0xffff);                       /* header checksum */
    CHECK(memcmp(ip + 12, &client->sin_addr, 4) == 0);
    CHECK(ip[16] == 127 && ip[17] == 0 && ip[18] == 0 && ip[19] == 1);
    CHECK(memcmp(udp, &client->sin_port, 2) == 0 && get16(udp + 2) == port);
    size_t held = p->len - 42, datagram = get16(udp + 4) - 8u;
    CHECK(get16(ip + 2) == datagram + 28);
    if (datagram > held) {
        CHECK(p->len == 2048 && get16(udp + 6) == 0);      /* a buffer's bytes */
    } else {
        CHECK(datagram == held);
        uint32_t pseudo = ones_sum(0, ip + 12, 8) + 17 + (uint32_t)(held + 8);
        CHECK(get16(udp + 6) != 0 && ones_sum(pseudo, udp, held + 8) == 0xffff);
    }
    for (size_t i = 0; i < held; i++)
        CHECK(udp[8 + i] == pattern(datagram, i));
    return datagram;
}

static void swap(uint8_t *f, size_t a, size_t b, size_t n)
{
    uint8_t t[6];
    memcpy(t, f + a, n);
    memcpy(f + a, f + b, n);
    memcpy(f + b, t, n);
}

/* `threads`: THREADS echo threads share the queues (thread i polls queue i % queues). */
#define THREADS 4
#define CLIENTS 4
#define PER_CLIENT 250
#define WINDOW 25
static volatile int stop_threads;

static void *echo_thread(void *arg)
{
    unsigned q = (unsigned)(uintptr_t)arg % floem_net_queues();
    while (!__atomic_load_n(&stop_threads, __ATOMIC_ACQUIRE)) {
        floem_packet_t pkts[8];
        unsigned n = floem_net_rx(q, pkts, 8);
        for (unsigned i = 0; i < n; i++) {
            uint8_t *f = pkts[i].data;
            swap(f, 0, 6, 6);
            swap(f, 26, 30, 4);
            swap(f, 34, 36, 2);
            if (i % 5 == 4) {       /* every fifth: a fresh frame instead of the received one */
                floem_packet_t copy;
                CHECK(floem_net_alloc(pkts[i].len, &copy));
                memcpy(copy.data, f, pkts[i].len);
                floem_net_free(&pkts[i]);
                pkts[i] = copy;
            }
            floem_net_tx(q, &pkts[i]);
        }
        floem_net_flush(q);
    }
    return NULL;
}

static int test_threads(uint16_t port)
{
    pthread_t threads[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        CHECK(pthread_create(&threads[i], NULL, echo_thread, (void *)i) == 0);
    struct sockaddr_in server = {.sin_family = AF_INET, .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int clients[CLIENTS];
    unsigned answered = 0;
    for (int c = 0; c < CLIENTS; c++) {
        clients[c] = socket(AF_INET, SOCK_DGRAM, 0);
        int bytes = 4 << 20;
        setsockopt(clients[c], SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes);
    }
    /* Windows of WINDOW datagrams per client, each answered before the next is sent: a
     * slow (sanitised, loaded) run must not overflow socket buffers, which UDP may do. */
    for (int first = 0; first < PER_CLIENT; first += WINDOW) {
        for (int k = first; k < first + WINDOW && k < PER_CLIENT; k++)
            for (int c = 0; c < CLIENTS; c++) {
                uint8_t msg[64];
                memset(msg, c * PER_CLIENT + k, sizeof msg);
                CHECK(sendto(clients[c], msg, 1 + (size_t)k % 64, 0, (struct sockaddr *)&server,
                             sizeof server) > 0);
            }
        for (int c = 0; c < CLIENTS; c++)
            for (int k = first; k < first + WINDOW && k < PER_CLIENT; k++) {
                struct pollfd pfd = {.fd = clients[c], .events = POLLIN};
                if (poll(&pfd, 1, 10000) != 1)
                    break;
                uint8_t msg[64];
                ssize_t n = recv(clients[c], msg, sizeof msg, 0);
                CHECK(n >= 1 && n <= 64);
                answered++;
            }
    }
    __atomic_store_n(&stop_threads, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    floem_net_stats_t st;
    floem_net_stats(&st);
    CHECK(answered == CLIENTS * PER_CLIENT);
    CHECK(st.rx == CLIENTS * PER_CLIENT && st.tx == st.rx && st.tx_dropped == 0);
    for (int c = 0; c < CLIENTS; c++)
        close(clients[c]);
    unsigned queues = floem_net_queues();
    floem_net_finalize();
    printf("ok: %lu checks, %u queues, %d threads\n", checks, queues, THREADS);
    return 0;
}

/* Datagrams sent by test_overflow: more than the 4 MiB socket buffers hold (the kernel
 * doubles the size asked for, and charges well over 100 bytes for each small datagram). */
#define OVERFLOW 200000

static int test_overflow(uint16_t port)
{
    int client = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(client >= 0);
    struct sockaddr_in server = {.sin_family = AF_INET, .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    uint8_t msg[100];
    memset(msg, 0x5a, sizeof msg);
    for (unsigned i = 0; i < OVERFLOW; i++)
        CHECK(sendto(client, msg, sizeof msg, 0, (struct sockaddr *)&server, sizeof server) ==
              (ssize_t)sizeof msg);
    uint64_t received = 0;
    for (double quiet = now() + 1; now() < quiet;) {
        for (unsigned q = 0; q < floem_net_queues(); q++) {
            floem_packet_t pkts[64];
            unsigned n = floem_net_rx(q, pkts, 64);
            for (unsigned i = 0; i < n; i++) {
                CHECK(pkts[i].len == 42 + sizeof msg);
                floem_net_free(&pkts[i]);
            }
            if (n > 0)
                quiet = now() + 1;
            received += n;
        }
    }
    CHECK(received > 0 && received < OVERFLOW);
    close(client);
    printf("sent %u received %llu\n", OVERFLOW, (unsigned long long)received);
    fflush(stdout);
    unsigned queues = floem_net_queues();
    floem_net_finalize();
    printf("ok: %lu checks, %u queues\n", checks, queues);
    return 0;
}

/* `order`: the frames answering one datagram, made before it, sent out of order by two
 * threads. */
#define ORDERED 50
#define PARTS 4
static floem_packet_t parts[PARTS + 1];

/* Send parts[first], parts[first + 2], ... (part 3 given back instead). */
static void *send_parts(void *arg)
{
    uintptr_t first = (uintptr_t)arg;
    for (uintptr_t k = first; k <= PARTS; k += 2) {
        if (k == 3)
            floem_net_free(&parts[k]);          /* answers with nothing */
        else
            floem_net_tx(0, &parts[k]);
    }
    floem_net_flush(0);
    return NULL;
}

static int test_order(uint16_t port)
{
    int client = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in server = {.sin_family = AF_INET, .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {.tv_sec = 10};
    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (int d = 0; d < ORDERED; d++) {
        uint8_t msg = (uint8_t)d;
        CHECK(sendto(client, &msg, 1, 0, (struct sockaddr *)&server, sizeof server) == 1);
        unsigned n = 0;
        for (int spins = 0; n == 0 && spins < 100000; spins++)
            n = floem_net_rx(0, &parts[PARTS], 1);
        CHECK(n == 1);
        floem_packet_t *request = &parts[PARTS];
        uint8_t *f = request->data;
        swap(f, 0, 6, 6);
        swap(f, 26, 30, 4);
        swap(f, 34, 36, 2);
        for (int k = 0; k < PARTS; k++) {       /* each made before the request */
            CHECK(floem_net_alloc_before(request, request->len, &parts[k]));
            memcpy(parts[k].data, f, request->len);
            ((uint8_t *)parts[k].data)[42] = (uint8_t)(d * 8 + k);
        }
        ((uint8_t *)f)[42] = (uint8_t)(d * 8 + PARTS);
        pthread_t odd;                          /* the odd ones first, from another thread */
        CHECK(pthread_create(&odd, NULL, send_parts, (void *)(uintptr_t)1) == 0);
        pthread_join(odd, NULL);
        send_parts((void *)(uintptr_t)0);
        for (int k = 0; k <= PARTS; k++) {
            if (k == 3)
                continue;
            uint8_t got;
            CHECK(recv(client, &got, 1, 0) == 1);
            CHECK(got == (uint8_t)(d * 8 + k));
        }
    }
    close(client);
    floem_net_finalize();
    printf("ok: %lu checks, %d datagrams answered in order\n", checks, ORDERED);
    return 0;
}

int main(int argc, char **argv)
{
    uint16_t port = (uint16_t)atoi(getenv("FLOEM_NET_PORT") ? getenv("FLOEM_NET_PORT") : "0");
    CHECK(port != 0);
    floem_net_init();
    if (argc == 2 && strcmp(argv[1], "threads") == 0)
        return test_threads(port);
    if (argc == 2 && strcmp(argv[1], "overflow") == 0)
        return test_overflow(port);
    if (argc == 2 && strcmp(argv[1], "order") == 0)
        return test_order(port);
    unsigned queues = floem_net_queues();
    CHECK(queues >= 1);

    int client = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in self = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(client, (struct sockaddr *)&self, sizeof self) == 0);
    socklen_t self_len = sizeof self;
    CHECK(getsockname(client, (struct sockaddr *)&self, &self_len) == 0);
    struct sockaddr_in server = {.sin_family = AF_INET, .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    static uint8_t buf[TOO_BIG];
    for (size_t s = 0; s <= N_SIZES; s++) {
        size_t size = s < N_SIZES ? sizes[s] : TOO_BIG;
        for (size_t i = 0; i < size; i++)
            buf[i] = pattern(size, i);
        CHECK(sendto(client, buf, size, 0, (struct sockaddr *)&server, sizeof server) ==
              (ssize_t)size);
    }

    /* Receive every datagram, the too-big one cut; answer each with the addresses swapped
     * (sending the cut one fails: its UDP length overruns the frame). */
    bool seen[N_SIZES] = {false}, cut = false;
    unsigned got = 0;
    for (double deadline = now() + 5; (got < N_SIZES || !cut) && now() < deadline;) {
        for (unsigned q = 0; q < queues; q++) {
            floem_packet_t pkts[4];
            unsigned n = floem_net_rx(q, pkts, 4);
            for (unsigned i = 0; i < n; i++) {
                size_t payload = check_frame(&pkts[i], &self, port);
                cut |= payload == TOO_BIG;
                for (size_t k = 0; k < N_SIZES; k++)
                    if (sizes[k] == payload && !seen[k]) {
                        seen[k] = true;
                        got++;
                        break;
                    }
                uint8_t *f = pkts[i].data;
                swap(f, 0, 6, 6);
                swap(f, 26, 30, 4);
                swap(f, 34, 36, 2);
                floem_net_tx(q, &pkts[i]);
            }
            floem_net_flush(q);
        }
    }
    CHECK(got == N_SIZES && cut);
    for (size_t k = 0; k < N_SIZES; k++) {
        struct pollfd pfd = {.fd = client, .events = POLLIN};
        CHECK(poll(&pfd, 1, 2000) == 1);
        struct sockaddr_in from;
        socklen_t from_len = sizeof from;
        ssize_t n = recvfrom(client, buf, sizeof buf, 0, (struct sockaddr *)&from, &from_len);
        CHECK(n >= 0 && from.sin_port == htons(port));
        CHECK(from.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
        for (ssize_t i = 0; i < n; i++)
            CHECK(buf[i] == pattern((size_t)n, (size_t)i));
    }

    /* Frames that are not IPv4/UDP, or whose UDP length overruns them, are dropped. */
    floem_net_stats_t before, after;
    floem_net_stats(&before);
    floem_packet_t bad;
    CHECK(floem_net_alloc(60, &bad));
    memset(bad.data, 0, 60);
    floem_net_tx(0, &bad);                              /* not IPv4 */
    CHECK(floem_net_alloc(42, &bad));
    memset(bad.data, 0, 42);
    uint8_t *f = bad.data;
    f[12] = 0x08, f[14] = 0x45, f[23] = 17, f[38] = 0x01;   /* UDP length 256 > 8 present */
    floem_net_tx(0, &bad);
    floem_net_stats(&after);
    CHECK(after.tx_dropped == before.tx_dropped + 2 && after.tx == before.tx);
    CHECK(after.rx == N_SIZES + 1 && after.tx == N_SIZES && after.rx_dropped == 0);
    CHECK(after.tx_dropped == 3);                       /* the cut datagram's answer too */

    /* Allocation: a buffer holds 2048 bytes. */
    floem_packet_t p;
    CHECK(floem_net_alloc(2048, &p));
    floem_net_free(&p);
    CHECK(!floem_net_alloc(2049, &p));
    close(client);
    floem_net_finalize();
    printf("ok: %lu checks, %u queues\n", checks, queues);
    return 0;
}
