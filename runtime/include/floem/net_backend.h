/* Floem packet I/O, runtime-internal: what net.c shares with the backend files.
 *
 * Not for element code (elements use floem/net.h). net.c implements the
 * public API once for every backend: it reads FLOEM_NET_QUEUES, serialises
 * the threads that share a queue, stages transmitted frames per thread, and
 * counts and reports. Exactly one backend file (net_udp.c, net_pcap.c, net_dpdk.c
 * or net_xdp.c, chosen by FLOEM_NET_UDP / FLOEM_NET_PCAP / FLOEM_NET_DPDK / FLOEM_NET_XDP)
 * implements the floem_backend_* functions below; the others compile to
 * nothing. net.c calls floem_backend_rx and floem_backend_send with the
 * queue's lock held, so a backend sees one caller per queue at a time;
 * floem_backend_alloc and floem_backend_free may be called from any thread.
 */
#ifndef FLOEM_NET_BACKEND_H
#define FLOEM_NET_BACKEND_H

#include "floem/net.h"

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
/* Receive up to `max` (<= FLOEM_NET_RX_BURST) frames without blocking for long. */
unsigned floem_backend_rx(unsigned queue, floem_net_frame_t *frames, unsigned max);
bool floem_backend_rx_done(void);
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

/* Print "floem: net <backend>: <message>" and exit with status 1 (configuration errors). */
_Noreturn void floem_net_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The UDP port a backend serves: FLOEM_NET_PORT, or FLOEM_NET_DEFAULT_PORT when unset. */
#define FLOEM_NET_DEFAULT_PORT 9000
uint16_t floem_net_setting_port(void);
/* FLOEM_NET_ADDR, an IPv4 address in network byte order, or `fallback` when unset. */
uint32_t floem_net_setting_addr(uint32_t fallback);

/* Fixed-size frame buffers for the udp, pcap and xdp backends, shared by all threads (one
 * page-aligned area: the xdp backend's UMEM). */
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
/* Buffer `buffer` now holds a frame of `len` bytes at its start: under AddressSanitizer the
 * bytes past it become unaddressable until the buffer goes back to the pool, so an
 * element reading past a frame's end is caught. */
void floem_pool_frame(void *buffer, uint32_t len);
/* The same for a frame of `len` bytes at `data` inside buffer `buffer`. */
void floem_pool_frame_at(void *buffer, void *data, uint32_t len);
/* The pool's first byte (buffer i is FLOEM_NET_BUFFER_BYTES * i bytes further). */
unsigned char *floem_pool_area(void);

#endif
