/* Floem packet I/O: the runtime under FromNet / ToNet / NetAlloc / NetFree.
 *
 * One backend is compiled in, chosen at build time with `--net` (the build
 * defines FLOEM_NET_UDP, FLOEM_NET_TCP, FLOEM_NET_PCAP, FLOEM_NET_DPDK or FLOEM_NET_XDP);
 * its run-time settings come from the environment, which `floem run` fills:
 *   FLOEM_NET_PORT   udp, tcp, xdp: the port to serve (default 9000)
 *   FLOEM_NET_ADDR   udp, tcp: the IPv4 address it is served on (default 127.0.0.1;
 *                    0.0.0.0: every address of the host); xdp: the only
 *                    destination address served (default: any)
 *   FLOEM_XDP_IFACE  xdp: the network interface whose frames to the port the
 *                    program reads from AF_XDP sockets
 *   FLOEM_PCAP_IN    pcap: the capture to replay (pcap or pcapng, Ethernet link type)
 *   FLOEM_PCAP_OUT   pcap: where transmitted frames are written (classic pcap)
 *   FLOEM_PCAP_LOOP  pcap: how many times to replay the capture (0: until stopped; default 1)
 *   FLOEM_PCAP_TIMING pcap: replay at the capture's timestamps, this many times faster
 *                    (1: its own pace); unset: as fast as frames are taken
 *   FLOEM_DPDK_EAL   dpdk: EAL arguments, split on spaces
 *   FLOEM_NET_QUEUES receive/transmit queues to open (default 1; at most the
 *                    number of threads polling them, see floem_net_queues)
 *   FLOEM_REPORT     print the counters at finalize
 *
 * Every backend hands elements whole Ethernet frames (Ethernet + IPv4 + UDP +
 * payload for the udp backend, which synthesises the headers around each
 * datagram and, on transmit, sends the payload to the frame's IPv4/UDP
 * destination; Ethernet + IPv4 + TCP + one message for the tcp backend, see
 * "Streams" below), so the same parsing elements run on every backend. The
 * process that runs the I/O elements owns the port: the host process, or the
 * NIC process when the elements are in NIC segments.
 *
 * The backends live in runtime/src/net.c (what all share) and net_udp.c,
 * net_pcap.c, net_dpdk.c, net_xdp.c (each compiled to nothing unless chosen);
 * their header comments give each backend's details. The udp, pcap and xdp
 * backends keep frames in 2048-byte buffers: a larger record of a capture is
 * dropped and counted; a larger datagram arrives cut, its first bytes in the
 * buffer and its IPv4 and UDP lengths the whole datagram's (as a capture's
 * snapshot length cuts a frame), so that checking its lengths finds it cut.
 * Every function may be called from any segment thread.
 *
 * On DPDK the hot path is inline, as DPDK's own burst calls are: a receive burst
 * is the PMD's mbuf array (floem_net_frame_t), each frame's data and length are
 * read from its mbuf where FromNet runs (floem_net_packet), and floem_net_tx
 * stages the mbuf itself when the frame is where it was received. So this
 * header includes <rte_mbuf.h> in DPDK builds, whose flags name DPDK's headers.
 */
#ifndef FLOEM_NET_H
#define FLOEM_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A frame: where its bytes are, how many, and the backend's buffer that holds them. */
typedef struct {
    void *data;
    uint32_t len;
    void *buffer;
} floem_packet_t;

typedef struct {
    uint64_t rx, tx, rx_dropped, tx_dropped, alloc_failed;
    /* tcp: connections open now, accepted and closed so far, and the bytes of the streams */
    uint64_t conns_open, conns_accepted, conns_closed, bytes_in, bytes_out;
} floem_net_stats_t;

/* A received frame as the backend holds it: what floem_net_rx fills, turned into a
 * floem_packet_t by floem_net_packet. On DPDK it is the mbuf itself, so a receive burst is
 * DPDK's own mbuf array and the frame's data and length are read where FromNet runs (as a
 * DPDK program's loop reads them); elsewhere it is the packet. */
#ifdef FLOEM_NET_DPDK
#include <rte_mbuf.h>
typedef struct rte_mbuf *floem_net_frame_t;

static inline floem_packet_t floem_net_packet(floem_net_frame_t frame)
{
    return (floem_packet_t){rte_pktmbuf_mtod(frame, void *), frame->data_len, frame};
}

/* The frame that sends `pkt`, when its buffer holds it where it was received or allocated
 * (no element moved its data or changed its length); false otherwise. */
static inline bool floem_net_frame_as_is(const floem_packet_t *pkt, floem_net_frame_t *frame)
{
    struct rte_mbuf *m = pkt->buffer;
    if (rte_pktmbuf_mtod(m, void *) != pkt->data || m->data_len != pkt->len)
        return false;
    *frame = m;
    return true;
}
#else
typedef floem_packet_t floem_net_frame_t;

static inline floem_packet_t floem_net_packet(floem_net_frame_t frame)
{
    return frame;
}

static inline bool floem_net_frame_as_is(const floem_packet_t *pkt, floem_net_frame_t *frame)
{
    /* Field by field: a whole-struct copy of a just-built struct stalls store forwarding. */
    frame->data = pkt->data;
    frame->len = pkt->len;
    frame->buffer = pkt->buffer;
    return true;
}
#endif

/* Open the port (called by floem_init of the process running the I/O elements). */
void floem_net_init(void);
/* Flush, report (with FLOEM_REPORT set) and close the port. */
void floem_net_finalize(void);
/* Receive queues usable by threads (RSS where the port supports it; thread i uses queue i % n). */
unsigned floem_net_queues(void);
/* Receive up to `max` frames from `queue` without blocking; returns how many. Each frame's
 * packet is floem_net_packet(frames[i]). A stream (--net tcp) needs a framer: see
 * floem_net_rx_framed. */
unsigned floem_net_rx(unsigned queue, floem_net_frame_t *frames, unsigned max)
#ifdef FLOEM_NET_TCP
    __attribute__((error("--net tcp serves streams: give FromNet a framer= (floem.library.stream)")))
#endif
    ;
/* True once a finite input (a pcap file) has been fully delivered. */
bool floem_net_rx_done(void);
/* Frames a thread stages before floem_net_tx sends them without waiting for a flush. */
#define FLOEM_NET_TX_BURST 32

/* The calling thread's frames waiting to be sent, all for one queue (net.c keeps it; the
 * inline floem_net_tx below only appends to it). `taken` is the queue number a caller of
 * floem_net_tx passed that maps to `queue` while a receive burst is open (UINT_MAX outside
 * one): frames for it are appended inline while there is room, and any other frame takes
 * floem_net_tx_staging. */
typedef struct {
    unsigned taken, queue, n;
    bool in_burst;
    floem_net_frame_t frames[FLOEM_NET_TX_BURST];
} floem_net_staged_t;
extern _Thread_local floem_net_staged_t floem_net_staged;
/* floem_net_tx's way for the first frame of a burst, a full burst, another queue, a frame
 * an element moved or resized (DPDK), and frames sent outside a receive burst (the frame
 * by value: the caller's stays in registers). */
void floem_net_tx_staging(unsigned queue, void *data, uint32_t len, void *buffer);

/* Queue a frame for transmission on `queue` (a queue past the last is taken modulo the
 * queue count, so a thread may pass its index, as for receiving); the frame's buffer is the
 * backend's again. Inside a receive burst a frame is appended to the thread's burst here,
 * without a call: what a DPDK program's loop does with its transmit array. */
static inline void floem_net_tx(unsigned queue, floem_packet_t *pkt)
{
    floem_net_staged_t *s = &floem_net_staged;
    if (__builtin_expect(queue == s->taken && s->n < FLOEM_NET_TX_BURST &&
                         floem_net_frame_as_is(pkt, &s->frames[s->n]), 1)) {
        s->n++;
        return;
    }
    floem_net_tx_staging(queue, pkt->data, pkt->len, pkt->buffer);
}
/* Send what floem_net_tx queued on `queue` (FromNet calls it after every receive burst). */
void floem_net_flush(unsigned queue);
/* A buffer for a new frame of `len` bytes (NetAlloc); false when none is free (counted). */
bool floem_net_alloc(uint32_t len, floem_packet_t *pkt);
/* Give a received or allocated frame back without sending it (NetFree). */
void floem_net_free(floem_packet_t *pkt);

/* ---- The order replies leave in ---------------------------------------------------------
 *
 * A request may become several packets (the commands of one datagram, the keys of one get),
 * each may take its own path through the program (a cache hit answered where it arrived, a
 * miss served across a queue), and a reply may take several frames. Frames made with
 * floem_net_alloc_before leave in order: a frame made before `next` is sent (or given back)
 * after the frames made before it and before `next` itself, whichever thread sends each and
 * whenever. The frames of one TCP connection are all in one such order, that of the requests
 * (see "Streams"); over udp and pcap a datagram starts an order when the first frame is made
 * before it. On dpdk frames made this way are sent as they come. */

/* A new frame of `len` bytes in the order just before `next` (a frame received, or made this
 * way, not yet sent nor given back); false when no buffer is free (counted). */
bool floem_net_alloc_before(const floem_packet_t *next, uint32_t len, floem_packet_t *pkt);
/* Whether floem_net_alloc_before keeps the orders of datagrams (udp, pcap, xdp; default:
 * yes). A program whose frames are each sent or given back by the thread that received them
 * (no queue between its FromNet and its ToNet) turns it off before floem_net_init: its
 * threads send each order's frames in order already, and a frame made before another is
 * then made as floem_net_alloc makes one. Streams (tcp) keep their orders regardless. */
void floem_net_keep_orders(bool keep);
/* Give the frame back (as floem_net_free) and, over tcp, close its connection once every
 * frame before it has been sent (memcached's quit); elsewhere only gives it back. */
void floem_net_close(floem_packet_t *pkt);

/* ---- Streams (--net tcp) ------------------------------------------------------------------
 *
 * The tcp backend accepts connections on FLOEM_NET_PORT and turns each byte stream into
 * messages with the program's framer: a message becomes a frame of its own, Ethernet + IPv4 +
 * TCP headers (the connection's real addresses and ports; the TCP sequence number is the
 * message's place in the stream) followed by the message, and its buffer belongs to the
 * connection: a reply written into it, or into frames made before it with
 * floem_net_alloc_before, goes back on that connection, after the replies to every earlier
 * message and before those to any later one. A frame given back unsent answers its message
 * with nothing. Frames sent that belong to no connection are dropped and counted. */

/* The framer's answers besides a message's length. */
#define FLOEM_FRAME_MORE 0          /* the message's end is not known yet: more bytes needed */
#define FLOEM_FRAME_CLOSE (-1)      /* the stream cannot be read on: close the connection */
/* Where the message that starts at `data` ends, `len` bytes of the stream being there: its
 * length in bytes (it may be longer than `len`: the transport waits for the rest), or one of
 * the answers above. `state` is the connection's, zero when it opens, the framer's to keep;
 * `config` the framer's own (floem_framer_t). It must read nothing at or past data + len. */
typedef long (*floem_frame_fn)(const void *config, uint64_t *state, const uint8_t *data,
                               size_t len);
typedef struct {
    floem_frame_fn frame;
    const void *config;
} floem_framer_t;
/* 1 when frames are messages of streams, whose buffers are their connections (a frame kept
 * by payload slicing keeps its buffer even when it crosses whole: floem/frames.h). */
#ifdef FLOEM_NET_TCP
#define FLOEM_NET_STREAMS 1
#else
#define FLOEM_NET_STREAMS 0
#endif
/* The longest message a frame holds (its IPv4 length must say more for a longer one): a
 * longer message is delivered cut, its first FLOEM_NET_MESSAGE_MAX bytes with the lengths of
 * the whole (as a datagram longer than a buffer is), and the rest of it skipped. */
#define FLOEM_NET_MESSAGE_MAX (65535 - 20 - 20 - 1)

/* floem_net_rx for a backend of streams: each frame is one message as `framer` delimits it
 * (FromNet(framer=...)). Every FromNet of a process must give the same framer. Over
 * datagrams a datagram is a message, and the framer is not used. */
unsigned floem_net_rx_framed(unsigned queue, floem_net_frame_t *frames, unsigned max,
                             const floem_framer_t *framer);
void floem_net_stats(floem_net_stats_t *out);
/* Print the port's counters on stderr (floem_net_finalize does with FLOEM_REPORT set). */
void floem_net_report(void);

#endif
