/* The Storm data plane's transport: see transport.h. */
#include "transport.h"

#include "floem/net.h"
#include "floem/runtime.h"
#include "headers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MIN_WINDOW 4u
#define FIRST_WINDOW 32u
#define BUSY_WAIT_NS 200000u        /* after a "busy" acknowledgement, wait this long, resend */

/* One destination server: a connection (or, for this server itself, local delivery). */
struct storm_peer {
    /* Backlog: written at tail by the multiplexer, read at head by the transmitter. */
    uint8_t (*backlog)[STORM_TUPLE_BYTES];
    uint64_t head, tail;
    /* Sending side (the transmitter's, except `acked`, which the demultiplexer writes). */
    uint8_t (*sent)[STORM_TUPLE_BYTES];     /* tuples [acked, next) by sequence number */
    uint32_t next;                  /* sequence number of the next new tuple */
    uint32_t acked;                 /* every tuple before it is acknowledged */
    uint32_t seen;                  /* `acked` at the transmitter's last look */
    uint32_t resend;                /* go-back-N: resend [resend, next) */
    uint32_t dupacks;               /* acknowledgements of `acked` again (the demultiplexer's) */
    uint32_t recover;               /* no fast retransmit before `acked` passes it */
    uint32_t busy;                  /* the receiver refused `acked` (the demultiplexer's) */
    uint64_t hold_ns;               /* send nothing before this time */
    uint32_t cwnd, grown;
    uint64_t progress_ns;           /* last acknowledgement progress, or first send after idle */
    /* Receiving side (the demultiplexer's). */
    uint32_t expected;
    /* Counters. */
    uint64_t sent_tuples, resent, timeouts, fast_resends, busy_waits, acks, delivered, refused,
        out_of_order;
};

struct storm_transport {
    const struct storm_dp_config *config;
    uint16_t port[STORM_MAX_SERVERS];   /* every server's UDP port */
    struct storm_peer peer[STORM_MAX_SERVERS];
    uint64_t sent_datagrams, lost, random;
    uint64_t now_ns;                /* the transmitter's turn */
};

static _Thread_local int queue_full;

static struct storm_transport *transport;
static void report(void);
static pthread_once_t made = PTHREAD_ONCE_INIT;
static const struct storm_dp_config *wanted;

/* Zeroed, page-aligned memory that the kernel zeroes as it is first touched: the first tuple
 * does not pay for clearing megabytes of backlog (floem explore would count it). */
static void *cache_aligned(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "storm: no memory for the transport (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* t->port from the topology, then STORM_PORTS; 0 if a server has none or it is malformed. */
static int find_ports(struct storm_transport *t)
{
    const struct storm_dp_config *c = t->config;
    for (int s = 0; s < c->servers; s++)
        t->port[s] = c->at[s].port;
    const char *text = getenv("STORM_PORTS");
    for (int s = 0; text != NULL && s < c->servers; s++) {
        char *end;
        unsigned long port = strtoul(text, &end, 10);
        if (end == text || port == 0 || port > 65535 || *end != (s + 1 < c->servers ? ',' : '\0'))
            return 0;
        t->port[s] = (uint16_t)port;
        text = end + 1;
    }
    for (int s = 0; s < c->servers; s++)
        if (t->port[s] == 0)
            return 0;
    return 1;
}

static void make(void)
{
    const struct storm_dp_config *c = wanted;
    if (c->servers < 1 || c->servers > STORM_MAX_SERVERS || c->window == 0 ||
        (c->window & (c->window - 1)) != 0 || c->backlog == 0 || (c->backlog & (c->backlog - 1)) != 0) {
        fprintf(stderr, "storm: bad transport configuration\n");
        exit(1);
    }
    struct storm_transport *t = cache_aligned(sizeof *t);
    t->config = c;
    if (!find_ports(t)) {
        fprintf(stderr, "storm: STORM_PORTS must list the UDP ports of the topology's %d "
                "servers, comma-separated (a server without a port in the topology needs "
                "it; run.py sets it)\n", c->servers);
        exit(1);
    }
    t->random = c->drop_seed * 0x9e3779b97f4a7c15ull + 1;
    for (int s = 0; s < c->servers; s++) {
        struct storm_peer *p = &t->peer[s];
        p->backlog = cache_aligned((size_t)c->backlog * STORM_TUPLE_BYTES);
        if (s != c->self)
            p->sent = cache_aligned((size_t)c->window * STORM_TUPLE_BYTES);
        p->cwnd = FIRST_WINDOW < c->window ? FIRST_WINDOW : c->window;
    }
    __atomic_store_n(&transport, t, __ATOMIC_RELEASE);
    if (getenv("FLOEM_REPORT") != NULL)
        atexit(report);
}

struct storm_transport *storm_dp_open(const struct storm_dp_config *config)
{
    if (__atomic_load_n(&transport, __ATOMIC_ACQUIRE) == NULL) {
        wanted = config;
        pthread_once(&made, make);
    }
    return transport;
}

int storm_dp_route(const struct storm_transport *t, const uint8_t *tuple, int *worker)
{
    uint32_t task = storm_dp_le32(tuple);
    if (task >= (uint32_t)t->config->executors)
        return -1;
    *worker = t->config->local_of[task];
    return t->config->server_of[task];
}

int storm_dp_backlog_put(struct storm_transport *t, int server, const uint8_t *tuple)
{
    struct storm_peer *p = &t->peer[server];
    uint64_t head = __atomic_load_n(&p->head, __ATOMIC_ACQUIRE);
    if (p->tail - head == t->config->backlog)
        return 0;
    memcpy(p->backlog[p->tail & (t->config->backlog - 1)], tuple, STORM_TUPLE_BYTES);
    __atomic_store_n(&p->tail, p->tail + 1, __ATOMIC_RELEASE);
    return 1;
}

static const uint8_t *backlog_peek(struct storm_transport *t, struct storm_peer *p)
{
    if (__atomic_load_n(&p->tail, __ATOMIC_ACQUIRE) == p->head)
        return NULL;
    return p->backlog[p->head & (t->config->backlog - 1)];
}

static void backlog_pop(struct storm_peer *p)
{
    __atomic_store_n(&p->head, p->head + 1, __ATOMIC_RELEASE);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Sequence numbers wrap: a is before b. */
static int before(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

enum storm_received storm_dp_receive(struct storm_transport *t, uint8_t *frame, size_t size,
                                  int *peer, const uint8_t **tuple)
{
    const struct storm_dp_config *c = t->config;
    struct floem_udp_view view;
    if (floem_udp_parse(frame, size, 0, &view) != FLOEM_UDP_OK || view.payload_len < STORM_WIRE_HEADER)
        return STORM_RX_JUNK;
    const uint8_t *w = view.payload;
    if (w[1] >= c->servers || w[1] == c->self || w[2] != c->self)
        return STORM_RX_JUNK;
    struct storm_peer *p = &t->peer[w[1]];
    uint32_t seq = storm_dp_le32(w + 4);
    *peer = w[1];
    if (w[0] == STORM_WIRE_ACK) {
        uint32_t acked = __atomic_load_n(&p->acked, __ATOMIC_RELAXED);
        uint32_t next = __atomic_load_n(&p->next, __ATOMIC_ACQUIRE);
        if (before(acked, seq) && !before(next, seq)) {     /* new, and for something sent */
            __atomic_store_n(&p->acked, seq, __ATOMIC_RELEASE);
            __atomic_store_n(&p->dupacks, 0, __ATOMIC_RELAXED);
        } else if (seq == acked && acked != next) {         /* the receiver lacks `acked` */
            __atomic_add_fetch(&p->dupacks, 1, __ATOMIC_RELAXED);
        }
        if (w[3] & STORM_WIRE_BUSY)
            __atomic_store_n(&p->busy, 1, __ATOMIC_RELEASE);
        p->acks++;
        return STORM_RX_ACK;
    }
    if (w[0] != STORM_WIRE_DATA || view.payload_len < STORM_WIRE_HEADER + STORM_TUPLE_BYTES)
        return STORM_RX_JUNK;
    *tuple = w + STORM_WIRE_HEADER;
    if (seq != p->expected) {
        p->out_of_order++;
        return STORM_RX_AGAIN;
    }
    return STORM_RX_DATA;
}

/* Fill the transport header of a datagram to `peer`. */
static void wire_header(struct storm_transport *t, uint8_t *w, int kind, int peer, uint32_t seq,
                        int flags)
{
    w[0] = (uint8_t)kind;
    w[1] = (uint8_t)t->config->self;
    w[2] = (uint8_t)peer;
    w[3] = (uint8_t)flags;
    put_le32(w + 4, seq);
}

size_t storm_dp_acknowledge(struct storm_transport *t, uint8_t *frame, int peer, int outcome)
{
    struct storm_peer *p = &t->peer[peer];
    if (outcome == STORM_DELIVERED && storm_dp_queue_refused())
        outcome = STORM_REFUSED;
    if (outcome == STORM_DELIVERED) {
        p->expected++;
        p->delivered++;
    } else if (outcome == STORM_REFUSED) {
        p->refused++;
    }
    floem_udp_swap(frame);
    uint8_t *w = floem_udp_payload(frame);      /* after IPv4 options, if the sender had any */
    wire_header(t, w, STORM_WIRE_ACK, peer, p->expected,
                outcome == STORM_REFUSED ? STORM_WIRE_BUSY : 0);
    size_t size = (size_t)(w - frame) + STORM_WIRE_HEADER;
    floem_udp_set_length(frame, size, 0);
    return size;
}

void storm_dp_transmit_begin(struct storm_transport *t, uint64_t now_ns)
{
    const struct storm_dp_config *c = t->config;
    t->now_ns = now_ns;
    for (int s = 0; s < c->servers; s++) {
        struct storm_peer *p = &t->peer[s];
        if (s == c->self)
            continue;
        uint32_t acked = __atomic_load_n(&p->acked, __ATOMIC_ACQUIRE);
        if (acked != p->seen) {                 /* additive increase: one per window acked */
            p->grown += acked - p->seen;
            p->seen = acked;
            p->progress_ns = now_ns;
            if (p->grown >= p->cwnd) {
                p->grown = 0;
                if (p->cwnd < c->window)
                    p->cwnd++;
            }
        }
        if (before(p->resend, acked))
            p->resend = acked;
        if (__atomic_exchange_n(&p->busy, 0, __ATOMIC_ACQUIRE) && acked != p->next) {
            p->busy_waits++;                    /* flow control: no congestion, wait a little */
            p->resend = acked;
            p->hold_ns = now_ns + BUSY_WAIT_NS;
            p->progress_ns = now_ns;
            continue;
        }
        if (acked == p->next || p->resend != p->next)
            continue;
        int timeout = now_ns - p->progress_ns > c->rto_ns;
        int fast = !before(acked, p->recover) && __atomic_load_n(&p->dupacks, __ATOMIC_RELAXED) >= 3;
        if (timeout || fast) {                  /* multiplicative decrease, then go back N */
            p->timeouts += (uint64_t)timeout;
            p->fast_resends += (uint64_t)!timeout;
            p->cwnd = p->cwnd / 2 > MIN_WINDOW ? p->cwnd / 2 : MIN_WINDOW;
            p->grown = 0;
            p->resend = acked;
            p->recover = p->next;
            p->progress_ns = now_ns;
            __atomic_store_n(&p->dupacks, 0, __ATOMIC_RELAXED);
        }
    }
}

/* Build the data datagram of sequence number `seq` to `server` into a new frame. */
static int data_frame(struct storm_transport *t, int server, uint32_t seq, const uint8_t *tuple,
                      floem_packet_t *frame)
{
    const struct storm_dp_config *c = t->config;
    if (!floem_net_alloc(STORM_DATA_FRAME, frame))
        return 0;
    const struct storm_endpoint *from = &c->at[c->self], *to = &c->at[server];
    struct floem_udp_endpoints ends;
    memcpy(ends.src_mac, from->mac, 6);
    memcpy(ends.dst_mac, to->mac, 6);
    ends.src_ip = from->ip;
    ends.dst_ip = to->ip;
    ends.src_port = t->port[c->self];
    ends.dst_port = t->port[server];
    uint8_t *data = frame->data;
    floem_udp_fill(data, STORM_WIRE_HEADER + STORM_TUPLE_BYTES, &ends, 0);
    wire_header(t, data + FLOEM_UDP_FRAME_LEN, STORM_WIRE_DATA, server, seq, 0);
    memcpy(data + FLOEM_UDP_FRAME_LEN + STORM_WIRE_HEADER, tuple, STORM_TUPLE_BYTES);
    return 1;
}

int storm_dp_transmit_next(struct storm_transport *t, uint8_t **data, uint32_t *len, void **buffer)
{
    floem_packet_t f;
    floem_packet_t *frame = &f;
    const struct storm_dp_config *c = t->config;
    for (int s = 0; s < c->servers; s++) {
        struct storm_peer *p = &t->peer[s];
        if (s == c->self)
            continue;
        uint32_t mask = c->window - 1;
        if (t->now_ns < p->hold_ns)
            continue;
        if (p->resend != p->next) {             /* going back N */
            if (!data_frame(t, s, p->resend, p->sent[p->resend & mask], frame))
                return 0;
            p->resend++;
            p->resent++;
            *data = frame->data, *len = frame->len, *buffer = frame->buffer;
            return 1;
        }
        uint32_t acked = __atomic_load_n(&p->acked, __ATOMIC_ACQUIRE);
        const uint8_t *tuple;
        if (p->next - acked >= p->cwnd || (tuple = backlog_peek(t, p)) == NULL)
            continue;
        if (!data_frame(t, s, p->next, tuple, frame))
            return 0;
        memcpy(p->sent[p->next & mask], tuple, STORM_TUPLE_BYTES);
        backlog_pop(p);
        if (p->next == acked)                   /* the timer starts with the first in flight */
            p->progress_ns = t->now_ns;
        __atomic_store_n(&p->next, p->next + 1, __ATOMIC_RELEASE);
        p->resend = p->next;
        p->sent_tuples++;
        *data = frame->data, *len = frame->len, *buffer = frame->buffer;
        return 1;
    }
    return 0;
}

const uint8_t *storm_dp_local_peek(struct storm_transport *t)
{
    return backlog_peek(t, &t->peer[t->config->self]);
}

void storm_dp_local_pop(struct storm_transport *t)
{
    struct storm_peer *p = &t->peer[t->config->self];
    backlog_pop(p);
    p->delivered++;
}

void storm_dp_queue_full(void)
{
    queue_full = 1;
}

int storm_dp_queue_refused(void)
{
    int full = queue_full;
    queue_full = 0;
    return full;
}

int storm_dp_lose(struct storm_transport *t)
{
    const struct storm_dp_config *c = t->config;
    uint64_t n = __atomic_add_fetch(&t->sent_datagrams, 1, __ATOMIC_RELAXED);
    int lose = c->drop_every != 0 && n % c->drop_every == 0;
    if (c->drop_permille != 0) {                /* xorshift64, shared: a race only reorders */
        uint64_t x = __atomic_load_n(&t->random, __ATOMIC_RELAXED);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        __atomic_store_n(&t->random, x, __ATOMIC_RELAXED);
        lose |= x % 1000 < c->drop_permille;
    }
    if (lose)
        __atomic_add_fetch(&t->lost, 1, __ATOMIC_RELAXED);
    return lose;
}

/* At exit with FLOEM_REPORT set (floem run --report): the counters, a line per connection. */
static void report(void)
{
    const struct storm_transport *t = transport;
    const struct storm_dp_config *c = t->config;
    for (int s = 0; s < c->servers; s++) {
        const struct storm_peer *p = &t->peer[s];
        if (s == c->self)
            fprintf(stderr, "storm: server %d local: delivered %llu, backlog %llu\n", s,
                    (unsigned long long)p->delivered, (unsigned long long)(p->tail - p->head));
        else
            fprintf(stderr, "storm: server %d -> %d: sent %llu, resent %llu, timeouts %llu, "
                    "fast resends %llu, busy %llu, window %u, backlog %llu; received %llu, refused %llu, "
                    "out of order %llu, acks %llu\n", c->self, s, (unsigned long long)p->sent_tuples,
                    (unsigned long long)p->resent, (unsigned long long)p->timeouts,
                    (unsigned long long)p->fast_resends, (unsigned long long)p->busy_waits, p->cwnd,
                    (unsigned long long)(p->tail - p->head), (unsigned long long)p->delivered,
                    (unsigned long long)p->refused, (unsigned long long)p->out_of_order,
                    (unsigned long long)p->acks);
    }
    fprintf(stderr, "storm: server %d: datagrams sent %llu, lost on purpose %llu\n", c->self,
            (unsigned long long)t->sent_datagrams, (unsigned long long)t->lost);
}
