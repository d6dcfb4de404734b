/* Fuzz target: a request to the key-value store (examples/kvs/proto.c), the way its
 * elements (examples/kvs/elements.py) handle one: ParseRequest (kvs_check, kvs_validate,
 * kvs_key), MakeRecord for a SET (kvs_record_make), Respond (kvs_reply_to,
 * kvs_reply_datagrams, kvs_reply_write, every datagram of the reply).
 *
 * The input is one received frame. A GET is answered from a record chosen by the low bit
 * of its opaque: none, or the largest a SET can make (a reply of two datagrams).
 * Checks: nothing is read past the frame before the reply is written; a refused frame has
 * a reason; an accepted one has its key and value inside it; every reply datagram is a
 * valid frame numbered `seq` of the count announced, and together they carry the message
 * memcached would send.
 */
#include "fuzz.h"
#include "proto.h"

#define NOW 1700000000u

static uint8_t big_record[KVS_RECORD_HEADER + KVS_VALUE_LIMIT];

/* The frames of the reply, reassembled: the message they carry. */
static void check_reply(uint8_t *frame, struct kvs_packet *p, const struct floem_mc_msg *r)
{
    unsigned n = kvs_reply_datagrams(r);
    size_t total = FLOEM_MC_HDR_LEN + (size_t)r->extras_len + r->key_len + r->value_len;
    FUZZ_CHECK(n >= 1 && (size_t)n * KVS_REPLY_CHUNK >= total);
    uint8_t *message = malloc(FLOEM_MC_UDP_HDR_LEN + total);
    FUZZ_CHECK(message != NULL);
    size_t have = FLOEM_MC_UDP_HDR_LEN;
    uint16_t request_id = floem_get16(&p->frame.request_id);
    uint8_t more[FLOEM_UDP_FRAME_LEN + KVS_REPLY_DATAGRAM];
    /* As Respond does: the other datagrams first (into new frames), then the first in place. */
    for (unsigned seq = n; seq-- > 0;) {
        uint8_t *out = seq == 0 ? frame : more;
        if (seq == 0)
            fuzz_frame_room(frame);     /* the reply may be longer than the request */
        size_t len = kvs_reply_write(out, p, r, seq);
        FUZZ_CHECK(len <= sizeof more);
        struct floem_udp_view view;
        FUZZ_CHECK(floem_udp_parse(out, len, 1, &view) == FLOEM_UDP_OK);
        FUZZ_CHECK(view.payload_len >= FLOEM_MC_UDP_HDR_LEN);
        FUZZ_CHECK(floem_get16(view.payload) == request_id);
        FUZZ_CHECK(floem_get16(view.payload + 2) == seq && floem_get16(view.payload + 4) == n);
        size_t part = view.payload_len - FLOEM_MC_UDP_HDR_LEN;
        FUZZ_CHECK(seq + 1 == n ? part == total - (size_t)seq * KVS_REPLY_CHUNK
                                : part == KVS_REPLY_CHUNK);
        memcpy(message + FLOEM_MC_UDP_HDR_LEN + (size_t)seq * KVS_REPLY_CHUNK,
               view.payload + FLOEM_MC_UDP_HDR_LEN, part);
        have += part;
    }
    FUZZ_CHECK(have == FLOEM_MC_UDP_HDR_LEN + total);
    memset(message, 0, FLOEM_MC_UDP_HDR_LEN);
    floem_put16(message + 4, 1);
    struct floem_mc_msg got;
    FUZZ_CHECK(floem_mc_parse(message, have, &got) == FLOEM_MC_PARSED);
    FUZZ_CHECK(got.magic == FLOEM_MC_RESPONSE && got.opcode == r->opcode &&
               got.status == r->status && got.opaque == r->opaque);
    FUZZ_CHECK(got.extras_len == r->extras_len && got.key_len == r->key_len &&
               got.value_len == r->value_len);
    free(message);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_BUFFER_BYTES)
        return -1;
    if (floem_get32(big_record + 4) == 0)       /* a live record: expiry after NOW */
        floem_put32(big_record + 4, NOW + 60);
    uint8_t *frame = fuzz_frame(data, size);
    int why = kvs_check(frame, size);
    if (why >= 0) {
        FUZZ_CHECK(why < KVS_DROPS);
        fuzz_frame_free(frame);
        return 0;
    }
    struct kvs_packet *p = (struct kvs_packet *)frame;
    uint16_t status = kvs_validate(p, KVS_VALUE_LIMIT);
    FUZZ_CHECK(kvs_key(p) + kvs_keylen(p) <= frame + size);
    FUZZ_CHECK(kvs_value(p) + kvs_vallen(p) <= frame + size);
    const uint8_t *rec = NULL;
    uint32_t reclen = 0;
    static uint8_t record[KVS_RECORD_HEADER + KVS_VALUE_LIMIT];
    if (status == FLOEM_MC_OK && p->mc.opcode == FLOEM_MC_SET) {
        reclen = kvs_record_make(record, p, NOW);
        FUZZ_CHECK(reclen == KVS_RECORD_HEADER + kvs_vallen(p));
        rec = record;
    } else if (floem_get32(&p->mc.opaque) & 1) {
        rec = big_record;
        reclen = sizeof big_record;
    }
    struct floem_mc_msg r = kvs_reply_to(p, status, rec, reclen, NOW);
    check_reply(frame, p, &r);
    fuzz_frame_free(frame);
    return 0;
}
