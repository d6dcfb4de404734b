/* Fuzz target: the Storm data plane's transport (examples/storm/transport.c), driven as
 * storm.py's elements drive it: Receive and Acknowledge (storm_dp_receive, storm_dp_route,
 * storm_dp_acknowledge), Backlog (storm_dp_backlog_put) and Transmit
 * (storm_dp_transmit_begin, storm_dp_transmit_next, the local backlog).
 *
 * transport.c is compiled into this file (it is included below) so that every input
 * starts with a fresh transport: the real one is a process-wide singleton.
 *
 * The input is a list of commands, each a byte then its arguments:
 *   0  a received frame: length (2 bytes), then its bytes; 1 byte: refuse a tuple
 *   1  a transmitter turn: time advance in microseconds (2 bytes)
 *   2  a tuple from a local worker (64 bytes)
 *   3  a well-formed datagram from a peer: kind, peer, sequence offset from what the
 *      peer's connection expects (signed byte), refuse, then its tuple (64 bytes)
 * Checks: nothing is read past a frame; an acknowledgement is a valid frame to the
 * sender; every datagram sent is a valid data frame; per connection, never more tuples
 * in flight than the window, nor more waiting than the backlog.
 */
#include "../../examples/storm/transport.c"

#include "fuzz.h"

#define SERVERS 3
#define SELF 1
#define WINDOW 8
#define BACKLOG 16

static const int8_t server_of[] = {0, 1, 2, 0, 1, 2};
static const int16_t local_of[] = {0, 0, 0, 1, 1, 1};
static const struct storm_endpoint at[SERVERS] = {
    {{2, 0, 0, 0, 0, 1}, 0x7f000001, 7101},
    {{2, 0, 0, 0, 0, 2}, 0x7f000001, 7102},
    {{2, 0, 0, 0, 0, 3}, 0x7f000001, 7103},
};
static const struct storm_dp_config config = {
    SELF, SERVERS, 6, server_of, local_of, at, WINDOW, BACKLOG, 1000000, 0, 0, 0,
};

/* Frames the transmitter allocates (the network's, in a real run). */
bool floem_net_alloc(uint32_t len, floem_packet_t *pkt)
{
    void *buf = malloc(len);
    if (buf == NULL)
        return false;
    *pkt = (floem_packet_t){buf, len, buf};
    return true;
}

static void fresh_transport(void)
{
    if (transport != NULL) {            /* cache_aligned's memory: mapped, unmapped */
        for (int s = 0; s < SERVERS; s++) {
            munmap(transport->peer[s].backlog, (size_t)BACKLOG * STORM_TUPLE_BYTES);
            if (transport->peer[s].sent != NULL)
                munmap(transport->peer[s].sent, (size_t)WINDOW * STORM_TUPLE_BYTES);
        }
        munmap(transport, sizeof *transport);
        transport = NULL;
    }
    wanted = &config;
    make();
}

static void check_invariants(const struct storm_transport *t)
{
    for (int s = 0; s < SERVERS; s++) {
        const struct storm_peer *p = &t->peer[s];
        FUZZ_CHECK(p->tail - p->head <= BACKLOG);
        if (s == SELF)
            continue;
        FUZZ_CHECK(p->next - p->acked <= WINDOW);
        FUZZ_CHECK(p->next - p->resend <= WINDOW);
        FUZZ_CHECK(p->cwnd >= 1 && p->cwnd <= WINDOW);
    }
}

/* Receive then, for a tuple, Acknowledge: as the demux segment does. */
static void receive(struct storm_transport *t, uint8_t *frame, size_t size, int refuse)
{
    int peer = -1, worker = -1;
    const uint8_t *tuple = NULL;
    enum storm_received r = storm_dp_receive(t, frame, size, &peer, &tuple);
    if (r == STORM_RX_DATA && storm_dp_route(t, tuple, &worker) != SELF)
        r = STORM_RX_JUNK;
    if (r != STORM_RX_DATA && r != STORM_RX_AGAIN)
        return;
    FUZZ_CHECK(peer >= 0 && peer < SERVERS && peer != SELF);
    FUZZ_CHECK(tuple > frame && tuple + STORM_TUPLE_BYTES <= frame + size);
    if (r == STORM_RX_DATA)
        FUZZ_CHECK(worker >= 0 && worker < 2);
    if (r == STORM_RX_DATA && refuse)
        storm_dp_queue_full();
    size_t n = storm_dp_acknowledge(t, frame, peer, r == STORM_RX_DATA ? STORM_DELIVERED
                                                                      : STORM_NOT_NEXT);
    FUZZ_CHECK(n <= size);
    struct floem_udp_view view;
    FUZZ_CHECK(floem_udp_parse(frame, n, 1, &view) == FLOEM_UDP_OK);
    FUZZ_CHECK(view.payload_len == STORM_WIRE_HEADER);
    FUZZ_CHECK(view.payload[0] == STORM_WIRE_ACK && view.payload[1] == SELF &&
               view.payload[2] == peer);
    FUZZ_CHECK(storm_dp_le32(view.payload + 4) == t->peer[peer].expected);
}

static void transmit(struct storm_transport *t, uint64_t now)
{
    storm_dp_transmit_begin(t, now);
    uint8_t *data;
    uint32_t len;
    void *buffer;
    for (int n = 0; n < 2 * WINDOW && storm_dp_transmit_next(t, &data, &len, &buffer); n++) {
        struct floem_udp_view view;
        FUZZ_CHECK(floem_udp_parse(data, len, 1, &view) == FLOEM_UDP_OK);
        FUZZ_CHECK(view.payload_len == STORM_WIRE_HEADER + STORM_TUPLE_BYTES);
        FUZZ_CHECK(view.payload[0] == STORM_WIRE_DATA && view.payload[1] == SELF &&
                   view.payload[2] < SERVERS && view.payload[2] != SELF);
        free(buffer);
    }
    for (int n = 0; n < BACKLOG && storm_dp_local_peek(t) != NULL; n++)
        storm_dp_local_pop(t);
}

/* A datagram as a peer's transport would send it. */
static void from_peer(struct storm_transport *t, struct fuzz_input *in)
{
    uint8_t kind = fuzz_u8(in) & 1 ? STORM_WIRE_ACK : STORM_WIRE_DATA;
    int peer = fuzz_u8(in) % SERVERS;
    int8_t offset = (int8_t)fuzz_u8(in);
    int refuse = fuzz_u8(in) & 1;
    size_t got;
    const uint8_t *tuple = fuzz_bytes(in, STORM_TUPLE_BYTES, &got);
    uint8_t frame[STORM_DATA_FRAME] = {0};
    struct floem_udp_endpoints ends = {.src_ip = at[peer].ip, .dst_ip = at[SELF].ip,
                                       .src_port = at[peer].port, .dst_port = at[SELF].port};
    memcpy(ends.src_mac, at[peer].mac, 6);
    memcpy(ends.dst_mac, at[SELF].mac, 6);
    size_t payload = kind == STORM_WIRE_DATA ? STORM_WIRE_HEADER + STORM_TUPLE_BYTES
                                             : STORM_WIRE_HEADER;
    floem_udp_fill(frame, payload, &ends, 0);
    const struct storm_peer *p = &t->peer[peer];
    uint32_t base = kind == STORM_WIRE_ACK ? p->acked : p->expected;
    uint8_t *w = frame + FLOEM_UDP_FRAME_LEN;
    w[0] = kind;
    w[1] = (uint8_t)peer;
    w[2] = SELF;
    w[3] = (uint8_t)(refuse ? STORM_WIRE_BUSY : 0);
    put_le32(w + 4, base + (uint32_t)(int32_t)offset);
    memcpy(w + STORM_WIRE_HEADER, tuple, got);
    size_t size = FLOEM_UDP_FRAME_LEN + payload;
    uint8_t *copy = fuzz_frame(frame, size);
    receive(t, copy, size, refuse);
    fuzz_frame_free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fresh_transport();
    struct storm_transport *t = transport;
    struct fuzz_input in = {data, size};
    uint64_t now = 1;
    while (in.left > 0) {
        switch (fuzz_u8(&in) % 4) {
        case 0: {
            size_t want = fuzz_u16(&in) % (FUZZ_BUFFER_BYTES + 1), got;
            const uint8_t *bytes = fuzz_bytes(&in, want, &got);
            uint8_t *frame = fuzz_frame(bytes, got);
            receive(t, frame, got, fuzz_u8(&in) & 1);
            fuzz_frame_free(frame);
            break;
        }
        case 1:
            now += (uint64_t)fuzz_u16(&in) * 1000;
            transmit(t, now);
            break;
        case 2: {
            uint8_t tuple[STORM_TUPLE_BYTES] = {0};
            size_t got;
            memcpy(tuple, fuzz_bytes(&in, sizeof tuple, &got), got);
            int worker;
            int server = storm_dp_route(t, tuple, &worker);
            if (server >= 0)
                storm_dp_backlog_put(t, server, tuple);
            break;
        }
        default:
            from_peer(t, &in);
            break;
        }
        storm_dp_queue_refused();       /* a refusal not consumed is this command's only */
        check_invariants(t);
    }
    return 0;
}
