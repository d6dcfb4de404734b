/* Tests of the tcp packet I/O backend (floem/net.h built with FLOEM_NET_TCP).
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -pthread -Iruntime/include -DFLOEM_NET_TCP
 *        runtime/tests/test_net_tcp.c runtime/src/net*.c runtime/src/threads.c
 *        runtime/src/shared.c runtime/src/count.c -o test_net_tcp
 * Run with FLOEM_NET_PORT set to a free port. Messages are length-prefixed (a 4-byte
 * big-endian length, then that many bytes); the test's server runs in threads of this
 * process and its clients are plain sockets:
 *   `test_net_tcp`: messages of every size class (empty, a pool buffer's, a buffer of its
 *       own, one longer than a frame holds, delivered cut and the rest skipped), sent a
 *       byte at a time and pipelined; each frame's synthesised headers (addresses, ports,
 *       sequence numbers, both checksums); replies in request order although the server
 *       answers them in reverse, some in two frames (floem_net_alloc_before), some with
 *       nothing; floem_net_close closing after the replies before it; a framer refusing a
 *       stream closes that connection only; a connection reset mid-message.
 *   `test_net_tcp slow`: a client that sends many requests for large replies and reads
 *       none: the server stops reading it while its replies wait (bounded), and the client
 *       then reads every reply, in order.
 *   `test_net_tcp threads`: 4 echo threads on FLOEM_NET_QUEUES queues, 64 connections of
 *       200 pipelined messages each: every one echoed, each connection served by one queue.
 * Prints "ok: N checks".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define HEADERS 54
/* A message longer than this closes the connection (the test's framer). */
#define MAX_MESSAGE (1u << 20)

static uint16_t port;

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

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

/* 4-byte big-endian length, then the message's bytes; too long: close. */
static long framer_fn(const void *config, uint64_t *state, const uint8_t *data, size_t len)
{
    (void)config;
    (*state)++;
    if (len < 4)
        return FLOEM_FRAME_MORE;
    uint32_t n = get32(data);
    return n > MAX_MESSAGE ? FLOEM_FRAME_CLOSE : (long)(4 + (uint64_t)n);
}

static const floem_framer_t framer = {framer_fn, NULL};

static uint8_t pattern(size_t size, size_t i)
{
    return (uint8_t)(size * 31 + i * 7 + 1);
}

/* ---- a client ------------------------------------------------------------------------------ */

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(connect(fd, (struct sockaddr *)&to, sizeof to) == 0);
    struct timeval tv = {.tv_sec = 20};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void send_all(int fd, const void *bytes, size_t n)
{
    const uint8_t *p = bytes;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        CHECK(w > 0);
        p += w;
        n -= (size_t)w;
    }
}

/* A message of `size` bytes of pattern(size, .): its length prefix, then the bytes. */
static size_t message(uint8_t *out, size_t size)
{
    put32(out, (uint32_t)size);
    for (size_t i = 0; i < size; i++)
        out[4 + i] = pattern(size, i);
    return 4 + size;
}

/* Read exactly `n` bytes (false at the end of the stream). */
static bool read_all(int fd, void *bytes, size_t n)
{
    uint8_t *p = bytes;
    while (n > 0) {
        ssize_t r = recv(fd, p, n, 0);
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

/* ---- the server ------------------------------------------------------------------------ */

static size_t message_of(const floem_packet_t *p, const uint8_t **at)
{
    const uint8_t *f = p->data;
    size_t total = get16(f + 16);
    *at = f + HEADERS;
    return total - 40;
}

/* Check the headers of a message frame of connection `client` (its local address, as the
 * server sees the peer); returns the message's length (the whole of it, when cut). */
static size_t check_frame(const floem_packet_t *p, const struct sockaddr_in *client,
                          uint32_t offset)
{
    const uint8_t *f = p->data, *ip = f + 14, *tcp = f + 34;
    CHECK(p->len >= HEADERS && p->buffer != NULL);
    CHECK(get16(f + 12) == 0x0800);
    CHECK(ip[0] == 0x45 && ip[9] == 6 && ip[8] == 64);
    CHECK(ones_sum(0, ip, 20) == 0xffff);
    CHECK(memcmp(ip + 12, &client->sin_addr, 4) == 0);
    CHECK(ip[16] == 127 && ip[17] == 0 && ip[18] == 0 && ip[19] == 1);
    CHECK(memcmp(tcp, &client->sin_port, 2) == 0 && get16(tcp + 2) == port);
    CHECK(get32(tcp + 4) == 1 + offset);                    /* its place in the stream */
    CHECK(tcp[12] == 0x50 && tcp[13] == 0x18);
    size_t held = p->len - HEADERS, whole = get16(ip + 2) - 40u;
    if (held < whole) {
        CHECK(held == FLOEM_NET_MESSAGE_MAX && get16(tcp + 16) == 0);
    } else {
        CHECK(held == whole);
        uint32_t pseudo = ones_sum(0, ip + 12, 8) + 6 + (uint32_t)(held + 20);
        CHECK(ones_sum(pseudo, tcp, held + 20) == 0xffff);
    }
    return whole;
}

/* Turn frame `p` into a reply of `len` bytes of `bytes` (the frame's addresses swapped). */
static void write_reply(floem_packet_t *p, const uint8_t *headers, const void *bytes, size_t len)
{
    uint8_t *f = p->data;
    memmove(f, headers, HEADERS);
    memcpy(f + HEADERS, bytes, len);
    uint8_t t[6];
    memcpy(t, f, 6), memcpy(f, f + 6, 6), memcpy(f + 6, t, 6);
    memcpy(t, f + 26, 4), memcpy(f + 26, f + 30, 4), memcpy(f + 30, t, 4);
    memcpy(t, f + 34, 2), memcpy(f + 34, f + 36, 2), memcpy(f + 36, t, 2);
    f[16] = (uint8_t)((40 + len) >> 8);
    f[17] = (uint8_t)(40 + len);
    p->len = (uint32_t)(HEADERS + len);
}

/* Receive until `want` frames came (or 20 s passed). */
static unsigned receive(floem_packet_t *pkts, unsigned want)
{
    unsigned n = 0;
    for (int spins = 0; n < want && spins < 2000000; spins++) {
        n += floem_net_rx_framed(0, pkts + n, want - n, &framer);
        if (n < want)
            usleep(10);
    }
    return n;
}

static void test_sizes(void)
{
    static const size_t sizes[] = {0, 1, 2, 100, 2048 - HEADERS - 4, 2048 - HEADERS - 3, 3000,
                                   FLOEM_NET_MESSAGE_MAX - 4, FLOEM_NET_MESSAGE_MAX - 3,
                                   FLOEM_NET_MESSAGE_MAX * 2};
    enum { N = sizeof sizes / sizeof sizes[0] };
    int fd = dial();
    struct sockaddr_in local;
    socklen_t len = sizeof local;
    CHECK(getsockname(fd, (struct sockaddr *)&local, &len) == 0);
    static uint8_t buf[FLOEM_NET_MESSAGE_MAX * 2 + 8];
    uint32_t offset = 0;
    for (size_t k = 0; k < N; k++) {
        size_t n = message(buf, sizes[k]);
        if (k < 3) {                        /* a byte at a time: partial reads */
            for (size_t i = 0; i < n; i++) {
                send_all(fd, buf + i, 1);
                if (i + 1 < n) {
                    floem_packet_t none;
                    CHECK(floem_net_rx_framed(0, &none, 1, &framer) == 0);
                }
            }
        } else {
            send_all(fd, buf, n);
        }
        floem_packet_t p;
        CHECK(receive(&p, 1) == 1);
        size_t whole = check_frame(&p, &local, offset);
        CHECK(whole == (n > 65535 - 40 ? 65535 - 40 : n));
        const uint8_t *at;
        message_of(&p, &at);
        size_t held = p.len - HEADERS;
        for (size_t i = 4; i < held; i++)
            CHECK(at[i] == pattern(sizes[k], i - 4));
        offset += (uint32_t)n;
        /* the reply: the message's length and its last byte held */
        uint8_t reply[8];
        put32(reply, (uint32_t)sizes[k]);
        put32(reply + 4, held > 4 ? at[held - 1] : 0);
        uint8_t headers[HEADERS];
        memcpy(headers, p.data, HEADERS);
        floem_packet_t out;                 /* longer than the request: a frame of its own */
        CHECK(floem_net_alloc_before(&p, HEADERS + sizeof reply, &out));
        write_reply(&out, headers, reply, sizeof reply);
        floem_net_tx(0, &out);
        floem_net_free(&p);
        floem_net_flush(0);
        uint8_t got[8];
        CHECK(read_all(fd, got, sizeof got));
        CHECK(memcmp(got, reply, sizeof got) == 0);
    }
    close(fd);
}

/* Pipelined messages answered in reverse: message i gets i+1 bytes of value i, message 3 in
 * two frames, message 5 nothing, and the client reads them in request order. */
static void test_order(void)
{
    enum { N = 12 };
    int fd = dial();
    uint8_t buf[N * 20];
    size_t n = 0;
    for (size_t k = 0; k < N; k++)
        n += message(buf + n, 16);      /* room for its reply */
    send_all(fd, buf, n);
    floem_packet_t p[N];
    CHECK(receive(p, N) == N);
    for (int k = N - 1; k >= 0; k--) {
        uint8_t headers[HEADERS], reply[16];
        memcpy(headers, p[k].data, HEADERS);
        memset(reply, 'a' + k, sizeof reply);
        if (k == 5) {
            floem_net_free(&p[k]);
            continue;
        }
        if (k == 3) {                           /* its first half in a frame made before it */
            floem_packet_t first;
            CHECK(floem_net_alloc_before(&p[k], HEADERS + 2, &first));
            write_reply(&first, headers, reply, 2);
            floem_net_tx(0, &first);
            floem_net_flush(0);
            write_reply(&p[k], headers, reply, (size_t)k - 1);
        } else {
            write_reply(&p[k], headers, reply, (size_t)k + 1);
        }
        floem_net_tx(0, &p[k]);
        floem_net_flush(0);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        CHECK(poll(&pfd, 1, 0) == (k == 0 ? 1 : 0));    /* nothing before the first's */
    }
    for (int k = 0; k < N; k++) {
        if (k == 5)
            continue;
        uint8_t got[16];
        CHECK(read_all(fd, got, (size_t)k + 1));
        for (int i = 0; i <= k; i++)
            CHECK(got[i] == 'a' + k);
    }
    close(fd);
}

/* floem_net_close: the replies before the closing frame, then the end of the stream; a
 * reply to a message after it is dropped. */
static void test_close(void)
{
    int fd = dial();
    uint8_t buf[64];
    size_t n = message(buf, 8);
    n += message(buf + n, 8);
    n += message(buf + n, 8);
    send_all(fd, buf, n);
    floem_packet_t p[3];
    CHECK(receive(p, 3) == 3);
    uint8_t headers[HEADERS];
    memcpy(headers, p[0].data, HEADERS);
    floem_net_close(&p[1]);
    write_reply(&p[2], headers, "late", 4);
    floem_net_tx(0, &p[2]);
    floem_net_flush(0);
    write_reply(&p[0], headers, "first", 5);
    floem_net_tx(0, &p[0]);
    floem_net_flush(0);
    floem_packet_t none;
    for (int i = 0; i < 100; i++)           /* the queue thread closes it */
        floem_net_rx_framed(0, &none, 1, &framer);
    char got[8];
    CHECK(read_all(fd, got, 5) && memcmp(got, "first", 5) == 0);
    CHECK(recv(fd, got, sizeof got, 0) == 0);
    close(fd);
}

/* A stream the framer refuses is closed, its other connection goes on; a connection reset
 * in the middle of a message is closed with nothing delivered. */
static void test_refused(void)
{
    int bad = dial(), good = dial(), reset = dial();
    uint8_t buf[16];
    put32(buf, MAX_MESSAGE + 1);
    send_all(bad, buf, 4);
    size_t n = message(buf, 3);
    send_all(reset, buf, n - 1);
    struct linger l = {.l_onoff = 1, .l_linger = 0};
    CHECK(setsockopt(reset, SOL_SOCKET, SO_LINGER, &l, sizeof l) == 0);
    floem_packet_t none;
    for (int i = 0; i < 1000; i++)
        CHECK(floem_net_rx_framed(0, &none, 1, &framer) == 0);
    close(reset);
    char got[8];
    CHECK(recv(bad, got, sizeof got, 0) == 0);
    send_all(good, buf, n);
    floem_packet_t p;
    CHECK(receive(&p, 1) == 1);
    uint8_t headers[HEADERS];
    memcpy(headers, p.data, HEADERS);
    write_reply(&p, headers, "ok", 2);
    floem_net_tx(0, &p);
    floem_net_flush(0);
    CHECK(read_all(good, got, 2) && memcmp(got, "ok", 2) == 0);
    close(bad);
    close(good);
}

/* ---- slow: a client that does not read ----------------------------------------------- */

/* More reply bytes than the kernel's socket buffers hold (a few MiB each way on loopback). */
#define SLOW_REQUESTS 800
#define SLOW_REPLY 60000

static volatile int stop_threads;
static uint64_t received;

static void *reply_big(void *arg)
{
    (void)arg;
    static uint8_t big[SLOW_REPLY];
    while (!__atomic_load_n(&stop_threads, __ATOMIC_ACQUIRE)) {
        floem_packet_t pkts[8];
        unsigned n = floem_net_rx_framed(0, pkts, 8, &framer);
        for (unsigned i = 0; i < n; i++) {
            const uint8_t *at;
            message_of(&pkts[i], &at);
            uint32_t k = get32(at + 4);
            memset(big, (int)(k & 0xff), sizeof big);
            put32(big, k);
            uint8_t headers[HEADERS];
            memcpy(headers, pkts[i].data, HEADERS);
            floem_packet_t reply;
            CHECK(floem_net_alloc_before(&pkts[i], HEADERS + SLOW_REPLY, &reply));
            write_reply(&reply, headers, big, sizeof big);
            floem_net_tx(0, &reply);
            floem_net_free(&pkts[i]);
            __atomic_fetch_add(&received, 1, __ATOMIC_RELAXED);
        }
        floem_net_flush(0);
        if (n == 0)
            usleep(100);
    }
    return NULL;
}

static int test_slow(void)
{
    pthread_t server;
    CHECK(pthread_create(&server, NULL, reply_big, NULL) == 0);
    int fd = dial();
    uint8_t buf[8];
    for (uint32_t k = 0; k < SLOW_REQUESTS; k++) {
        put32(buf, 4);
        put32(buf + 4, k);
        send_all(fd, buf, sizeof buf);
    }
    usleep(500000);                 /* the server reads what its bounds let it */
    uint64_t early = __atomic_load_n(&received, __ATOMIC_RELAXED);
    CHECK(early > 0 && early < SLOW_REQUESTS);
    static uint8_t got[SLOW_REPLY];
    for (uint32_t k = 0; k < SLOW_REQUESTS; k++) {
        CHECK(read_all(fd, got, sizeof got));
        CHECK(get32(got) == k && got[SLOW_REPLY - 1] == (uint8_t)k);
    }
    __atomic_store_n(&stop_threads, 1, __ATOMIC_RELEASE);
    pthread_join(server, NULL);
    close(fd);
    floem_net_report();
    floem_net_finalize();
    printf("ok: %lu checks, %llu of %d requests read before the client read\n", checks,
           (unsigned long long)early, SLOW_REQUESTS);
    return 0;
}

/* ---- threads ------------------------------------------------------------------------------ */

#define THREADS 4
#define CONNECTIONS 64
#define PER_CONNECTION 200

static void *echo_thread(void *arg)
{
    unsigned q = (unsigned)(uintptr_t)arg % floem_net_queues();
    while (!__atomic_load_n(&stop_threads, __ATOMIC_ACQUIRE)) {
        floem_packet_t pkts[8];
        unsigned n = floem_net_rx_framed(q, pkts, 8, &framer);
        for (unsigned i = 0; i < n; i++) {
            const uint8_t *at;
            size_t len = message_of(&pkts[i], &at);
            uint8_t headers[HEADERS], copy[64];
            memcpy(headers, pkts[i].data, HEADERS);
            memcpy(copy, at, len);
            write_reply(&pkts[i], headers, copy, len);
            floem_net_tx(q, &pkts[i]);
        }
        floem_net_flush(q);
        if (n == 0)
            usleep(50);
    }
    return NULL;
}

static int test_threads(void)
{
    pthread_t threads[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        CHECK(pthread_create(&threads[i], NULL, echo_thread, (void *)i) == 0);
    int fds[CONNECTIONS];
    for (int c = 0; c < CONNECTIONS; c++)
        fds[c] = dial();
    static uint8_t out[CONNECTIONS][PER_CONNECTION * 12];
    size_t lens[CONNECTIONS] = {0};
    for (int c = 0; c < CONNECTIONS; c++) {
        for (int k = 0; k < PER_CONNECTION; k++) {
            put32(out[c] + lens[c], 4 + (uint32_t)(k % 5));
            put32(out[c] + lens[c] + 4, (uint32_t)(c * PER_CONNECTION + k));
            memset(out[c] + lens[c] + 8, 'x', (size_t)k % 5);
            lens[c] += 8 + (size_t)k % 5;
        }
        send_all(fds[c], out[c], lens[c]);
    }
    for (int c = 0; c < CONNECTIONS; c++) {
        static uint8_t got[PER_CONNECTION * 12];
        CHECK(read_all(fds[c], got, lens[c]));
        CHECK(memcmp(got, out[c], lens[c]) == 0);
        close(fds[c]);
    }
    __atomic_store_n(&stop_threads, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    floem_net_stats_t st;
    floem_net_stats(&st);
    CHECK(st.rx == CONNECTIONS * PER_CONNECTION && st.tx == st.rx && st.tx_dropped == 0);
    CHECK(st.conns_accepted == CONNECTIONS);
    unsigned queues = floem_net_queues();
    floem_net_finalize();
    printf("ok: %lu checks, %u queues, %d threads\n", checks, queues, THREADS);
    return 0;
}

int main(int argc, char **argv)
{
    const char *p = getenv("FLOEM_NET_PORT");
    CHECK(p != NULL);
    port = (uint16_t)atoi(p);
    floem_net_init();
    if (argc > 1 && strcmp(argv[1], "slow") == 0)
        return test_slow();
    if (argc > 1 && strcmp(argv[1], "threads") == 0)
        return test_threads();
    test_sizes();
    test_order();
    test_close();
    test_refused();
    floem_net_stats_t st;
    floem_net_stats(&st);
    CHECK(st.tx_dropped == 0 && st.conns_accepted == 6);
    floem_net_report();
    floem_net_finalize();
    printf("ok: %lu checks\n", checks);
    return 0;
}
