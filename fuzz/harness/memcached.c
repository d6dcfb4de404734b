/* Fuzz target: the memcached binary protocol over UDP. floem_mc_parse and floem_mc_build
 * (library/c/memcached.c) on the input as a datagram, and the C bodies of ParseMemcached
 * and MemcachedReply (library/memcached.py, compiled by fuzz/apps/elements.py) on it as a
 * frame.
 *
 * Checks: parsing reads nothing past the datagram or frame and its parts lie inside it;
 * building a parsed message gives back the same message (and refuses a buffer one byte
 * too small); ParseMemcached accepts exactly the single-datagram requests and stores
 * their fields; MemcachedReply answers each with a valid frame carrying the response.
 */
#include "elements.h"
#include "fuzz.h"
#include "headers.h"
#include "memcached.h"
#include "floem_app.h"

struct fuzz_mc_request fuzz_mc;

static size_t message_len(const struct floem_mc_msg *m)
{
    return FLOEM_MC_UDP_HDR_LEN + FLOEM_MC_HDR_LEN + (size_t)m->extras_len + m->key_len +
           m->value_len;
}

static int same_message(const struct floem_mc_msg *a, const struct floem_mc_msg *b)
{
    return a->request_id == b->request_id && a->sequence == b->sequence && a->total == b->total &&
           a->magic == b->magic && a->opcode == b->opcode && a->data_type == b->data_type &&
           a->status == b->status && a->opaque == b->opaque && a->cas == b->cas &&
           a->extras_len == b->extras_len && a->key_len == b->key_len &&
           a->value_len == b->value_len &&
           memcmp(a->extras, b->extras, a->extras_len) == 0 &&
           memcmp(a->key, b->key, a->key_len) == 0 && memcmp(a->value, b->value, a->value_len) == 0;
}

/* The input as a datagram: parse, then build what was parsed and parse that. */
static void check_datagram(const uint8_t *data, size_t size)
{
    struct floem_mc_msg msg;
    enum floem_mc_verdict verdict = floem_mc_parse(data, size, &msg);
    FUZZ_CHECK(verdict < FLOEM_MC_VERDICTS);
    if (verdict != FLOEM_MC_PARSED)
        return;
    size_t len = message_len(&msg);
    FUZZ_CHECK(len <= size);
    FUZZ_CHECK(msg.extras >= data && msg.value + msg.value_len <= data + len);
    uint8_t *out = malloc(len);
    FUZZ_CHECK(out != NULL);
    FUZZ_CHECK(floem_mc_build(out, len - 1, &msg) == 0);
    FUZZ_CHECK(floem_mc_build(out, len, &msg) == len);
    struct floem_mc_msg again;
    FUZZ_CHECK(floem_mc_parse(out, len, &again) == FLOEM_MC_PARSED);
    FUZZ_CHECK(same_message(&msg, &again));
    free(out);
}

/* The input as a frame: ParseMemcached, then MemcachedReply writing into the frame's buffer. */
static void check_frame(const uint8_t *data, size_t size)
{
    struct floem_udp_view udp;
    struct floem_mc_msg req;
    int want = floem_udp_parse((void *)data, size, 0, &udp) == FLOEM_UDP_OK &&
               floem_mc_parse(udp.payload, udp.payload_len, &req) == FLOEM_MC_PARSED &&
               req.magic == FLOEM_MC_REQUEST && req.sequence == 0 && req.total == 1;
    uint8_t *frame = fuzz_frame(data, size);
    memset(&fuzz_mc, 0, sizeof fuzz_mc);
    FUZZ_CHECK((mc_parse(size, frame, NULL) != 0) == want);
    if (want) {
        size_t at = (size_t)(udp.payload - data);      /* the same offsets in `frame` */
        FUZZ_CHECK(fuzz_mc.request_id == req.request_id && fuzz_mc.opcode == req.opcode &&
                   fuzz_mc.data_type == req.data_type && fuzz_mc.vbucket == req.status &&
                   fuzz_mc.opaque == req.opaque && fuzz_mc.cas == req.cas);
        FUZZ_CHECK(fuzz_mc.extras == frame + at + (req.extras - udp.payload) &&
                   fuzz_mc.extlen == req.extras_len);
        FUZZ_CHECK(fuzz_mc.key == frame + at + (req.key - udp.payload) &&
                   fuzz_mc.keylen == req.key_len);
        FUZZ_CHECK(fuzz_mc.value == frame + at + (req.value - udp.payload) &&
                   fuzz_mc.vallen == req.value_len);
    }
    /* ParseMemcached then MemcachedReply(capacity=2048), which may write up to the end of
     * the buffer: a response that does not fit in it is dropped. */
    fuzz_frame_room(frame);
    size_t n = mc_reply(size, frame, NULL);
    size_t headers = want ? (size_t)(udp.payload - data) : 0;
    size_t reply_len = want ? message_len(&req) : 0;
    FUZZ_CHECK((n != 0) == (want && headers + reply_len <= FUZZ_BUFFER_BYTES));
    if (n != 0) {
        FUZZ_CHECK(n == headers + reply_len);
        struct floem_udp_view out;
        struct floem_mc_msg res;
        FUZZ_CHECK(floem_udp_parse(frame, n, 0, &out) == FLOEM_UDP_OK);
        FUZZ_CHECK(floem_mc_parse(out.payload, out.payload_len, &res) == FLOEM_MC_PARSED);
        FUZZ_CHECK(res.magic == FLOEM_MC_RESPONSE && res.opcode == req.opcode &&
                   res.request_id == req.request_id && res.sequence == 0 && res.total == 1 &&
                   res.opaque == req.opaque && res.cas == req.cas + 1);
        FUZZ_CHECK(res.extras_len == req.extras_len && res.key_len == req.key_len &&
                   res.value_len == req.value_len);
        FUZZ_CHECK(memcmp(res.extras, req.extras, req.extras_len) == 0 &&
                   memcmp(res.key, req.key, req.key_len) == 0 &&
                   memcmp(res.value, req.value, req.value_len) == 0);
    }
    fuzz_frame_free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_BUFFER_BYTES)
        return -1;
    check_datagram(data, size);
    check_frame(data, size);
    return 0;
}
