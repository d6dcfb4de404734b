/* The Storm data plane's transport between servers (examples/storm/storm.py): one
 * connection per pair of servers, DCCP-like and packet-oriented, with TCP's flow control
 * (FlexNIC, section 3.3): sequence numbers, cumulative acknowledgements made by the
 * receiver's data plane, a congestion window, go-back-N retransmission on timeout.
 *
 * Every tuple for another server, and every tuple for a local worker that the multiplexer
 * routes, waits in its destination's backlog (a single-producer, single-consumer ring: the
 * multiplexer puts, the transmitter takes). The transmitter sends from the backlog within
 * the window, keeps each sent tuple until it is acknowledged, and resends after a timeout;
 * for the local destination it hands tuples to the workers' queues, leaving them at the
 * head of the backlog while the queue is full. The receiver accepts only the next tuple in
 * sequence, and only if its worker's queue has room, and acknowledges what it has accepted:
 * nothing is lost or delivered twice, and a slow worker holds up only its sender's
 * connection, never the receiver's demultiplexer.
 *
 * Datagram (the UDP payload), little-endian:
 *     0  kind (STORM_WIRE_DATA or STORM_WIRE_ACK)      1  source server     2  destination server
 *     3  flags (an ack's STORM_WIRE_BUSY: the receiver refused the next tuple, its queue full)
 *     4  data: its sequence number; ack: the next sequence number expected
 *     8  data: the tuple (64 bytes)
 */
#ifndef STORM_TRANSPORT_H
#define STORM_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "workers/tuple.h"

#define STORM_WIRE_DATA 1
#define STORM_WIRE_ACK 2
#define STORM_WIRE_BUSY 1           /* flag of an ack: the next tuple found its queue full */
#define STORM_WIRE_HEADER 8
#define STORM_TUPLE_BYTES 64
#define STORM_UDP_HEADERS 42         /* Ethernet, IPv4 without options, UDP */
#define STORM_DATA_FRAME (STORM_UDP_HEADERS + STORM_WIRE_HEADER + STORM_TUPLE_BYTES)
#define STORM_MAX_SERVERS 64

/* Where a server is (topology.toml). */
struct storm_endpoint {
    uint8_t mac[6];
    uint32_t ip;                    /* host byte order */
    uint16_t port;                  /* 0: none in the topology, STORM_PORTS has it */
};

/* The topology as this server sees it, and the transport's settings (made by storm.py). */
struct storm_dp_config {
    int self;                       /* this server's index */
    int servers;
    int executors;
    const int8_t *server_of;        /* [executors]: the server running each executor */
    const int16_t *local_of;        /* [executors]: its worker index on that server */
    const struct storm_endpoint *at;/* [servers] */
    unsigned window;                /* most tuples in flight per connection (a power of 2) */
    unsigned backlog;               /* tuples waiting per destination (a power of 2) */
    uint64_t rto_ns;                /* retransmission timeout */
    unsigned drop_every;            /* tests: drop every k-th datagram sent (0: none) */
    unsigned drop_permille;         /* tests: drop this fraction of datagrams, seeded */
    uint64_t drop_seed;
};

/* What the receiver makes of a datagram. */
enum storm_received {
    STORM_RX_JUNK,                  /* not ours: not UDP, too short, another server's */
    STORM_RX_DATA,                  /* a tuple: the next in sequence (deliver, then acknowledge) */
    STORM_RX_AGAIN,                 /* a tuple out of sequence: acknowledge what we expect */
    STORM_RX_ACK,                   /* an acknowledgement, taken into account */
};

struct storm_transport;

/* This process's transport (made on first use; every thread passes the same config). The
 * servers' UDP ports are the topology's, or those of the environment variable STORM_PORTS,
 * every server's by index, comma-separated (run.py sets it); without a port for every
 * server it says so and exits. */
struct storm_transport *storm_dp_open(const struct storm_dp_config *config);

/* Little-endian fields of a tuple's bytes. */
static inline uint32_t storm_dp_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The server and worker index of the executor a tuple is for; -1 for an unknown executor. */
int storm_dp_route(const struct storm_transport *t, const uint8_t *tuple, int *worker);

/* Multiplexer: append a tuple to the backlog of `server`; false when it is full. */
int storm_dp_backlog_put(struct storm_transport *t, int server, const uint8_t *tuple);

/* Demultiplexer: classify a received frame. For STORM_RX_DATA, `tuple` points at its tuple
 * and *peer is the sending server; for STORM_RX_AGAIN too. */
enum storm_received storm_dp_receive(struct storm_transport *t, uint8_t *frame, size_t size,
                                  int *peer, const uint8_t **tuple);
/* Demultiplexer, after handing the tuple of STORM_RX_DATA to its worker's queue (outcome
 * STORM_DELIVERED, unless storm_dp_queue_full() said the queue had no room: then it will come
 * again), or for STORM_RX_AGAIN (STORM_NOT_NEXT): turn the frame into the acknowledgement
 * of what has been delivered; its new size. */
#define STORM_DELIVERED 1
#define STORM_REFUSED 0
#define STORM_NOT_NEXT 2
size_t storm_dp_acknowledge(struct storm_transport *t, uint8_t *frame, int peer, int outcome);

/* Transmitter, once per turn: take acknowledgements and timeouts into account. */
void storm_dp_transmit_begin(struct storm_transport *t, uint64_t now_ns);
/* Transmitter: the next datagram to send (a resend first, then the backlog within the
 * window), built into a new frame (its bytes, length and network buffer); false when there
 * is none (or no frame buffer is free). */
int storm_dp_transmit_next(struct storm_transport *t, uint8_t **data, uint32_t *len, void **buffer);
/* Transmitter: the tuple at the head of the local backlog, or NULL; pop it once delivered. */
const uint8_t *storm_dp_local_peek(struct storm_transport *t);
void storm_dp_local_pop(struct storm_transport *t);

/* A worker's input queue had no room for the tuple this thread just handed over (the
 * queue's full port); storm_dp_queue_refused tells the thread so, once. */
void storm_dp_queue_full(void);
int storm_dp_queue_refused(void);

/* Whether to lose this datagram (the drop options), counting it. */
int storm_dp_lose(struct storm_transport *t);


#endif
