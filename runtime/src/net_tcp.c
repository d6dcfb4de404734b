/* Packet I/O backend `tcp` (FLOEM_NET_TCP): kernel TCP connections on FLOEM_NET_PORT of
 * FLOEM_NET_ADDR, each byte stream turned into messages by the program's framer.
 *
 * The model is memcached's connection state machine (its conn_read, conn_parse_cmd,
 * conn_nread, conn_swallow and conn_mwrite states): a connection's buffer of bytes
 * received, a framer that says "need more" or "one message of N bytes", and the replies
 * queued per connection in the order of the requests. Here a message leaves the connection
 * as a frame and goes through the program, possibly on several threads and devices, and its
 * reply comes back to the connection whenever it is ready; the connection's order (net_backend.h)
 * holds replies that are ready early until the replies before them have gone.
 *
 * Queues. Each queue is a listening socket (SO_REUSEPORT when there are several, so the kernel
 * spreads connections over them as receive-side scaling spreads flows) with an epoll set of
 * the connections it accepted: a connection stays on its queue, so its messages are received
 * by one thread, in order. Any thread may send a reply.
 *
 * Receiving. A readable connection is read into the queue's scratch buffer (after the bytes
 * it held back), the framer delimits messages, and each message is copied into a frame of
 * its own: Ethernet (FLOEM_TCP_PEER_MAC -> FLOEM_TCP_PORT_MAC, IPv4), IPv4 (the peer's and
 * the served address, TTL 64), TCP (the real ports; sequence number 1 + the message's offset
 * in the stream, acknowledgement 1 + the bytes sent back so far, PSH|ACK), checksums correct,
 * then the message. A frame of up to FLOEM_NET_BUFFER_BYTES comes from the pool; a longer one
 * (a message of up to FLOEM_NET_MESSAGE_MAX bytes) is a buffer of its own. A message longer
 * than that arrives cut, like a datagram longer than a buffer: its first
 * FLOEM_NET_MESSAGE_MAX bytes, the IPv4 length of the whole (up to 65535), no TCP checksum;
 * the rest of it is skipped as it arrives (memcached's conn_swallow). Bytes that are not a
 * whole message yet stay with the connection.
 *
 * Sending. A frame sent is parsed (Ethernet/IPv4/TCP) for its payload; its buffer says which
 * connection and which place in its order it has. When the frames at the head of the order
 * are done, their payloads are appended to the connection's output, which is written at once
 * (every frame sent in one call of floem_backend_send, a FromNet burst's, in one write per
 * connection); what the socket does not take waits for EPOLLOUT.
 *
 * Bounded memory. A connection whose unwritten output exceeds OUT_BOUND bytes, or that has
 * IN_FLIGHT_MAX frames in the program, is not read until it is below half of both: a client
 * that reads its replies slowly slows down its own requests, and its replies are never
 * dropped. Bytes held back are at most one message and one read.
 *
 * Closing. A connection closes when its peer closes it, when the framer cannot read it on
 * (FLOEM_FRAME_CLOSE) and when a message's end is not found within FLOEM_NET_MESSAGE_MAX
 * bytes, each once the replies to the messages before have been written (as memcached has
 * answered a connection's earlier requests when it reads what closes it); when it is
 * reset or a write fails (replies still to come are dropped and counted); and when a frame
 * given back with floem_net_close comes to its turn. Only the connection's queue thread closes its socket;
 * other threads ask it to (the queue's attention list). A connection's memory goes when its
 * socket is closed and no frame of it is left in the program.
 *
 * Counters: connections accepted, closed and open, bytes in and out (in the process's
 * counter file, for `floem stats`: runtime.h's floem_connection_stats_t), connections refused
 * (no file descriptor left), closed by the framer or for a message too long, replies
 * dropped (their connection was gone), and the connections each queue accepted, in the
 * FLOEM_REPORT report. At start the process's
 * file descriptor limit is raised to its hard limit, as memcached raises it for -c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#ifdef FLOEM_NET_TCP

#include "floem/net_backend.h"
#include "floem/runtime.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

const char floem_backend_name[] = "tcp";

#define HEADERS (14 + 20 + 20)
/* Unwritten output past which a connection is not read, and its frames in the program. */
#define OUT_BOUND (256u << 10)
#define IN_FLIGHT_MAX 256u
/* Room for output a connection keeps once it is all written (more is freed). */
#define OUT_KEPT (64u << 10)
/* Bytes read from one connection at a time; the queue's scratch holds a message and a read. */
#define READ_BYTES (64u << 10)
#define SCRATCH_BYTES (FLOEM_NET_MESSAGE_MAX + READ_BYTES)
#define EVENTS 64
#define ACCEPTS_PER_CALL 64
/* A receive that finds nothing waits (up to floem_backend_wait_ms()) for events, as memcached
 * does in epoll (a thread that manages a sync layer makes more empty calls in a row first:
 * floem_backend_idle_due). */
#define JUMBO_MAGIC 0x666c6f656d4a4d42ull       /* "floemJMB" */

static const uint8_t port_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};

/* A frame longer than a pool buffer: a buffer of its own (the frame's `buffer` points here). */
struct jumbo {
    uint64_t magic;
    floem_order_t order;
    _Alignas(16) uint8_t data[];
};

struct conn {
    floem_order_group_t order;      /* its lock guards every field below marked (L) */
    int fd;                         /* (L) -1 once closed */
    unsigned queue;
    uint32_t refs;                  /* (L) the socket (1 while open), frames in the program,
                                       the queue lists it is on, callers holding it */
    uint8_t *out;                   /* (L) replies in order, not yet written */
    size_t out_at, out_len, out_cap;
    uint32_t in_flight;             /* (L) frames of it in the program */
    uint64_t bytes_out;             /* (L) TCP acknowledgement numbers of its frames */
    bool want_write;                /* (L) EPOLLOUT asked for */
    bool closing;                   /* (L) a frame given back with floem_net_close came to its
                                       turn: close once the output is written, drop the
                                       replies after it */
    bool finishing;                 /* (L) done reading: close once the replies in flight
                                       are written */
    bool broken;                    /* (L) a write failed: close */
    bool asked;                     /* (L) on the queue's attention list */
    bool paused;                    /* (L) not read: over its bounds */
    /* The queue thread's alone: */
    uint8_t *held;                  /* bytes received, not yet a whole message */
    size_t held_len;
    uint64_t skip;                  /* bytes still to skip of a message delivered cut */
    uint64_t framer_state;
    uint64_t bytes_in;              /* TCP sequence numbers of its frames */
    bool done_reading;              /* its peer closed, or its stream cannot be read on: read
                                       no more, close once the replies in flight are written */
    bool ready;                     /* on the ready list: may hold whole messages */
    struct conn *next_ready, *next_asked;
    struct conn *prev_conn, *next_conn;     /* the queue's connections (under conns_lock) */
    uint16_t ip_id;
    struct sockaddr_in peer, local;
};

static struct {
    int epfd, listen_fd;
    int wake_fd;                    /* written when the attention list gets its first entry */
    unsigned empty_calls;           /* receives in a row that found nothing (atomic) */
    bool holding;                   /* `ready` was not empty after the last receive (atomic) */
    uint8_t *scratch;
    struct conn *ready;             /* connections that may hold whole messages */
    int asked_lock;
    struct conn *asked;             /* connections other threads ask the queue to look at */
    int conns_lock;
    struct conn *conns;             /* every connection it accepted whose memory is there */
    uint64_t accepted;              /* connections it accepted */
} queues[FLOEM_NET_MAX_QUEUES];
static unsigned n_queues;
static uint16_t port;
static struct in_addr listen_addr;
static const floem_framer_t *framer;
static int spare_fd = -1;           /* closed to refuse a connection when none is left */

static struct {
    uint64_t refused, framer_closed, too_long, replies_dropped;
} counts;
/* Connections and bytes: in the counter file when the process has one (floem stats). */
static floem_connection_stats_t own_stats;
static floem_connection_stats_t *live = &own_stats;

static void count(uint64_t *counter, uint64_t n)
{
    __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

/* ---- settings ------------------------------------------------------------------------------ */

static void raise_file_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &r);
    }
}

void floem_tcp_framer(const floem_framer_t *f)
{
    const floem_framer_t *had = __atomic_load_n(&framer, __ATOMIC_ACQUIRE);
    if (had == f)
        return;
    if (had == NULL && __atomic_compare_exchange_n(&framer, &had, f, false, __ATOMIC_RELEASE,
                                                   __ATOMIC_ACQUIRE))
        return;
    if (had->frame != f->frame || had->config != f->config)
        floem_net_fail("two FromNet elements of this process frame messages differently: "
                       "every FromNet of a process must give the same framer=");
}

/* ---- buffers ------------------------------------------------------------------------------- */

static struct jumbo *jumbo_of(const void *buffer)
{
    struct jumbo *j = (struct jumbo *)buffer;
    if (j == NULL || j->magic != JUMBO_MAGIC) {
        fprintf(stderr, "floem: net tcp: %p is not a frame buffer the network gave out\n",
                buffer);
        abort();
    }
    return j;
}

floem_order_t *floem_tcp_order(const void *buffer)
{
    floem_order_t *o = floem_pool_order(buffer);
    return o != NULL ? o : &jumbo_of(buffer)->order;
}

/* A buffer for a frame of `len` bytes: the pool's, or one of its own when longer. */
static bool take_buffer(uint32_t len, floem_packet_t *pkt)
{
    if (len <= FLOEM_NET_BUFFER_BYTES) {
        void *buf;
        if (floem_pool_get(&buf, 1) == 0)
            return false;
        floem_pool_frame(buf, len);
        *pkt = (floem_packet_t){buf, len, buf};
        floem_pool_order(buf)->group = NULL;
        return true;
    }
    if (len > 14 + 65535u)
        return false;
    struct jumbo *j = malloc(sizeof *j + len);
    if (j == NULL)
        return false;
    memset(j, 0, sizeof *j);
    j->magic = JUMBO_MAGIC;
    *pkt = (floem_packet_t){j->data, len, j};
    return true;
}

static void give_buffer(void *buffer)
{
    if (floem_pool_order(buffer) != NULL) {
        floem_pool_put(&buffer, 1);
        return;
    }
    struct jumbo *j = jumbo_of(buffer);
    j->magic = 0;
    free(j);
}

bool floem_backend_alloc(uint32_t len, floem_packet_t *pkt)
{
    return take_buffer(len, pkt);
}

bool floem_backend_frame(const floem_packet_t *pkt, floem_net_frame_t *frame)
{
    *frame = *pkt;
    return true;
}

/* ---- connections -------------------------------------------------------------------------- */

static void spin(int *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        floem_cpu_relax();
}

static void unspin(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static void release(struct conn *c)
{
    int *l = &queues[c->queue].conns_lock;
    spin(l);
    if (c->prev_conn != NULL)
        c->prev_conn->next_conn = c->next_conn;
    else
        queues[c->queue].conns = c->next_conn;
    if (c->next_conn != NULL)
        c->next_conn->prev_conn = c->prev_conn;
    unspin(l);
    free(c->held);
    free(c->out);
    free(c);
}

static void hold(struct conn *c)
{
    floem_order_lock(&c->order);
    c->refs++;
    floem_order_unlock(&c->order);
}

/* Drop a reference to `c` (its lock held: released here); the last one frees it. */
static void unlock_and_unref(struct conn *c)
{
    bool last = --c->refs == 0;
    floem_order_unlock(&c->order);
    if (last)
        release(c);
}

static void watch(struct conn *c, int op)
{
    bool reading = !c->paused && !c->done_reading;
    struct epoll_event ev = {.events = (reading ? EPOLLIN | EPOLLRDHUP : 0u) |
                                       (c->want_write ? EPOLLOUT : 0u),
                             .data.ptr = c};
    (void)epoll_ctl(queues[c->queue].epfd, op, c->fd, &ev);
}

/* Ask the queue thread to look at `c` (its lock held): close it, or read it again. */
static void ask_queue(struct conn *c)
{
    if (c->asked || c->fd < 0)
        return;
    c->asked = true;
    c->refs++;
    int *l = &queues[c->queue].asked_lock;
    spin(l);
    bool first = queues[c->queue].asked == NULL;
    c->next_asked = queues[c->queue].asked;
    queues[c->queue].asked = c;
    unspin(l);
    if (first)                      /* the queue's thread may be waiting in epoll */
        (void)eventfd_write(queues[c->queue].wake_fd, 1);
}

static bool over_bounds(const struct conn *c, unsigned shift)
{
    return c->out_len - c->out_at > (OUT_BOUND >> shift) || c->in_flight >= (IN_FLIGHT_MAX >> shift);
}

/* Whether `c` is to close now (its lock held). */
static bool closes_now(const struct conn *c)
{
    return c->broken || (c->out_len == 0 && (c->closing || (c->finishing && c->in_flight == 0)));
}

/* Write what `c`'s output holds (its lock held); ask for EPOLLOUT when the socket is full,
 * and the queue's attention when the connection should close or may be read again. */
static void write_out(struct conn *c)
{
    while (c->fd >= 0 && !c->broken && c->out_at < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_at, c->out_len - c->out_at,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            c->out_at += (size_t)n;
            count(&live->bytes_out, (uint64_t)n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->want_write) {
                c->want_write = true;
                watch(c, EPOLL_CTL_MOD);
            }
            return;
        } else {
            c->broken = true;
        }
    }
    if (c->out_at == c->out_len) {
        c->out_at = c->out_len = 0;
        if (c->out_cap > OUT_KEPT) {        /* a burst's room goes back */
            free(c->out);
            c->out = NULL;
            c->out_cap = 0;
        }
    }
    if (c->want_write && c->out_len == 0 && c->fd >= 0) {
        c->want_write = false;
        watch(c, EPOLL_CTL_MOD);
    }
    if (closes_now(c) || (c->paused && !over_bounds(c, 1)))
        ask_queue(c);
}

static void append_out(struct conn *c, const uint8_t *bytes, size_t n)
{
    if (c->fd < 0 || c->broken || c->closing) {
        count(&counts.replies_dropped, 1);
        return;
    }
    if (c->out_len + n > c->out_cap) {
        if (c->out_at > 0) {
            memmove(c->out, c->out + c->out_at, c->out_len - c->out_at);
            c->out_len -= c->out_at;
            c->out_at = 0;
        }
        if (c->out_len + n > c->out_cap) {
            size_t cap = c->out_cap ? c->out_cap : 4096;
            while (cap < c->out_len + n)
                cap *= 2;
            uint8_t *grown = realloc(c->out, cap);
            if (grown == NULL) {
                count(&counts.replies_dropped, 1);
                c->broken = true;
                return;
            }
            c->out = grown;
            c->out_cap = cap;
        }
    }
    memcpy(c->out + c->out_len, bytes, n);
    c->out_len += n;
    c->bytes_out += n;
}

/* The payload of a TCP frame; false when it is not one (a frame the program made wrongly). */
static bool payload_of(const floem_packet_t *p, const uint8_t **at, size_t *len)
{
    const uint8_t *f = p->data;
    if (p->len < HEADERS || f[12] != 0x08 || f[13] != 0x00 || (f[14] >> 4) != 4 ||
        f[23] != IPPROTO_TCP)
        return false;
    size_t ihl = (size_t)(f[14] & 0x0f) * 4, total = (size_t)f[16] << 8 | f[17];
    if (ihl < 20 || 14 + ihl + 20 > p->len || total < ihl + 20 || 14 + total > p->len)
        return false;
    size_t offset = (size_t)(f[14 + ihl + 12] >> 4) * 4;
    if (offset < 20 || ihl + offset > total)
        return false;
    *at = f + 14 + ihl + offset;
    *len = total - ihl - offset;
    return true;
}

/* The frames at the head of `c`'s order that are done leave it (its lock held). */
static void drain(struct conn *c)
{
    for (floem_order_t *o; (o = floem_order_pop(&c->order)) != NULL;) {
        const uint8_t *at;
        size_t len;
        if (o->state == FLOEM_ORDER_SENT) {
            if (payload_of(&o->pkt, &at, &len))
                append_out(c, at, len);
            else
                floem_net_queue[o->queue].tx_dropped++;
        }
        if (o->state == FLOEM_ORDER_CLOSE)
            c->closing = true;
        give_buffer(o->pkt.buffer);
        c->in_flight--;
        c->refs--;                  /* never the last: the caller holds one */
    }
}

/* Frame `pkt` of a connection is done (`state`): the frames before it permitting, it and
 * those after it that are done leave the order. Returns its connection, held, or NULL. */
static struct conn *done(const floem_packet_t *pkt, uint8_t state, unsigned queue)
{
    floem_order_t *o = floem_tcp_order(pkt->buffer);
    struct conn *c = o->group != NULL ? o->group->owner : NULL;
    if (c == NULL) {
        if (state == FLOEM_ORDER_SENT)
            floem_net_queue[queue].tx_dropped++;
        give_buffer(pkt->buffer);
        return NULL;
    }
    floem_order_lock(&c->order);
    c->refs++;
    o->state = state;
    o->pkt = *pkt;
    o->queue = queue;
    drain(c);
    floem_order_unlock(&c->order);
    return c;
}

void floem_backend_send(unsigned q, floem_net_frame_t *frames, unsigned n)
{
    struct conn *touched[FLOEM_NET_TX_BURST];
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        struct conn *c = done(&frames[i], FLOEM_ORDER_SENT, q);
        if (c == NULL)
            continue;
        floem_net_queue[q].tx++;
        unsigned j = 0;
        while (j < k && touched[j] != c)
            j++;
        if (j < k || k == FLOEM_NET_TX_BURST) {   /* held already: one reference each */
            floem_order_lock(&c->order);
            if (j == k)
                write_out(c);
            unlock_and_unref(c);
        } else {
            touched[k++] = c;
        }
    }
    for (unsigned j = 0; j < k; j++) {
        floem_order_lock(&touched[j]->order);
        write_out(touched[j]);
        unlock_and_unref(touched[j]);
    }
}

/* Frame `pkt`, given back (`state`: freed, or closing its connection), is done. */
static void given_back(floem_packet_t *pkt, uint8_t state)
{
    struct conn *c = done(pkt, state, 0);
    if (c != NULL) {
        floem_order_lock(&c->order);
        write_out(c);
        unlock_and_unref(c);
    }
}

void floem_backend_free(floem_packet_t *pkt)
{
    given_back(pkt, FLOEM_ORDER_FREED);
}

void floem_tcp_close(floem_packet_t *pkt)
{
    given_back(pkt, FLOEM_ORDER_CLOSE);
}

bool floem_tcp_alloc_before(const floem_packet_t *next, uint32_t len, floem_packet_t *pkt)
{
    if (!take_buffer(len, pkt))
        return false;
    floem_order_t *before = floem_tcp_order(next->buffer);
    struct conn *c = before->group != NULL ? before->group->owner : NULL;
    if (c == NULL)
        return true;
    floem_order_lock(&c->order);
    floem_order_insert_before(before, floem_tcp_order(pkt->buffer));
    c->in_flight++;
    c->refs++;
    floem_order_unlock(&c->order);
    return true;
}

/* ---- receiving --------------------------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    floem_net_put16(p, (uint16_t)(v >> 16));
    floem_net_put16(p + 2, (uint16_t)v);
}

/* Write message `msg` (`held` of its `whole` bytes) of `c` as a frame into `frame`. */
static void synthesise(uint8_t *frame, struct conn *c, const uint8_t *msg, size_t held,
                       size_t whole, uint64_t acked)
{
    uint8_t *eth = frame, *ip = frame + 14, *tcp = frame + 34;
    memcpy(eth, port_mac, 6);
    memcpy(eth + 6, peer_mac, 6);
    floem_net_put16(eth + 12, 0x0800);
    size_t total = 40 + whole > 65535 ? 65535 : 40 + whole;
    ip[0] = 0x45;
    ip[1] = 0;
    floem_net_put16(ip + 2, (uint16_t)total);
    floem_net_put16(ip + 4, c->ip_id++);
    floem_net_put16(ip + 6, 0x4000);                  /* don't fragment */
    ip[8] = 64;
    ip[9] = IPPROTO_TCP;
    floem_net_put16(ip + 10, 0);
    memcpy(ip + 12, &c->peer.sin_addr, 4);
    memcpy(ip + 16, &c->local.sin_addr, 4);
    floem_net_put16(ip + 10, floem_net_fold(floem_net_sum(0, ip, 20)));
    memcpy(tcp, &c->peer.sin_port, 2);
    memcpy(tcp + 2, &c->local.sin_port, 2);
    put32(tcp + 4, (uint32_t)(1 + c->bytes_in));
    put32(tcp + 8, (uint32_t)(1 + acked));
    tcp[12] = 5 << 4;
    tcp[13] = 0x18;                         /* PSH, ACK */
    floem_net_put16(tcp + 14, 65535);
    floem_net_put16(tcp + 16, 0);
    floem_net_put16(tcp + 18, 0);
    memcpy(frame + HEADERS, msg, held);
    if (held < whole)
        return;                             /* cut: no checksum */
    uint32_t sum = floem_net_sum(0, ip + 12, 8);   /* pseudo header: addresses, protocol, length */
    sum += IPPROTO_TCP + 20 + (uint32_t)whole;
    floem_net_put16(tcp + 16, floem_net_fold(floem_net_sum(sum, tcp, 20 + whole)));
}

/* Put `c` on its queue's ready list (it may hold whole messages it had no room to deliver). */
static void make_ready(struct conn *c)
{
    if (c->ready)
        return;
    c->ready = true;
    hold(c);
    c->next_ready = queues[c->queue].ready;
    queues[c->queue].ready = c;
}

/* Close `c`'s socket (the caller holds a reference). */
static void close_conn(struct conn *c)
{
    floem_order_lock(&c->order);
    if (c->fd >= 0) {
        (void)epoll_ctl(queues[c->queue].epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
        count(&live->closed, 1);
        c->refs--;                  /* the socket's; the caller holds another */
    }
    c->out_at = c->out_len = 0;
    floem_order_unlock(&c->order);
    free(c->held);
    c->held = NULL;
    c->held_len = 0;
}

/* Frame the messages of `bytes` (`len` bytes of `c`'s stream) into `pkts` (room for `max`);
 * keep what is not delivered. Returns how many. */
static unsigned frame_messages(struct conn *c, const uint8_t *bytes, size_t len,
                               floem_packet_t *pkts, unsigned max)
{
    size_t at = 0;
    unsigned n = 0;
    bool more = false;              /* stopped with whole messages left */
    while (c->fd >= 0) {
        if (c->skip > 0) {
            size_t d = len - at < c->skip ? len - at : (size_t)c->skip;
            at += d;
            c->skip -= d;
            if (c->skip > 0)
                break;
            continue;
        }
        if (at == len)
            break;
        floem_order_lock(&c->order);
        bool over = over_bounds(c, 0), broken = c->broken;
        uint64_t acked = c->bytes_out;
        if (over && !broken) {
            c->paused = true;
            watch(c, EPOLL_CTL_MOD);
        }
        floem_order_unlock(&c->order);
        if (over || broken)
            break;
        const floem_framer_t *f = __atomic_load_n(&framer, __ATOMIC_ACQUIRE);
        long whole = f->frame(f->config, &c->framer_state, bytes + at, len - at);
        if (whole == FLOEM_FRAME_CLOSE || whole < 0) {
            count(&counts.framer_closed, 1);
            c->done_reading = true;
            break;
        }
        if (whole == FLOEM_FRAME_MORE) {
            if (len - at >= FLOEM_NET_MESSAGE_MAX) {
                count(&counts.too_long, 1);
                c->done_reading = true;
            }
            break;
        }
        size_t held = (size_t)whole < FLOEM_NET_MESSAGE_MAX ? (size_t)whole : FLOEM_NET_MESSAGE_MAX;
        if (len - at < held)
            break;                  /* the rest of it is still to come */
        if (n == max) {
            more = true;
            break;
        }
        floem_packet_t *p = &pkts[n];
        if (!take_buffer((uint32_t)(HEADERS + held), p)) {
            __atomic_fetch_add(&floem_net_alloc_failed, 1, __ATOMIC_RELAXED);
            more = true;
            break;
        }
        synthesise(p->data, c, bytes + at, held, (size_t)whole, acked);
        floem_order_lock(&c->order);
        floem_order_append(&c->order, floem_tcp_order(p->buffer));
        c->in_flight++;
        c->refs++;
        floem_order_unlock(&c->order);
        n++;
        at += held;
        c->bytes_in += (uint64_t)whole;
        c->skip = (uint64_t)whole - held;
    }
    size_t left = c->fd >= 0 && !c->done_reading ? len - at : 0;
    if (left > 0 && bytes != c->held) {
        uint8_t *kept = malloc(left);
        if (kept == NULL) {
            close_conn(c);
            return n;
        }
        memcpy(kept, bytes + at, left);
        free(c->held);
        c->held = kept;
    } else if (left > 0 && at > 0) {
        memmove(c->held, c->held + at, left);
    } else if (left == 0) {
        free(c->held);
        c->held = NULL;
    }
    c->held_len = left;
    if (more)
        make_ready(c);
    return n;
}

static void stop_reading(struct conn *c);

/* Read what `c` has and frame it (the caller holds a reference). Bytes held back beyond a
 * message are whole messages still to deliver: then it is not read. */
static unsigned receive(struct conn *c, floem_packet_t *pkts, unsigned max)
{
    if (c->fd < 0 || c->paused || c->done_reading)
        return 0;
    uint8_t *scratch = queues[c->queue].scratch;
    size_t have = c->held_len;
    if (have > FLOEM_NET_MESSAGE_MAX) {
        unsigned n = frame_messages(c, c->held, c->held_len, pkts, max);
        stop_reading(c);
        return n;
    }
    if (have > 0)
        memcpy(scratch, c->held, have);
    ssize_t r;
    do
        r = recv(c->fd, scratch + have, SCRATCH_BYTES - have, MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    if (r > 0) {
        count(&live->bytes_in, (uint64_t)r);
        have += (size_t)r;
    } else if (r == 0) {
        c->done_reading = true;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        close_conn(c);                  /* reset: what it had in flight is dropped */
        return 0;
    }
    unsigned n = frame_messages(c, scratch, have, pkts, max);
    stop_reading(c);
    return n;
}

/* Once `c` is done reading: watch it for writing only, and close it when its replies in
 * flight are written. */
static void stop_reading(struct conn *c)
{
    if (c->done_reading && c->fd >= 0) {
        floem_order_lock(&c->order);
        c->finishing = true;
        watch(c, EPOLL_CTL_MOD);        /* no more EPOLLIN */
        if (closes_now(c))
            ask_queue(c);
        floem_order_unlock(&c->order);
    }
}

static void accept_all(unsigned q)
{
    for (unsigned i = 0; i < ACCEPTS_PER_CALL; i++) {
        struct sockaddr_in peer;
        socklen_t len = sizeof peer;
        int fd = accept4(queues[q].listen_fd, (struct sockaddr *)&peer, &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
            close(spare_fd);            /* refuse it: accept it with the spare, close it */
            fd = accept(queues[q].listen_fd, NULL, NULL);
            if (fd >= 0)
                close(fd);
            spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            count(&counts.refused, 1);
            continue;
        }
        if (fd < 0)
            return;
        struct conn *c = calloc(1, sizeof *c);
        if (c == NULL) {
            close(fd);
            count(&counts.refused, 1);
            continue;
        }
        int on = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        c->fd = fd;
        c->queue = q;
        c->refs = 1;
        c->order.owner = c;
        c->peer = peer;
        len = sizeof c->local;
        (void)getsockname(fd, (struct sockaddr *)&c->local, &len);
        int *l = &queues[q].conns_lock;
        spin(l);
        c->next_conn = queues[q].conns;
        if (c->next_conn != NULL)
            c->next_conn->prev_conn = c;
        queues[q].conns = c;
        unspin(l);
        watch(c, EPOLL_CTL_ADD);
        count(&live->accepted, 1);
        count(&queues[q].accepted, 1);
    }
}

/* Look at the connections other threads asked about: close them, or read them again. */
static void attend(unsigned q)
{
    int *l = &queues[q].asked_lock;
    spin(l);
    struct conn *c = queues[q].asked;
    queues[q].asked = NULL;
    unspin(l);
    while (c != NULL) {
        struct conn *next = c->next_asked;
        floem_order_lock(&c->order);
        c->asked = false;
        bool close_now = closes_now(c);
        bool resume = c->paused && !over_bounds(c, 1) && c->fd >= 0;
        if (resume && !close_now) {
            c->paused = false;
            watch(c, EPOLL_CTL_MOD);
        }
        floem_order_unlock(&c->order);
        if (close_now)
            close_conn(c);
        else if (resume && c->held_len > 0)
            make_ready(c);
        floem_order_lock(&c->order);
        unlock_and_unref(c);
        c = next;
    }
}

/* Deliver the whole messages connections of the ready list hold. */
static unsigned deliver_ready(unsigned q, floem_packet_t *pkts, unsigned max)
{
    unsigned n = 0;
    struct conn *c = queues[q].ready;
    queues[q].ready = NULL;
    while (c != NULL) {
        struct conn *next = c->next_ready;
        c->ready = false;
        floem_order_lock(&c->order);
        bool paused = c->paused;
        floem_order_unlock(&c->order);
        if (n < max && c->fd >= 0 && !paused && !c->done_reading) {
            n += frame_messages(c, c->held, c->held_len, pkts + n, max - n);
            stop_reading(c);
        }
        else if (c->fd >= 0)
            make_ready(c);
        floem_order_lock(&c->order);
        unlock_and_unref(c);
        c = next;
    }
    return n;
}

unsigned floem_backend_rx(unsigned q, floem_packet_t *pkts, unsigned max)
{
    if (__atomic_load_n(&framer, __ATOMIC_ACQUIRE) == NULL)
        floem_net_fail("no framer: receive with floem_net_rx_framed");
    attend(q);
    unsigned n = deliver_ready(q, pkts, max);
    if (n < max) {
        struct epoll_event events[EVENTS];
        int got = epoll_wait(queues[q].epfd, events, EVENTS, 0);
        bool woken = false;
        for (int i = 0; i < got; i++) {
            struct conn *c = events[i].data.ptr;
            if (c == NULL) {
                accept_all(q);
                continue;
            }
            if (events[i].data.ptr == &queues[q]) {
                eventfd_t ignored;
                (void)eventfd_read(queues[q].wake_fd, &ignored);
                woken = true;
                continue;
            }
            uint32_t ev = events[i].events;
            floem_order_lock(&c->order);
            c->refs++;
            if (ev & EPOLLOUT)
                write_out(c);
            floem_order_unlock(&c->order);
            if ((ev & (EPOLLHUP | EPOLLERR)) && c->done_reading)
                close_conn(c);          /* gone both ways: its replies cannot be written */
            else if ((ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && n < max)
                n += receive(c, pkts + n, max - n);
            else if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                make_ready(c);
            floem_order_lock(&c->order);
            unlock_and_unref(c);
        }
        if (woken)
            attend(q);
    }
    if (n > 0)
        __atomic_store_n(&queues[q].empty_calls, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&queues[q].holding, queues[q].ready != NULL, __ATOMIC_RELAXED);
    return n;
}

bool floem_backend_rx_wait(unsigned q)
{
    if (__atomic_load_n(&queues[q].holding, __ATOMIC_RELAXED) ||
        !floem_backend_idle_due(&queues[q].empty_calls, 1))
        return false;
    /* The epoll set is readable when it has events; level-triggered, the receive after
     * sees them. */
    return floem_backend_wait_readable(queues[q].epfd);
}

bool floem_backend_rx_done(void)
{
    return false;
}

/* ---- the port ---------------------------------------------------------------------------- */

static int open_listener(bool shared)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        floem_net_fail("socket: %s", strerror(errno));
    int on = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (shared && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0)
        floem_net_fail("SO_REUSEPORT: %s", strerror(errno));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port),
                               .sin_addr = listen_addr};
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
        floem_net_fail("cannot serve TCP port %u of %s: %s", port, inet_ntoa(listen_addr),
                       strerror(errno));
    if (listen(fd, 4096) != 0)
        floem_net_fail("listen: %s", strerror(errno));
    return fd;
}

unsigned floem_backend_init(unsigned wanted)
{
    port = floem_net_port_setting("TCP");
    listen_addr.s_addr = floem_net_addr_setting(htonl(INADDR_LOOPBACK));
    raise_file_limit();
    floem_pool_init();
    memset(&counts, 0, sizeof counts);
    live = floem_connection_stats_slot != NULL ? floem_connection_stats_slot : &own_stats;
    memset(live, 0, sizeof *live);
    framer = NULL;
    spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    n_queues = wanted;
    for (unsigned q = 0; q < n_queues; q++) {
        memset(&queues[q], 0, sizeof queues[q]);
        queues[q].scratch = malloc(SCRATCH_BYTES);
        queues[q].epfd = epoll_create1(EPOLL_CLOEXEC);
        queues[q].wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (queues[q].scratch == NULL || queues[q].epfd < 0 || queues[q].wake_fd < 0)
            floem_net_fail("cannot make queue %u: %s", q, strerror(errno));
        struct epoll_event wake = {.events = EPOLLIN, .data.ptr = &queues[q]};
        if (epoll_ctl(queues[q].epfd, EPOLL_CTL_ADD, queues[q].wake_fd, &wake) != 0)
            floem_net_fail("epoll: %s", strerror(errno));
        queues[q].listen_fd = open_listener(n_queues > 1);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        if (epoll_ctl(queues[q].epfd, EPOLL_CTL_ADD, queues[q].listen_fd, &ev) != 0)
            floem_net_fail("epoll: %s", strerror(errno));
    }
    /* Connections made from now on wait in the backlog until a thread accepts them. */
    fprintf(stderr, "floem: net tcp: ready on TCP port %u of %s\n", (unsigned)port,
            inet_ntoa(listen_addr));
    return n_queues;
}

void floem_backend_finalize(void)
{
    /* Every thread has stopped: every connection is closed and its memory freed, frames of
     * it still in the program (in a queue nobody dequeues any more) or not. */
    for (unsigned q = 0; q < n_queues; q++) {
        attend(q);
        struct conn *c = queues[q].ready;
        queues[q].ready = NULL;
        while (c != NULL) {
            struct conn *next = c->next_ready;
            c->ready = false;
            floem_order_lock(&c->order);
            unlock_and_unref(c);
            c = next;
        }
        while (queues[q].conns != NULL) {
            struct conn *conn = queues[q].conns;
            close_conn(conn);
            queues[q].conns = conn->next_conn;
            free(conn->held);
            free(conn->out);
            free(conn);
        }
        close(queues[q].listen_fd);
        close(queues[q].epfd);
        close(queues[q].wake_fd);
        free(queues[q].scratch);
    }
    if (spare_fd >= 0)
        close(spare_fd);
    spare_fd = -1;
    n_queues = 0;
    floem_pool_destroy();
}

void floem_tcp_stats(floem_net_stats_t *out)
{
    out->conns_accepted = __atomic_load_n(&live->accepted, __ATOMIC_RELAXED);
    out->conns_closed = __atomic_load_n(&live->closed, __ATOMIC_RELAXED);
    out->conns_open = out->conns_accepted - out->conns_closed;
    out->bytes_in = __atomic_load_n(&live->bytes_in, __ATOMIC_RELAXED);
    out->bytes_out = __atomic_load_n(&live->bytes_out, __ATOMIC_RELAXED);
}

void floem_backend_report(FILE *out)
{
    floem_net_stats_t st;
    floem_tcp_stats(&st);
    fprintf(out, "floem: net tcp: connections open %llu, accepted %llu, closed %llu, "
            "bytes in %llu, bytes out %llu, refused %llu, closed by the framer %llu, "
            "messages too long %llu, replies dropped %llu\n",
            (unsigned long long)st.conns_open, (unsigned long long)st.conns_accepted,
            (unsigned long long)st.conns_closed, (unsigned long long)st.bytes_in,
            (unsigned long long)st.bytes_out,
            (unsigned long long)__atomic_load_n(&counts.refused, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&counts.framer_closed, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&counts.too_long, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&counts.replies_dropped, __ATOMIC_RELAXED));
    fprintf(out, "floem: net tcp: connections accepted by queue:");
    for (unsigned q = 0; q < n_queues; q++)
        fprintf(out, " %llu", (unsigned long long)__atomic_load_n(&queues[q].accepted,
                                                                  __ATOMIC_RELAXED));
    fputc('\n', out);
}

#endif
