/* Floem packet I/O, runtime-internal: what net.c shares with the backend files.
 *
 * Not for element code (elements use floem/net.h). net.c implements the
 * public API once for every backend: it reads FLOEM_NET_QUEUES, serialises
 * the threads that share a queue, stages transmitted frames per thread, and
 * counts and reports. Exactly one backend file (net_udp.c, net_pcap.c, net_dpdk.c
 * or net_xdp.c, chosen by FLOEM_NET_UDP / FLOEM_NET_PCAP / FLOEM_NET_DPDK / FLOEM_NET_XDP)
 * implements the floem_backend_* functions below; the others compile to
 * nothing. net.c calls floem_backend_rx and floem_backend_send with the
 * queue's lock held, so a backend sees one caller per queue at a time, and
 * floem_backend_rx_wait without it, so that a thread sending on a queue never
 * spins while a receiving one sleeps; floem_backend_alloc and floem_backend_free
 * may be called from any thread.
 */
#ifndef FLOEM_NET_BACKEND_H
#define FLOEM_NET_BACKEND_H

#include "floem/net.h"
#include "floem/runtime.h"

#include <poll.h>
#include <stdio.h>

/* Most queues a port may have (FLOEM_NET_QUEUES is clamped to it). */
#define FLOEM_NET_MAX_QUEUES 64
/* Frames one backend receive call returns at most (floem_net_rx loops for more). */
#define FLOEM_NET_RX_BURST 64

/* One queue: its lock and counters (the counters change only with the lock held). */
typedef struct {
    _Alignas(64) int lock;
    uint64_t rx, tx, rx_dropped, tx_dropped;
} floem_net_queue_t;

extern floem_net_queue_t floem_net_queue[FLOEM_NET_MAX_QUEUES];
/* Allocations that failed (NetAlloc, or a receive that found no free buffer); atomic. */
extern uint64_t floem_net_alloc_failed;

/* Open the port with up to `wanted` queues; returns how many it has (>= 1). */
unsigned floem_backend_init(unsigned wanted);
void floem_backend_finalize(void);
/* Receive up to `max` (<= FLOEM_NET_RX_BURST) frames without blocking. */
unsigned floem_backend_rx(unsigned queue, floem_net_frame_t *frames, unsigned max);
/* After a receive that found nothing, without the queue's lock: when the backend waits at
 * all (a kernel socket, after some empty calls in a row), wait up to floem_backend_wait_ms()
 * for the queue to have something to receive. Returns whether it may have now. */
bool floem_backend_rx_wait(unsigned queue);
bool floem_backend_rx_done(void);
/* Empty receives in a row before a receive waits, in a thread that manages a sync layer
 * between its turns (floem_thread_manages): its entries would wait with it. */
#define FLOEM_BACKEND_MANAGING_SPINS 256
/* For floem_backend_rx_wait: one more empty receive of a queue (`empty_calls`, atomic, which
 * the backend sets to 0 when a receive finds something); true, and the count started again,
 * once it is the `spins`-th in a row (the FLOEM_BACKEND_MANAGING_SPINS-th in a thread that
 * manages a sync layer): the time to wait. */
static inline bool floem_backend_idle_due(unsigned *empty_calls, unsigned spins)
{
    if (floem_thread_manages)
        spins = FLOEM_BACKEND_MANAGING_SPINS;
    if (__atomic_add_fetch(empty_calls, 1, __ATOMIC_RELAXED) < spins)
        return false;
    __atomic_store_n(empty_calls, 0, __ATOMIC_RELAXED);
    return true;
}
/* How long a receive that found nothing waits, in milliseconds: 1 in a thread that manages a
 * sync layer between its turns (floem_thread_manages), FLOEM_BACKEND_WAIT_MS in any other.
 * Longer than a scheduler tick (4 ms at HZ=250, 10 ms at HZ=100) on purpose: a wait shorter
 * than the tick arms the core's earliest timer, so every wait and every wake before it ends
 * reprograms the timer device, which in a virtual machine is a write that exits to the
 * hypervisor, twice a request for a server that sleeps between requests (memcached's waits
 * end at its clock event, a second away). A thread sees that it is to stop at most this late;
 * what else needs it wakes it (the tcp backend's connections to attend). */
#define FLOEM_BACKEND_WAIT_MS 20
static inline int floem_backend_wait_ms(void)
{
    return floem_thread_manages ? 1 : FLOEM_BACKEND_WAIT_MS;
}
/* Wait up to floem_backend_wait_ms() for `fd` to be readable, the time counted as slept;
 * whether it is. A thread that manages no sync layer has waited here, so its idle back-off
 * starts again (spins before any sleep of its own). Inline: only the backends that wait link
 * the thread statistics it counts in. */
static inline bool floem_backend_wait_readable(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    uint64_t start = floem_now_ns();
    int ready = poll(&pfd, 1, floem_backend_wait_ms());
    floem_thread_slept(floem_now_ns() - start);
    if (!floem_thread_manages)
        floem_idle_reset();
    return ready > 0;
}
/* The frame that sends `pkt` (floem_net_tx's way when its inline floem_net_frame_as_is does
 * not take it; DPDK: the mbuf, re-pointed at the packet's bytes when an element moved its
 * data or changed its length); false when that cannot be done: the buffer is given back and
 * the caller counts a tx drop. */
bool floem_backend_frame(const floem_packet_t *pkt, floem_net_frame_t *frame);
/* Send `n` frames, each counted as tx or tx_dropped; every buffer is the backend's again. */
void floem_backend_send(unsigned queue, floem_net_frame_t *frames, unsigned n);
bool floem_backend_alloc(uint32_t len, floem_packet_t *pkt);
void floem_backend_free(floem_packet_t *pkt);
/* Backend-specific lines of the FLOEM_REPORT report (may print nothing). */
void floem_backend_report(FILE *out);
/* The backend's name in messages: "udp", "pcap", "dpdk" or "xdp". */
extern const char floem_backend_name[];

/* What the backends that synthesise headers share: the Internet checksum's running sum of
 * `len` bytes (big-endian 16-bit words, read 8 bytes a turn; at most 0xffff, its carries
 * folded in, so that a caller may add a few more words), folded into a checksum, and
 * big-endian fields. */
static inline uint32_t floem_net_sum(uint32_t sum, const uint8_t *p, size_t len)
{
    uint64_t acc = sum;
    for (; len >= 8; p += 8, len -= 8)      /* two big-endian 32-bit words a turn */
        acc += ((uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 | (uint64_t)p[2] << 8 | p[3])
               + ((uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 | (uint64_t)p[6] << 8 | p[7]);
    for (; len >= 2; p += 2, len -= 2)
        acc += (uint32_t)p[0] << 8 | p[1];
    if (len)
        acc += (uint32_t)p[0] << 8;
    while (acc >> 16)                       /* end-around carries: the sum fits 16 bits */
        acc = (acc & 0xffff) + (acc >> 16);
    return (uint32_t)acc;
}

static inline uint16_t floem_net_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static inline void floem_net_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline uint16_t floem_net_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* Print "floem: net <backend>: <message>" and exit with status 1 (configuration errors). */
_Noreturn void floem_net_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The backends' settings (udp, tcp, xdp): the port to serve, FLOEM_NET_PORT (default
 * FLOEM_NET_DEFAULT_PORT; `protocol` names its kind in the error), and the IPv4 address,
 * FLOEM_NET_ADDR (`fallback` when unset), in network byte order. */
#define FLOEM_NET_DEFAULT_PORT 9000
uint16_t floem_net_port_setting(const char *protocol);
uint32_t floem_net_addr_setting(uint32_t fallback);

/* ---- Orders of frames (floem_net_alloc_before; the messages of a TCP connection) ----------
 *
 * An order is a list of frames, oldest first. A frame joins it when it is received (a TCP
 * message: at the tail) or made before another (floem_net_alloc_before), and is done when it
 * is sent or given back; the frames at the head that are done leave it, in order, and each
 * sent one goes out then. The list and its frames' states change only with the order's lock
 * held. */
enum floem_order_state {
    FLOEM_ORDER_PENDING,            /* in the program: not sent nor given back yet */
    FLOEM_ORDER_SENT,               /* sent: goes out in its turn */
    FLOEM_ORDER_FREED,              /* given back: answers with nothing */
    FLOEM_ORDER_CLOSE,              /* given back, and the connection closes in its turn */
};

typedef struct floem_order floem_order_t;
typedef struct {
    floem_order_t *head, *tail;
    void *owner;                    /* tcp: the connection; NULL: a datagram's frames */
    int lock;
} floem_order_group_t;

/* A frame's place in an order (a frame in no order has group NULL). */
struct floem_order {
    floem_order_t *prev, *next;
    floem_order_group_t *group;
    floem_packet_t pkt;             /* the frame as sent, once SENT */
    unsigned queue;                 /* the queue it was sent on */
    uint8_t state;                  /* enum floem_order_state */
};

static inline void floem_order_lock(floem_order_group_t *g)
{
    while (__atomic_exchange_n(&g->lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&g->lock, __ATOMIC_RELAXED))
            floem_cpu_relax();
}

static inline void floem_order_unlock(floem_order_group_t *g)
{
    __atomic_store_n(&g->lock, 0, __ATOMIC_RELEASE);
}

/* Put `o` at the tail of `g` (the group's lock held). */
static inline void floem_order_append(floem_order_group_t *g, floem_order_t *o)
{
    o->group = g;
    o->state = FLOEM_ORDER_PENDING;
    o->next = NULL;
    o->prev = g->tail;
    if (g->tail != NULL)
        g->tail->next = o;
    else
        g->head = o;
    g->tail = o;
}

/* Put `o` just before `next`, which is in an order (its lock held). */
static inline void floem_order_insert_before(floem_order_t *next, floem_order_t *o)
{
    floem_order_group_t *g = next->group;
    o->group = g;
    o->state = FLOEM_ORDER_PENDING;
    o->next = next;
    o->prev = next->prev;
    if (next->prev != NULL)
        next->prev->next = o;
    else
        g->head = o;
    next->prev = o;
}

/* The head of `g` when it is done, taken out of the order (the lock held); NULL when the
 * head is pending or the order empty. */
static inline floem_order_t *floem_order_pop(floem_order_group_t *g)
{
    floem_order_t *o = g->head;
    if (o == NULL || o->state == FLOEM_ORDER_PENDING)
        return NULL;
    g->head = o->next;
    if (g->head != NULL)
        g->head->prev = NULL;
    else
        g->tail = NULL;
    o->group = NULL;
    o->next = o->prev = NULL;
    return o;
}

/* tcp (net_tcp.c): the frame of a new message's place, and the ordered operations net.c
 * leaves to it (every frame of a connection is in its order). */
floem_order_t *floem_tcp_order(const void *buffer);
bool floem_tcp_alloc_before(const floem_packet_t *next, uint32_t len, floem_packet_t *pkt);
void floem_tcp_close(floem_packet_t *pkt);
void floem_tcp_framer(const floem_framer_t *framer);
void floem_tcp_stats(floem_net_stats_t *out);

/* Fixed-size frame buffers for the udp, tcp, pcap and xdp backends, shared by all threads
 * (one page-aligned area: the xdp backend's UMEM). */
#define FLOEM_NET_BUFFER_BYTES 2048
#define FLOEM_NET_POOL_BUFFERS 4096

void floem_pool_init(void);
void floem_pool_destroy(void);
/* Take up to `n` free buffers into `bufs`; returns how many. */
unsigned floem_pool_get(void **bufs, unsigned n);
/* Give buffers back; aborts with a message on a pointer the pool never gave. */
void floem_pool_put(void *const *bufs, unsigned n);
/* True when [data, data + len) lies inside pool buffer `buffer`. */
bool floem_pool_holds(const void *buffer, const void *data, uint32_t len);
/* The order place of pool buffer `buffer`, and the group of an order it starts (NULL for any
 * other pointer). */
floem_order_t *floem_pool_order(const void *buffer);
floem_order_group_t *floem_pool_group(const void *buffer);
/* Buffer `buffer` now holds a frame of `len` bytes at its start: under AddressSanitizer the
 * bytes past it become unaddressable until the buffer goes back to the pool, so an
 * element reading past a frame's end is caught. */
void floem_pool_frame(void *buffer, uint32_t len);
/* The same for a frame of `len` bytes at `data` inside buffer `buffer`. */
void floem_pool_frame_at(void *buffer, void *data, uint32_t len);
/* The pool's first byte (buffer i is FLOEM_NET_BUFFER_BYTES * i bytes further). */
unsigned char *floem_pool_area(void);

#endif
