/* Tests of the xdp packet I/O backend (floem/net.h built with FLOEM_NET_XDP).
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -pthread -Iruntime/include -DFLOEM_NET_XDP
 *        runtime/tests/test_net_xdp.c runtime/src/net*.c runtime/src/threads.c
 *        runtime/src/shared.c runtime/src/count.c -lxdp -lbpf -o test_net_xdp
 * Run as root in the network namespace of FLOEM_XDP_IFACE, one end of a veth pair:
 *   test_net_xdp CLIENT_NETNS SERVER_ADDR
 * with FLOEM_NET_PORT set. A client socket opened in network namespace CLIENT_NETNS (the
 * other end's) sends datagrams of several sizes to SERVER_ADDR:FLOEM_NET_PORT through the
 * kernel's stack (ARP answered by the server's kernel: the XDP program passes it), and one to
 * another port; the test receives exactly the first as frames from the AF_XDP ring, checks
 * them, answers each with the addresses swapped (every other answer copied into an allocated
 * frame at an offset, its received frame given back) and checks the client gets every
 * payload back from the port. Frames outside their buffer are dropped and counted, a buffer
 * holds 2048 bytes. Prints "ok: N checks".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static const size_t sizes[] = {0, 1, 17, 100, 1000, 1472};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint8_t pattern(size_t size, size_t i)
{
    return (uint8_t)(size * 7 + i);
}

static void swap(uint8_t *f, size_t a, size_t b, size_t n)
{
    uint8_t t[6];
    memcpy(t, f + a, n);
    memcpy(f + a, f + b, n);
    memcpy(f + b, t, n);
}

/* A UDP socket opened in network namespace `netns` (a name under /run/netns). */
static int client_socket(const char *netns)
{
    char path[256];
    snprintf(path, sizeof path, "/run/netns/%s", netns);
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int other = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(self >= 0 && other >= 0);
    CHECK(setns(other, CLONE_NEWNET) == 0);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(setns(self, CLONE_NEWNET) == 0);
    close(self);
    close(other);
    CHECK(fd >= 0);
    return fd;
}

/* The payload size of the UDP frame `p` to `port`, after checking its headers. */
static size_t check_frame(const floem_packet_t *p, uint16_t port)
{
    const uint8_t *f = p->data;
    CHECK(p->len >= 42 && f[12] == 0x08 && f[13] == 0x00 && f[14] == 0x45 && f[23] == 17);
    CHECK((f[36] << 8 | f[37]) == port);
    size_t payload = (size_t)(f[38] << 8 | f[39]) - 8;
    CHECK(p->len >= 42 + payload);
    for (size_t i = 0; i < payload; i++)
        CHECK(f[42 + i] == pattern(payload, i));
    return payload;
}

/* Receive a burst and answer each frame with its addresses swapped, every other answer in a
 * copy 5 bytes into an allocated buffer; how many sizes were seen for the first time. */
static unsigned answer(uint16_t port, bool *seen)
{
    static unsigned k;
    unsigned first = 0;
    floem_net_frame_t frames[8];
    unsigned n = floem_net_rx(0, frames, 8);
    for (unsigned i = 0; i < n; i++, k++) {
        floem_packet_t pkt = floem_net_packet(frames[i]);
        size_t payload = check_frame(&pkt, port);
        for (size_t s = 0; s < N_SIZES; s++)
            if (sizes[s] == payload && !seen[s]) {
                seen[s] = true;
                first++;
                break;
            }
        uint8_t *f = pkt.data;
        swap(f, 0, 6, 6);
        swap(f, 26, 30, 4);
        swap(f, 34, 36, 2);
        if (k % 2) {
            floem_packet_t copy;
            CHECK(floem_net_alloc(pkt.len + 5, &copy));
            copy.data = (uint8_t *)copy.data + 5;
            copy.len -= 5;
            memcpy(copy.data, pkt.data, pkt.len);
            floem_net_free(&pkt);
            pkt = copy;
        }
        floem_net_tx(0, &pkt);
    }
    floem_net_flush(0);
    if (n == 0)
        usleep(1000);
    return first;
}

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    uint16_t port = (uint16_t)atoi(getenv("FLOEM_NET_PORT") ? getenv("FLOEM_NET_PORT") : "0");
    CHECK(port != 0);
    floem_net_init();
    int client = client_socket(argv[1]);
    struct sockaddr_in server = {.sin_family = AF_INET, .sin_port = htons(port)};
    CHECK(inet_pton(AF_INET, argv[2], &server.sin_addr) == 1);
    static uint8_t buf[2048];
    for (size_t s = 0; s < N_SIZES; s++) {
        for (size_t i = 0; i < sizes[s]; i++)
            buf[i] = pattern(sizes[s], i);
        CHECK(sendto(client, buf, sizes[s], 0, (struct sockaddr *)&server, sizeof server) ==
              (ssize_t)sizes[s]);
    }
    struct sockaddr_in other = server;      /* another port: the kernel's, not the ring's */
    other.sin_port = htons((uint16_t)(port + 1));
    CHECK(sendto(client, buf, 10, 0, (struct sockaddr *)&other, sizeof other) == 10);

    bool seen[N_SIZES] = {false};
    unsigned got = 0;
    for (double deadline = now() + 5; got < N_SIZES && now() < deadline;)
        got += answer(port, seen);
    for (double until = now() + 0.3; now() < until;)    /* nothing else comes */
        got += answer(port, seen);
    CHECK(got == N_SIZES);
    floem_net_stats_t st;
    floem_net_stats(&st);
    CHECK(st.rx == N_SIZES && st.tx == N_SIZES && st.tx_dropped == 0);

    for (size_t s = 0; s < N_SIZES; s++) {
        struct pollfd pfd = {.fd = client, .events = POLLIN};
        CHECK(poll(&pfd, 1, 2000) == 1);
        struct sockaddr_in from;
        socklen_t from_len = sizeof from;
        ssize_t n = recvfrom(client, buf, sizeof buf, 0, (struct sockaddr *)&from, &from_len);
        CHECK(n >= 0 && from.sin_port == htons(port));
        CHECK(from.sin_addr.s_addr == server.sin_addr.s_addr);
        for (ssize_t i = 0; i < n; i++)
            CHECK(buf[i] == pattern((size_t)n, (size_t)i));
    }

    floem_net_stats_t before, after;
    floem_net_stats(&before);
    floem_packet_t p;
    CHECK(floem_net_alloc(64, &p));
    p.data = (uint8_t *)p.data + 2040;                  /* past its buffer's end: dropped */
    floem_net_tx(0, &p);
    floem_net_stats(&after);
    CHECK(after.tx_dropped == before.tx_dropped + 1 && after.tx == before.tx);
    CHECK(floem_net_alloc(2048, &p));
    floem_net_free(&p);
    CHECK(!floem_net_alloc(2049, &p));
    close(client);
    floem_net_finalize();
    printf("ok: %lu checks\n", checks);
    return 0;
}
