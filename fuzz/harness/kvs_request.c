/* Fuzz target: a request to the key-value store (examples/kvs/proto.c), a UDP datagram or a
 * TCP stream's message (floem/net.h), the way its elements (examples/kvs/elements.py)
 * handle one: SplitRequests (kvs_split_next, kvs_split_size and kvs_split_write, for a text
 * request: every command, every key of a get, in a frame of its own; kvs_uncut for a
 * request the backend cut), ParseRequest (kvs_check, kvs_parse), MakeRecord
 * (kvs_record_make), the store's update (kvs_update) and Respond (kvs_reply or
 * kvs_stats_reply, kvs_closes, kvs_reply_frames, kvs_reply_write, every frame of the
 * reply).
 *
 * The input is one received frame, binary or text, over UDP or TCP. A request that asks the
 * store (an operation) is answered from a record chosen by the low bit of its first byte:
 * none, or the largest a SET can make (a reply of two datagrams), which an update then
 * changes; one that does not, as Classify sends it, from none. Checks: nothing is read past
 * a frame; a refused frame has a reason; an accepted one has its key inside it; every single
 * request is as long as kvs_split_size says and fits the frame buffer; every reply frame is
 * a valid frame (a UDP one numbered `seq` of the count announced), and together they carry
 * the whole message.
 */
#include "fuzz.h"
#include "proto.h"

#define NOW 1700000000u

static uint8_t big_record[KVS_RECORD_MAX];

/* The frames of the reply to `p`, checked and put back together. */
static void check_reply(uint8_t *frame, struct kvs_packet *p, const uint8_t *msg, size_t len)
{
    bool stream = kvs_is_stream(p);
    unsigned n = kvs_reply_frames(p, len);
    size_t piece = stream ? KVS_STREAM_CHUNK : KVS_REPLY_CHUNK;
    FUZZ_CHECK((size_t)n * piece >= len && (stream || n >= 1));
    uint16_t request_id = stream ? 0 : floem_get16(&p->frame.request_id);
    uint8_t more[FLOEM_TCP_FRAME_LEN + KVS_STREAM_CHUNK];
    size_t have = 0;
    /* As Respond does: every frame but the last into new frames, then the last in place. */
    for (unsigned seq = 0; seq < n; seq++) {
        bool last = seq + 1 == n;
        uint8_t *out = last ? frame : more;
        if (last)
            fuzz_frame_room(frame);     /* the reply may be longer than the request */
        size_t size = kvs_reply_write(out, p, msg, len, seq);
        FUZZ_CHECK(size == kvs_reply_size(p, len, seq) && size <= sizeof more);
        const uint8_t *payload;
        size_t part;
        if (stream) {
            size_t whole;
            FUZZ_CHECK(floem_tcp_message(out, size, &payload, &part, &whole) == FLOEM_UDP_OK);
        } else {
            struct floem_udp_view view;
            FUZZ_CHECK(floem_udp_parse(out, size, 1, &view) == FLOEM_UDP_OK);
            FUZZ_CHECK(view.payload_len >= FLOEM_MC_UDP_HDR_LEN);
            FUZZ_CHECK(floem_get16(view.payload) == request_id);
            FUZZ_CHECK(floem_get16(view.payload + 2) == seq
                       && floem_get16(view.payload + 4) == (len + piece - 1) / piece);
            payload = view.payload + FLOEM_MC_UDP_HDR_LEN;
            part = view.payload_len - FLOEM_MC_UDP_HDR_LEN;
        }
        FUZZ_CHECK(last ? part == len - (size_t)seq * piece : part == piece);
        FUZZ_CHECK(memcmp(payload, msg + (size_t)seq * piece, part) == 0);
        have += part;
    }
    FUZZ_CHECK(have == len);
}

/* One single request in `frame` (`size` bytes), as ParseRequest, the store and Respond
 * handle it. */
static void serve(uint8_t *frame, size_t size, bool big, uint8_t part)
{
    int why = kvs_check(frame, size);
    if (why >= 0) {
        FUZZ_CHECK(why < KVS_DROPS);
        return;
    }
    struct kvs_packet *p = (struct kvs_packet *)frame;
    struct kvs_request r;
    why = kvs_parse(p, KVS_VALUE_LIMIT, NOW, &r);
    if (why >= 0) {
        FUZZ_CHECK(why < KVS_DROPS);
        return;
    }
    FUZZ_CHECK(r.keylen == 0 || (r.key >= frame && r.key + r.keylen <= frame + size));
    static uint8_t record[KVS_RECORD_MAX], result[KVS_RECORD_MAX];
    static uint8_t msg[KVS_REPLY_MESSAGE_MAX];
    uint32_t reclen = 0;
    if (r.status == FLOEM_MC_OK) {
        reclen = kvs_record_make(record, p, NOW, 7);
        FUZZ_CHECK(reclen == 0 || (reclen >= KVS_RECORD_HEADER && reclen <= sizeof record));
    }
    bool stored = big && r.op != KVS_OP_NONE;      /* Classify: no op, no store */
    const uint8_t *rec = stored ? big_record : NULL;
    uint32_t len = stored ? sizeof big_record : 0;
    uint16_t status = r.status;
    if (r.op == KVS_OP_STATS) {              /* update.h's kvs_store_apply */
        const uint64_t figures[KVS_STATS_FIGURES] = {1, 2, 3, 4, UINT64_MAX};
        len = kvs_stats_record(result, figures);
        rec = result;
    } else if (r.status == FLOEM_MC_OK && r.op != KVS_OP_GET && r.op != KVS_OP_NONE) {
        long n = kvs_update(r.op, rec, len, record, reclen, r.arg, 7, KVS_VALUE_LIMIT, result,
                            &status);
        FUZZ_CHECK(n >= KVS_UPDATE_DELETE && n <= (long)sizeof result);
        if (n >= 0) {
            FUZZ_CHECK(n >= KVS_RECORD_HEADER);
            rec = result;
            len = (uint32_t)n;
        }
    }
    long n;
    if (r.op == KVS_OP_STATS && status == FLOEM_MC_OK) {
        struct kvs_stats st = {.pid = 1, .uptime = 2, .cmd_get = UINT64_MAX};
        kvs_stats_from_record(&st, rec, len);
        n = kvs_stats_reply(msg, p, &st);
    } else {
        n = kvs_reply(msg, p, status, rec, len, 7, NOW, 0, part);
    }
    FUZZ_CHECK(n >= -1 && n <= (long)sizeof msg);
    FUZZ_CHECK(!kvs_closes(p, status) || kvs_is_stream(p));
    if (n >= 0)
        check_reply(frame, p, msg, (size_t)n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_BUFFER_BYTES)
        return -1;
    if (floem_get32(big_record + 4) == 0) {     /* a live record: expiry after NOW */
        floem_put32(big_record + 4, NOW + 60);
        memset(big_record + KVS_RECORD_HEADER, '7', KVS_VALUE_LIMIT);
    }
    bool big = size > 0 && (data[0] & 1);
    uint8_t *frame = fuzz_frame(data, size);
    struct kvs_packet *p = (struct kvs_packet *)frame;
    kvs_uncut(frame, size);
    bool text = kvs_maybe_text(frame, size) && kvs_check(frame, size) < 0;
    if (!text) {
        serve(frame, size, big, 0);
        fuzz_frame_free(frame);
        return 0;
    }
    const uint8_t *words = kvs_text(p);
    size_t len = kvs_text_len(p);
    struct kvs_split cur, next;
    if (kvs_split_next(words, len, 0, NULL, &cur)) {
        for (int more = 1; more;) {
            FUZZ_CHECK(cur.next <= len && cur.line + cur.line_len <= len);
            FUZZ_CHECK(cur.data + cur.data_len <= len && cur.key + cur.key_len <= len);
            more = kvs_split_next(words, len, cur.next, &cur, &next);
            uint8_t *single = fuzz_frame(data, 0);
            fuzz_frame_room(single);
            size_t n = kvs_split_write(single, frame, &cur);
            FUZZ_CHECK(n <= size && n == kvs_split_size(frame, &cur));
            ASAN_POISON_MEMORY_REGION(single + n, FUZZ_BUFFER_BYTES - n);
            serve(single, n, big, kvs_split_flags(&cur));
            fuzz_frame_free(single);
            cur = next;
        }
    }
    fuzz_frame_free(frame);
    return 0;
}
