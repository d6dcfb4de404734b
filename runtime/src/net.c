/* Packet I/O common to every backend: the floem/net.h API over floem/net_backend.h.
 *
 * Compiled only when the build chose a backend (FLOEM_NET_UDP, FLOEM_NET_TCP,
 * FLOEM_NET_PCAP, FLOEM_NET_DPDK or FLOEM_NET_XDP). Thread i uses queue
 * i % floem_net_queues(); when threads outnumber queues, a queue's lock serialises its
 * receive bursts and sends.
 * Transmitted frames are staged per thread: inside a receive burst (between
 * floem_net_rx and floem_net_flush, as FromNet does) they go out together at the
 * flush or every FLOEM_NET_TX_BURST frames; outside one (ToNet in a segment fed
 * by a queue) each goes out at once, so no frame waits for a flush that never
 * comes.
 *
 * Orders over datagrams (udp, pcap, xdp): the first frame made before a received one starts an
 * order of that datagram's frames, kept in the pool buffers' order places (the group in the
 * place of the buffer it started with, which stays its tail). A frame of an order that is
 * sent or given back is done; the frames at its head that are done go out in their place
 * among the frames staged beside them (so a thread's frames keep the order it staged them
 * in), and, while frames of the order are still to come, before the order's lock is
 * released, so that two threads finishing frames of one order send them in order.
 * The tcp backend keeps its connections' orders itself (net_tcp.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#if defined(FLOEM_NET_UDP) + defined(FLOEM_NET_TCP) + defined(FLOEM_NET_PCAP) \
    + defined(FLOEM_NET_DPDK) + defined(FLOEM_NET_XDP) > 1
#error "define at most one of FLOEM_NET_UDP, FLOEM_NET_TCP, FLOEM_NET_PCAP, FLOEM_NET_DPDK, FLOEM_NET_XDP"
#endif

#if defined(FLOEM_NET_UDP) || defined(FLOEM_NET_TCP) || defined(FLOEM_NET_PCAP) \
    || defined(FLOEM_NET_DPDK) || defined(FLOEM_NET_XDP)

#include "floem/net_backend.h"
#include "floem/runtime.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

floem_net_queue_t floem_net_queue[FLOEM_NET_MAX_QUEUES];
uint64_t floem_net_alloc_failed;
static uint64_t freed;
static unsigned n_queues;
#if defined(FLOEM_NET_UDP) || defined(FLOEM_NET_PCAP) || defined(FLOEM_NET_XDP)
/* Frames in an order now (send_staged looks for them only when there are). */
static unsigned ordered;
/* floem_net_alloc_before starts orders (floem_net_keep_orders). */
static bool keep_orders = true;
#endif

_Thread_local floem_net_staged_t floem_net_staged = {.taken = UINT_MAX};

static void lock(unsigned q)
{
    int *l = &floem_net_queue[q].lock;
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED))
            floem_cpu_relax();
}

static void unlock(unsigned q)
{
    __atomic_store_n(&floem_net_queue[q].lock, 0, __ATOMIC_RELEASE);
}

void floem_net_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "floem: net %s: ", floem_backend_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

uint16_t floem_net_port_setting(const char *protocol)
{
    const char *s = getenv("FLOEM_NET_PORT");
    if (s == NULL || s[0] == '\0')
        return FLOEM_NET_DEFAULT_PORT;
    char *end;
    long p = strtol(s, &end, 10);
    if (*end != '\0' || p < 1 || p > 65535)
        floem_net_fail("FLOEM_NET_PORT=%s is not a %s port", s, protocol);
    return (uint16_t)p;
}

uint32_t floem_net_addr_setting(uint32_t fallback)
{
    const char *s = getenv("FLOEM_NET_ADDR");
    struct in_addr a = {fallback};
    if (s != NULL && s[0] != '\0' && inet_pton(AF_INET, s, &a) != 1)
        floem_net_fail("FLOEM_NET_ADDR=%s is not an IPv4 address", s);
    return a.s_addr;
}

static unsigned queues_wanted(void)
{
    const char *s = getenv("FLOEM_NET_QUEUES");
    if (s == NULL || s[0] == '\0')
        return 1;
    char *end;
    long n = strtol(s, &end, 10);
    if (*end != '\0' || n < 1 || n > FLOEM_NET_MAX_QUEUES)
        floem_net_fail("FLOEM_NET_QUEUES=%s: need a number from 1 to %d", s, FLOEM_NET_MAX_QUEUES);
    return (unsigned)n;
}

void floem_net_init(void)
{
    if (n_queues != 0)
        return;
    memset(floem_net_queue, 0, sizeof floem_net_queue);
    floem_net_alloc_failed = 0;
    freed = 0;
    n_queues = floem_backend_init(queues_wanted());
}

void floem_net_report(void)
{
    floem_net_stats_t st;
    floem_net_stats(&st);
    fprintf(stderr, "floem: net %s: queues %u, rx %llu, tx %llu, rx dropped %llu, "
            "tx dropped %llu, alloc failed %llu, freed %llu\n", floem_backend_name, n_queues,
            (unsigned long long)st.rx, (unsigned long long)st.tx,
            (unsigned long long)st.rx_dropped, (unsigned long long)st.tx_dropped,
            (unsigned long long)st.alloc_failed,
            (unsigned long long)__atomic_load_n(&freed, __ATOMIC_RELAXED));
    floem_backend_report(stderr);
}

void floem_net_finalize(void)
{
    if (n_queues == 0)
        return;
    if (floem_net_staged.n > 0)
        floem_net_flush(floem_net_staged.queue);
    if (getenv("FLOEM_REPORT") != NULL)
        floem_net_report();
    floem_backend_finalize();
    n_queues = 0;
}

unsigned floem_net_queues(void)
{
    return n_queues > 0 ? n_queues : 1;
}

/* Up to `max` frames of `queue` (reduced), with its lock held. */
static unsigned take(unsigned queue, floem_net_frame_t *frames, unsigned max)
{
    unsigned n = 0;
    lock(queue);
    while (n < max) {
        unsigned want = max - n < FLOEM_NET_RX_BURST ? max - n : FLOEM_NET_RX_BURST;
        unsigned got = floem_backend_rx(queue, frames + n, want);
        n += got;
        if (got < want)
            break;
    }
    floem_net_queue[queue].rx += n;
    unlock(queue);
    return n;
}

static unsigned receive(unsigned queue, floem_net_frame_t *frames, unsigned max)
{
    floem_net_staged.in_burst = true;
    if (n_queues == 0)
        return 0;
    queue %= n_queues;
    floem_count_pause();                /* packet I/O: the NIC's hardware, not its cores */
    unsigned n = take(queue, frames, max);
    /* Nothing: the backend waits (if it does) without the queue's lock, which a thread
     * sending on the queue takes; then what woke it is taken at once. */
    if (n == 0 && floem_backend_rx_wait(queue))
        n = take(queue, frames, max);
    floem_count_resume();
    floem_thread_received += n;
    return n;
}

unsigned floem_net_rx(unsigned queue, floem_net_frame_t *frames, unsigned max)
{
    return receive(queue, frames, max);
}

unsigned floem_net_rx_framed(unsigned queue, floem_net_frame_t *frames, unsigned max,
                             const floem_framer_t *framer)
{
#ifdef FLOEM_NET_TCP
    floem_tcp_framer(framer);
#else
    (void)framer;
#endif
    return receive(queue, frames, max);
}

bool floem_net_rx_done(void)
{
    return n_queues > 0 && floem_backend_rx_done();
}

#if defined(FLOEM_NET_UDP) || defined(FLOEM_NET_PCAP) || defined(FLOEM_NET_XDP)
/* Send `n` frames on `queue` now (they are in order). */
static void send_now(unsigned queue, floem_net_frame_t *frames, unsigned n)
{
    lock(queue);
    floem_backend_send(queue, frames, n);
    unlock(queue);
    floem_thread_sent += n;
}

/* Frames to send, in order, each run of one queue together. */
struct batch {
    floem_net_frame_t frames[FLOEM_NET_TX_BURST];
    unsigned n, queue;
};

static void batch_send(struct batch *b)
{
    if (b->n > 0)
        send_now(b->queue, b->frames, b->n);
    b->n = 0;
}

static void batch_add(struct batch *b, const floem_net_frame_t *frame, unsigned queue)
{
    if (b->n > 0 && (b->n == FLOEM_NET_TX_BURST || b->queue != queue))
        batch_send(b);
    b->queue = queue;
    b->frames[b->n++] = *frame;
}

/* Frame `o` of an order is done (`state`): the frames at the order's head that are done join
 * `b`, in order, and those given back are given back. When frames of the order are still to
 * come, `b` goes out before the order's lock is released, so that a thread finishing a later
 * frame sends it after these; when the order is whole, nothing of it can follow, and `b` may
 * wait for more frames (the caller sends it). */
static void order_done(floem_order_t *o, uint8_t state, const floem_packet_t *pkt,
                       unsigned queue, struct batch *b)
{
    floem_order_group_t *g = o->group;
    floem_order_lock(g);
    o->state = state;
    o->pkt = *pkt;
    o->queue = queue;
    bool popped = false;
    for (floem_order_t *done; (done = floem_order_pop(g)) != NULL;) {
        __atomic_fetch_sub(&ordered, 1, __ATOMIC_RELAXED);
        if (done->state != FLOEM_ORDER_SENT) {
            __atomic_fetch_add(&freed, 1, __ATOMIC_RELAXED);
            floem_backend_free(&done->pkt);
            continue;
        }
        batch_add(b, &done->pkt, done->queue);
        popped = true;
    }
    if (popped && g->head != NULL)
        batch_send(b);
    floem_order_unlock(g);
}

/* The frame of `buffer`'s place in an order, or NULL when it is in none. */
static floem_order_t *in_order(void *buffer)
{
    if (__atomic_load_n(&ordered, __ATOMIC_RELAXED) == 0)
        return NULL;
    floem_order_t *o = floem_pool_order(buffer);
    return o != NULL && o->group != NULL ? o : NULL;
}
#endif

static void send_staged(void)
{
    floem_net_staged_t *s = &floem_net_staged;
    floem_count_pause();
#if defined(FLOEM_NET_UDP) || defined(FLOEM_NET_PCAP) || defined(FLOEM_NET_XDP)
    if (__atomic_load_n(&ordered, __ATOMIC_RELAXED) != 0) {
        struct batch b = {.n = 0};          /* the staged frames in their order */
        for (unsigned i = 0; i < s->n; i++) {
            floem_order_t *o = in_order(s->frames[i].buffer);
            if (o != NULL)
                order_done(o, FLOEM_ORDER_SENT, &s->frames[i], s->queue, &b);
            else
                batch_add(&b, &s->frames[i], s->queue);
        }
        batch_send(&b);
        floem_count_resume();
        s->n = 0;
        return;
    }
#endif
    lock(s->queue);
    floem_backend_send(s->queue, s->frames, s->n);
    unlock(s->queue);
    floem_count_resume();
    floem_thread_sent += s->n;
    s->n = 0;
}

void floem_net_tx_staging(unsigned queue, void *data, uint32_t len, void *buffer)
{
    floem_net_staged_t *s = &floem_net_staged;
    floem_packet_t pkt = {data, len, buffer};
    if (n_queues == 0) {
        floem_net_free(&pkt);
        return;
    }
    unsigned taken = queue;
    if (queue >= n_queues)          /* callers pass a queue they reduced already: no division */
        queue %= n_queues;
    floem_net_frame_t frame;
    if (!floem_backend_frame(&pkt, &frame)) {
        lock(queue);
        floem_net_queue[queue].tx_dropped++;
        unlock(queue);
        return;
    }
    if (s->n > 0 && (s->queue != queue || s->n == FLOEM_NET_TX_BURST))
        send_staged();
    s->queue = queue;
    s->frames[s->n++] = frame;
    if (s->in_burst)
        s->taken = taken;           /* the burst's next frames for it: floem_net_tx, inline */
    else
        send_staged();
}

void floem_net_flush(unsigned queue)
{
    (void)queue;
    if (floem_net_staged.n > 0)
        send_staged();
    floem_net_staged.in_burst = false;
    floem_net_staged.taken = UINT_MAX;
}

bool floem_net_alloc(uint32_t len, floem_packet_t *pkt)
{
    floem_count_pause();
    bool ok = n_queues > 0 && floem_backend_alloc(len, pkt);
    floem_count_resume();
    if (ok)
        return true;
    __atomic_fetch_add(&floem_net_alloc_failed, 1, __ATOMIC_RELAXED);
    return false;
}

void floem_net_free(floem_packet_t *pkt)
{
    if (n_queues == 0)
        return;
    floem_count_pause();
#if defined(FLOEM_NET_UDP) || defined(FLOEM_NET_PCAP) || defined(FLOEM_NET_XDP)
    floem_order_t *o = in_order(pkt->buffer);
    if (o != NULL) {
        struct batch b = {.n = 0};
        order_done(o, FLOEM_ORDER_FREED, pkt, 0, &b);
        batch_send(&b);
        floem_count_resume();
        return;
    }
#endif
    __atomic_fetch_add(&freed, 1, __ATOMIC_RELAXED);
    floem_backend_free(pkt);
    floem_count_resume();
}

void floem_net_close(floem_packet_t *pkt)
{
#ifdef FLOEM_NET_TCP
    if (n_queues == 0)
        return;
    __atomic_fetch_add(&freed, 1, __ATOMIC_RELAXED);
    floem_count_pause();
    floem_tcp_close(pkt);
    floem_count_resume();
#else
    floem_net_free(pkt);
#endif
}

#if defined(FLOEM_NET_UDP) || defined(FLOEM_NET_PCAP) || defined(FLOEM_NET_XDP)
/* floem_net_alloc_before keeping the order of a datagram's frames (out of line: a program
 * whose threads keep their orders themselves does not pay for its registers). */
static __attribute__((noinline)) bool alloc_in_order(const floem_packet_t *next, uint32_t len,
                                                     floem_packet_t *pkt)
{
    if (!floem_net_alloc(len, pkt))
        return false;
    floem_order_t *before = floem_pool_order(next->buffer), *o = floem_pool_order(pkt->buffer);
    if (before == NULL)
        return true;                /* not a frame of the network: no order to keep */
    /* `next` is pending, so only this thread sets its group: one made here starts with it, in
     * the group place of its own buffer, and it stays the order's tail (frames go before).
     * The group is set up under its lock: the order it held last may still be finishing
     * (its tail, this buffer, was given back under that lock). */
    floem_order_group_t *g = before->group;
    if (g == NULL) {
        g = floem_pool_group(next->buffer);
        floem_order_lock(g);
        g->head = g->tail = NULL;
        g->owner = NULL;
        floem_order_append(g, before);
        __atomic_fetch_add(&ordered, 1, __ATOMIC_RELAXED);
    } else {
        floem_order_lock(g);
    }
    floem_order_insert_before(before, o);
    __atomic_fetch_add(&ordered, 1, __ATOMIC_RELAXED);
    floem_order_unlock(g);
    return true;
}
#endif

bool floem_net_alloc_before(const floem_packet_t *next, uint32_t len, floem_packet_t *pkt)
{
#if defined(FLOEM_NET_TCP)
    floem_count_pause();
    bool ok = n_queues > 0 && floem_tcp_alloc_before(next, len, pkt);
    floem_count_resume();
    if (!ok)
        __atomic_fetch_add(&floem_net_alloc_failed, 1, __ATOMIC_RELAXED);
    return ok;
#elif defined(FLOEM_NET_UDP) || defined(FLOEM_NET_PCAP) || defined(FLOEM_NET_XDP)
    if (!keep_orders)
        return floem_net_alloc(len, pkt);   /* each thread sends its frames in order itself */
    return alloc_in_order(next, len, pkt);
#else
    (void)next;
    return floem_net_alloc(len, pkt);
#endif
}

void floem_net_keep_orders(bool keep)
{
#if defined(FLOEM_NET_UDP) || defined(FLOEM_NET_PCAP) || defined(FLOEM_NET_XDP)
    keep_orders = keep;
#else
    (void)keep;
#endif
}

void floem_net_stats(floem_net_stats_t *out)
{
    memset(out, 0, sizeof *out);
    for (unsigned q = 0; q < FLOEM_NET_MAX_QUEUES; q++) {
        lock(q);
        out->rx += floem_net_queue[q].rx;
        out->tx += floem_net_queue[q].tx;
        out->rx_dropped += floem_net_queue[q].rx_dropped;
        out->tx_dropped += floem_net_queue[q].tx_dropped;
        unlock(q);
    }
    out->alloc_failed = __atomic_load_n(&floem_net_alloc_failed, __ATOMIC_RELAXED);
#ifdef FLOEM_NET_TCP
    floem_tcp_stats(out);
#endif
}

#if defined(FLOEM_NET_UDP) || defined(FLOEM_NET_PCAP) || defined(FLOEM_NET_TCP) || \
    defined(FLOEM_NET_XDP)
/* The buffer pool of the udp, tcp, pcap and xdp backends: one page-aligned allocation (xdp
 * registers it as its UMEM), a stack of free buffers, and each buffer's place in an order
 * (and the group of an order it started). */

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define ADDRESSABLE(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define UNADDRESSABLE(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#else
#define ADDRESSABLE(p, n) ((void)(p), (void)(n))
#define UNADDRESSABLE(p, n) ((void)(p), (void)(n))
#endif

static unsigned char *pool_memory;
static void *pool_free[FLOEM_NET_POOL_BUFFERS];
static unsigned pool_top;
static int pool_lock;
static floem_order_t pool_order[FLOEM_NET_POOL_BUFFERS];
static floem_order_group_t pool_group[FLOEM_NET_POOL_BUFFERS];

static void pool_acquire(void)
{
    while (__atomic_exchange_n(&pool_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&pool_lock, __ATOMIC_RELAXED))
            ;
}

static void pool_release(void)
{
    __atomic_store_n(&pool_lock, 0, __ATOMIC_RELEASE);
}

void floem_pool_init(void)
{
    pool_memory = aligned_alloc(4096, (size_t)FLOEM_NET_POOL_BUFFERS * FLOEM_NET_BUFFER_BYTES);
    if (pool_memory == NULL)
        floem_net_fail("no memory for %d frame buffers", FLOEM_NET_POOL_BUFFERS);
    memset(pool_order, 0, sizeof pool_order);
    for (unsigned i = 0; i < FLOEM_NET_POOL_BUFFERS; i++)    /* the first buffer on top */
        pool_free[i] = pool_memory + (size_t)(FLOEM_NET_POOL_BUFFERS - 1 - i) *
                                         FLOEM_NET_BUFFER_BYTES;
    pool_top = FLOEM_NET_POOL_BUFFERS;
}

void floem_pool_destroy(void)
{
    free(pool_memory);
    pool_memory = NULL;
    pool_top = 0;
}

unsigned floem_pool_get(void **bufs, unsigned n)
{
    pool_acquire();
    if (n > pool_top)
        n = pool_top;
    for (unsigned i = 0; i < n; i++)
        bufs[i] = pool_free[--pool_top];
    pool_release();
    for (unsigned i = 0; i < n; i++)
        ADDRESSABLE(bufs[i], FLOEM_NET_BUFFER_BYTES);
    return n;
}

void floem_pool_frame(void *buffer, uint32_t len)
{
    UNADDRESSABLE((unsigned char *)buffer + len, FLOEM_NET_BUFFER_BYTES - len);
}

void floem_pool_frame_at(void *buffer, void *data, uint32_t len)
{
    unsigned char *b = buffer, *d = data;
    UNADDRESSABLE(b, (size_t)(d - b));
    UNADDRESSABLE(d + len, FLOEM_NET_BUFFER_BYTES - (size_t)(d - b) - len);
}

unsigned char *floem_pool_area(void)
{
    return pool_memory;
}

static bool pool_buffer(const void *buf)
{
    uintptr_t p = (uintptr_t)buf, base = (uintptr_t)pool_memory;
    return pool_memory != NULL && p >= base &&
           p < base + (size_t)FLOEM_NET_POOL_BUFFERS * FLOEM_NET_BUFFER_BYTES &&
           (p - base) % FLOEM_NET_BUFFER_BYTES == 0;
}

void floem_pool_put(void *const *bufs, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (!pool_buffer(bufs[i])) {
            fprintf(stderr, "floem: net %s: %p is not a frame buffer the network gave out\n",
                    floem_backend_name, bufs[i]);
            abort();
        }
    for (unsigned i = 0; i < n; i++)
        ADDRESSABLE(bufs[i], FLOEM_NET_BUFFER_BYTES);
    pool_acquire();
    if (pool_top + n > FLOEM_NET_POOL_BUFFERS) {
        pool_release();
        fprintf(stderr, "floem: net %s: a frame buffer was given back twice\n",
                floem_backend_name);
        abort();
    }
    for (unsigned i = 0; i < n; i++)
        pool_free[pool_top++] = bufs[i];
    pool_release();
}

floem_order_t *floem_pool_order(const void *buffer)
{
    if (!pool_buffer(buffer))
        return NULL;
    return &pool_order[((uintptr_t)buffer - (uintptr_t)pool_memory) / FLOEM_NET_BUFFER_BYTES];
}

floem_order_group_t *floem_pool_group(const void *buffer)
{
    if (!pool_buffer(buffer))
        return NULL;
    return &pool_group[((uintptr_t)buffer - (uintptr_t)pool_memory) / FLOEM_NET_BUFFER_BYTES];
}

bool floem_pool_holds(const void *buffer, const void *data, uint32_t len)
{
    uintptr_t b = (uintptr_t)buffer, d = (uintptr_t)data;
    return pool_buffer(buffer) && d >= b && len <= FLOEM_NET_BUFFER_BYTES &&
           d - b <= FLOEM_NET_BUFFER_BYTES - len;
}

#endif

#if defined(FLOEM_NET_UDP) || defined(FLOEM_NET_PCAP) || defined(FLOEM_NET_XDP)
/* A udp, pcap or xdp packet is its own frame; their floem_backend_send checks that each frame
 * is inside its buffer. */
bool floem_backend_frame(const floem_packet_t *pkt, floem_net_frame_t *frame)
{
    return floem_net_frame_as_is(pkt, frame);
}

/* The udp, pcap and xdp backends allocate and free frames in the pool. */
bool floem_backend_alloc(uint32_t len, floem_packet_t *pkt)
{
    void *buf;
    if (len > FLOEM_NET_BUFFER_BYTES || floem_pool_get(&buf, 1) == 0)
        return false;
    floem_pool_frame(buf, len);
    *pkt = (floem_packet_t){buf, len, buf};
    return true;
}

void floem_backend_free(floem_packet_t *pkt)
{
    floem_pool_put(&pkt->buffer, 1);
}
#endif

#endif
