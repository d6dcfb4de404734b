/* The memcached binary protocol over UDP for the key-value store: see proto.h. */
#include "proto.h"

#include <string.h>

int kvs_check(const uint8_t *frame, size_t size)
{
    struct floem_udp_view udp;
    if (floem_udp_parse((void *)frame, size, 0, &udp) != FLOEM_UDP_OK)
        return KVS_DROP_NOT_UDP;
    if (floem_ipv4_header_len(udp.ip) != FLOEM_IPV4_MIN_LEN)
        return KVS_DROP_IP_OPTIONS;
    if (udp.payload_len < FLOEM_MC_UDP_HDR_LEN + FLOEM_MC_HDR_LEN)
        return KVS_DROP_TOO_SHORT;
    const struct kvs_packet *p = (const struct kvs_packet *)frame;
    if (floem_get16(&p->frame.sequence) != 0 || floem_get16(&p->frame.total) != 1)
        return KVS_DROP_MULTI_DATAGRAM;
    if (p->mc.magic != FLOEM_MC_REQUEST)
        return KVS_DROP_BAD_MAGIC;
    uint32_t body = floem_get32(&p->mc.body_len);
    if (body != udp.payload_len - FLOEM_MC_UDP_HDR_LEN - FLOEM_MC_HDR_LEN
            || (uint32_t)p->mc.extras_len + floem_get16(&p->mc.key_len) > body)
        return KVS_DROP_BAD_LENGTH;
    return -1;
}

uint16_t kvs_validate(struct kvs_packet *p, uint32_t value_max)
{
    uint8_t extlen = kvs_extlen(p);
    uint16_t keylen = kvs_keylen(p);
    uint32_t vallen = kvs_vallen(p);
    bool keyed = keylen > 0 && keylen <= KVS_KEY_MAX;
    switch (p->mc.opcode) {
    case FLOEM_MC_GET:
    case FLOEM_MC_GETK:
    case FLOEM_MC_DELETE:
        return keyed && extlen == 0 && vallen == 0 ? FLOEM_MC_OK : FLOEM_MC_INVALID_ARGUMENTS;
    case FLOEM_MC_SET:
        if (!keyed || extlen != 8)
            return FLOEM_MC_INVALID_ARGUMENTS;
        return vallen <= value_max ? FLOEM_MC_OK : FLOEM_MC_VALUE_TOO_LARGE;
    case FLOEM_MC_NOOP:
        return keylen == 0 && extlen == 0 && vallen == 0 ? FLOEM_MC_OK
                                                         : FLOEM_MC_INVALID_ARGUMENTS;
    default:
        return FLOEM_MC_UNKNOWN_COMMAND;
    }
}

uint32_t kvs_record_make(uint8_t *rec, struct kvs_packet *p, uint32_t now)
{
    uint32_t expiry = floem_get32(p->body + 4);
    if (expiry != 0 && expiry <= KVS_RELATIVE_EXPIRY_MAX)
        expiry += now;
    memcpy(rec, p->body, 4);                          /* the flags, as they came */
    floem_put32(rec + 4, expiry);
    uint32_t vallen = kvs_vallen(p);
    memcpy(rec + KVS_RECORD_HEADER, kvs_value(p), vallen);
    return KVS_RECORD_HEADER + vallen;
}

/* memcached's text for an error status (the body of such a reply). */
static const char *error_text(uint16_t status)
{
    switch (status) {
    case FLOEM_MC_KEY_NOT_FOUND: return "Not found";
    case FLOEM_MC_VALUE_TOO_LARGE: return "Too large.";
    case FLOEM_MC_INVALID_ARGUMENTS: return "Invalid arguments";
    case FLOEM_MC_UNKNOWN_COMMAND: return "Unknown command";
    case FLOEM_MC_OUT_OF_MEMORY: return "Out of memory";
    default: return "";
    }
}

struct kvs_reply kvs_reply_to(struct kvs_packet *p, uint16_t status, const uint8_t *rec,
                              uint32_t reclen, uint32_t now)
{
    struct kvs_reply r = {.status = status};
    uint8_t op = p->mc.opcode;
    if (status == FLOEM_MC_OK && (op == FLOEM_MC_GET || op == FLOEM_MC_GETK)) {
        if (op == FLOEM_MC_GETK) {
            r.key = kvs_key(p);
            r.keylen = kvs_keylen(p);
        }
        if (!kvs_record_live(rec, reclen, now)) {
            r.status = FLOEM_MC_KEY_NOT_FOUND;
            if (op == FLOEM_MC_GETK)        /* memcached echoes the key instead of a message */
                return r;
        } else {
            r.extras = rec;                 /* the flags */
            r.extlen = 4;
            r.value = rec + KVS_RECORD_HEADER;
            r.vallen = reclen - KVS_RECORD_HEADER;
            return r;
        }
    }
    if (r.status != FLOEM_MC_OK) {
        r.value = (const uint8_t *)error_text(r.status);
        r.vallen = (uint32_t)strlen((const char *)r.value);
    }
    return r;
}

static size_t message_len(const struct kvs_reply *r)
{
    return FLOEM_MC_HDR_LEN + (size_t)r->extlen + r->keylen + r->vallen;
}

unsigned kvs_reply_datagrams(const struct kvs_reply *r)
{
    return (unsigned)((message_len(r) + KVS_REPLY_CHUNK - 1) / KVS_REPLY_CHUNK);
}

/* Copy the bytes [from, from + n) of the reply's message (header, extras, key, value) to out. */
static void copy_message(uint8_t *out, const struct kvs_packet *req, const struct kvs_reply *r,
                         size_t from, size_t n)
{
    struct floem_mc_hdr h = {
        .magic = FLOEM_MC_RESPONSE, .opcode = req->mc.opcode, .extras_len = r->extlen,
    };
    floem_put16(&h.key_len, r->keylen);
    floem_put16(&h.status, r->status);
    floem_put32(&h.body_len, (uint32_t)(message_len(r) - FLOEM_MC_HDR_LEN));
    memcpy(&h.opaque, &req->mc.opaque, sizeof h.opaque);
    const struct { const void *bytes; size_t len; } parts[] = {
        {&h, sizeof h}, {r->extras, r->extlen}, {r->key, r->keylen}, {r->value, r->vallen},
    };
    size_t at = 0;                          /* offset of the current part in the message */
    for (size_t i = 0; i < sizeof parts / sizeof parts[0] && n > 0; at += parts[i].len, i++) {
        if (from >= at + parts[i].len)
            continue;
        size_t skip = from - at, take = parts[i].len - skip < n ? parts[i].len - skip : n;
        memmove(out, (const uint8_t *)parts[i].bytes + skip, take);
        out += take;
        from += take;
        n -= take;
    }
}

size_t kvs_reply_write(uint8_t *out, const struct kvs_packet *req, const struct kvs_reply *r,
                       unsigned seq)
{
    /* Build in a scratch frame: the reply's parts may point into the request's frame. */
    uint8_t frame[FLOEM_UDP_FRAME_LEN + KVS_REPLY_DATAGRAM];
    memcpy(frame, req, FLOEM_UDP_FRAME_LEN);
    floem_udp_swap(frame);
    struct floem_mc_udp_hdr *fh = (struct floem_mc_udp_hdr *)(frame + FLOEM_UDP_FRAME_LEN);
    memcpy(&fh->request_id, &req->frame.request_id, sizeof fh->request_id);
    floem_put16(&fh->sequence, (uint16_t)seq);
    floem_put16(&fh->total, (uint16_t)kvs_reply_datagrams(r));
    fh->reserved = 0;
    size_t from = (size_t)seq * KVS_REPLY_CHUNK, total = message_len(r);
    size_t n = from < total ? (total - from < KVS_REPLY_CHUNK ? total - from : KVS_REPLY_CHUNK) : 0;
    copy_message(frame + FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN, req, r, from, n);
    size_t size = FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN + n;
    floem_udp_set_length(frame, size, 0);
    memcpy(out, frame, size);
    return size;
}
