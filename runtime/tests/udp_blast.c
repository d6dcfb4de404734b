/* A UDP load generator for the overload tests (tests/test_overload.py).
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -O2 -pthread runtime/tests/udp_blast.c -o udp_blast
 * Usage: udp_blast PORT SOCKETS SECONDS LIMIT
 *
 * SOCKETS sockets on 127.0.0.1, each with a sender thread and a receiver thread (with
 * UDP_BLAST_SERVER=ADDR in the environment: sockets on any address, sending to ADDR, a server
 * on another host or network namespace). A sender sends numbered datagrams to 127.0.0.1:PORT, 32 per sendmmsg, as fast as it can for SECONDS
 * (and at most LIMIT): datagram k of socket s is an 8-byte header (s, k, both little-endian
 * 32-bit) and 8 + k % 89 bytes of a pattern of (s, k). Its receiver takes the replies and
 * checks that each is exactly a datagram of its socket, answered for the first time, from
 * the port. When the senders have stopped, the receivers go on until no reply has come for
 * a second (30 s at most). Then one line per socket:
 *     socket S: sent N, answered N, wrong N, repeated N, dropped N
 * (dropped: the kernel's drop count of the socket, its receive buffer full, SO_MEMINFO) and
 * exit status 0; a socket or thread that cannot be set up is a message and status 1.
 *
 * With TEMPLATES OPAQUE_AT REPLIES (tests/kvs/test_kvs_overload.py): the datagrams are the
 * requests of file TEMPLATES (each a 16-bit little-endian length and its bytes): datagram k
 * of socket s is template (k * SOCKETS + s) % count, with s << 24 | k written big-endian at
 * byte OPAQUE_AT (a memcached request's opaque field). Replies are not checked here: each
 * receiver writes them to file REPLIES.S, each as a 32-bit little-endian length and its
 * bytes, for the test to check (wrong and repeated are then 0).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SOCKETS 16
#define BATCH 32
#define MAX_BYTES 1500

/* The requests of template mode, and where their opaque field is. */
static struct {
    uint8_t **data;
    uint16_t *len;
    uint32_t count, opaque_at;
} templates;

struct blaster {
    int fd, index;
    uint32_t limit;
    double seconds;
    struct sockaddr_in server;
    uint64_t sent, answered, wrong, repeated;
    uint8_t *seen;              /* one bit per datagram number */
    int sending;                /* 1 while the sender runs */
    int sockets;
    FILE *replies;              /* template mode: where the replies go */
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static _Noreturn void fail(const char *what)
{
    fprintf(stderr, "udp_blast: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Datagram k of socket s (of `sockets`) into buf; returns its length. */
static size_t datagram(uint32_t s, uint32_t k, uint32_t sockets, uint8_t *buf)
{
    if (templates.count > 0) {
        uint32_t t = (uint32_t)(((uint64_t)k * sockets + s) % templates.count);
        memcpy(buf, templates.data[t], templates.len[t]);
        uint32_t opaque = htonl(s << 24 | (k & 0xffffff));
        memcpy(buf + templates.opaque_at, &opaque, sizeof opaque);
        return templates.len[t];
    }
    uint32_t head[2] = {s, k};
    memcpy(buf, head, sizeof head);
    size_t len = 8 + 8 + k % 89;
    for (size_t i = 8; i < len; i++)
        buf[i] = (uint8_t)(s * 131 + k * 7 + i);
    return len;
}

static void *send_thread(void *arg)
{
    struct blaster *b = arg;
    static _Thread_local uint8_t bufs[BATCH][MAX_BYTES];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    double deadline = now() + b->seconds;
    uint32_t k = 0;
    while (k < b->limit && now() < deadline) {
        unsigned n = 0;
        for (; n < BATCH && k + n < b->limit; n++) {
            iov[n] = (struct iovec){bufs[n], datagram((uint32_t)b->index, k + n,
                                                      (uint32_t)b->sockets, bufs[n])};
            msgs[n].msg_hdr = (struct msghdr){.msg_name = &b->server,
                                              .msg_namelen = sizeof b->server,
                                              .msg_iov = &iov[n], .msg_iovlen = 1};
        }
        int sent = sendmmsg(b->fd, msgs, n, 0);
        if (sent < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == ENOBUFS)
                continue;
            fail("sendmmsg");
        }
        k += (uint32_t)sent;
    }
    __atomic_store_n(&b->sent, k, __ATOMIC_RELEASE);
    __atomic_store_n(&b->sending, 0, __ATOMIC_RELEASE);
    return NULL;
}

/* Check one reply; counts it as answered, wrong or repeated. */
static void check_reply(struct blaster *b, const uint8_t *data, size_t len,
                        const struct sockaddr_in *from)
{
    uint8_t want[MAX_BYTES];
    uint32_t head[2];
    if (b->replies != NULL && from->sin_port == b->server.sin_port) {
        uint32_t n = (uint32_t)len;
        if (fwrite(&n, sizeof n, 1, b->replies) != 1 || fwrite(data, 1, len, b->replies) != len)
            fail("writing the replies");
        b->answered++;
        return;
    }
    if (len < sizeof head || from->sin_port != b->server.sin_port) {
        b->wrong++;
        return;
    }
    memcpy(head, data, sizeof head);
    if (head[0] != (uint32_t)b->index || head[1] >= b->limit ||
        datagram(head[0], head[1], (uint32_t)b->sockets, want) != len ||
        memcmp(want, data, len) != 0) {
        b->wrong++;
        return;
    }
    uint8_t bit = (uint8_t)(1u << (head[1] % 8));
    if (b->seen[head[1] / 8] & bit) {
        b->repeated++;
        return;
    }
    b->seen[head[1] / 8] |= bit;
    b->answered++;
}

static void *receive_thread(void *arg)
{
    struct blaster *b = arg;
    static _Thread_local uint8_t bufs[BATCH][MAX_BYTES + 1];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    struct sockaddr_in from[BATCH];
    double quiet = 0, give_up = 0;
    for (;;) {
        bool sending = __atomic_load_n(&b->sending, __ATOMIC_ACQUIRE);
        if (!sending && quiet == 0) {
            quiet = now() + 1;
            give_up = now() + 30;
        }
        if (!sending && (now() > quiet || now() > give_up))
            break;
        struct pollfd pfd = {.fd = b->fd, .events = POLLIN};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        for (unsigned i = 0; i < BATCH; i++) {
            iov[i] = (struct iovec){bufs[i], sizeof bufs[i]};
            msgs[i].msg_hdr = (struct msghdr){.msg_name = &from[i], .msg_namelen = sizeof from[i],
                                              .msg_iov = &iov[i], .msg_iovlen = 1};
        }
        int got = recvmmsg(b->fd, msgs, BATCH, MSG_DONTWAIT, NULL);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            fail("recvmmsg");
        }
        for (int i = 0; i < got; i++)
            check_reply(b, bufs[i], msgs[i].msg_len, &from[i]);
        if (got > 0 && !sending)
            quiet = now() + 1;
    }
    return NULL;
}

/* The kernel's count of datagrams dropped at the socket (receive buffer full). */
static uint64_t socket_drops(int fd)
{
    uint32_t info[SK_MEMINFO_VARS];
    socklen_t len = sizeof info;
    if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, info, &len) != 0)
        fail("SO_MEMINFO");
    return info[SK_MEMINFO_DROPS];
}

/* Read the requests of template mode from `path`. */
static void read_templates(const char *path, long opaque_at)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail(path);
    uint16_t len;
    while (fread(&len, sizeof len, 1, f) == 1) {
        uint8_t *data = malloc(MAX_BYTES);
        templates.data = realloc(templates.data, (templates.count + 1) * sizeof *templates.data);
        templates.len = realloc(templates.len, (templates.count + 1) * sizeof *templates.len);
        if (data == NULL || templates.data == NULL || templates.len == NULL)
            fail("malloc");
        if (len > MAX_BYTES || opaque_at < 0 || (size_t)opaque_at + 4 > len ||
            fread(data, 1, len, f) != len) {
            fprintf(stderr, "udp_blast: %s: a bad template\n", path);
            exit(2);
        }
        templates.data[templates.count] = data;
        templates.len[templates.count++] = len;
    }
    fclose(f);
    templates.opaque_at = (uint32_t)opaque_at;
    if (templates.count == 0) {
        fprintf(stderr, "udp_blast: %s: no template\n", path);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 8) {
        fprintf(stderr, "usage: %s PORT SOCKETS SECONDS LIMIT [TEMPLATES OPAQUE_AT REPLIES]\n",
                argv[0]);
        return 2;
    }
    if (argc == 8)
        read_templates(argv[5], atol(argv[6]));
    int port = atoi(argv[1]), sockets = atoi(argv[2]);
    double seconds = atof(argv[3]);
    long limit = atol(argv[4]);
    if (port < 1 || port > 65535 || sockets < 1 || sockets > MAX_SOCKETS || !(seconds > 0) ||
        limit < 1 || limit > (1L << 30)) {
        fprintf(stderr, "udp_blast: bad arguments\n");
        return 2;
    }
    struct in_addr server = {htonl(INADDR_LOOPBACK)}, local = server;
    const char *addr = getenv("UDP_BLAST_SERVER");
    if (addr != NULL && addr[0] != '\0') {
        if (inet_pton(AF_INET, addr, &server) != 1) {
            fprintf(stderr, "udp_blast: UDP_BLAST_SERVER=%s is not an IPv4 address\n", addr);
            return 2;
        }
        local.s_addr = htonl(INADDR_ANY);
    }
    static struct blaster b[MAX_SOCKETS];
    pthread_t senders[MAX_SOCKETS], receivers[MAX_SOCKETS];
    for (int s = 0; s < sockets; s++) {
        b[s] = (struct blaster){.index = s, .limit = (uint32_t)limit, .seconds = seconds,
                                .sending = 1, .sockets = sockets};
        if (argc == 8) {
            char path[4096];
            snprintf(path, sizeof path, "%s.%d", argv[7], s);
            if ((b[s].replies = fopen(path, "wb")) == NULL)
                fail(path);
        }
        b[s].server = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                           .sin_addr = server};
        b[s].seen = calloc((size_t)limit / 8 + 1, 1);
        b[s].fd = socket(AF_INET, SOCK_DGRAM, 0);
        if (b[s].seen == NULL || b[s].fd < 0)
            fail("socket");
        int bytes = 4 << 20;
        if (setsockopt(b[s].fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
            (void)setsockopt(b[s].fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
        struct sockaddr_in self = {.sin_family = AF_INET, .sin_addr = local};
        if (bind(b[s].fd, (struct sockaddr *)&self, sizeof self) != 0)
            fail("bind");
    }
    for (int s = 0; s < sockets; s++) {
        errno = pthread_create(&receivers[s], NULL, receive_thread, &b[s]);
        if (errno != 0)
            fail("pthread_create");
        errno = pthread_create(&senders[s], NULL, send_thread, &b[s]);
        if (errno != 0)
            fail("pthread_create");
    }
    for (int s = 0; s < sockets; s++) {
        pthread_join(senders[s], NULL);
        pthread_join(receivers[s], NULL);
    }
    for (int s = 0; s < sockets; s++) {
        printf("socket %d: sent %llu, answered %llu, wrong %llu, repeated %llu, dropped %llu\n", s,
               (unsigned long long)b[s].sent, (unsigned long long)b[s].answered,
               (unsigned long long)b[s].wrong, (unsigned long long)b[s].repeated,
               (unsigned long long)socket_drops(b[s].fd));
        close(b[s].fd);
        free(b[s].seen);
        if (b[s].replies != NULL && fclose(b[s].replies) != 0)
            fail("writing the replies");
    }
    return 0;
}
