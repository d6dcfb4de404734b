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
    struct floem_mc_msg m;
    switch (floem_mc_parse(udp.payload, udp.payload_len, &m)) {
    case FLOEM_MC_PARSED:
        break;
    case FLOEM_MC_TRUNCATED:
        return KVS_DROP_TOO_SHORT;
    case FLOEM_MC_BAD_MAGIC:
        return KVS_DROP_BAD_MAGIC;
    default:
        return KVS_DROP_BAD_LENGTH;
    }
    if (m.sequence != 0 || m.total != 1)
        return KVS_DROP_MULTI_DATAGRAM;
    if (m.magic != FLOEM_MC_REQUEST)
        return KVS_DROP_BAD_MAGIC;
    size_t whole = (size_t)FLOEM_MC_UDP_HDR_LEN + FLOEM_MC_HDR_LEN + m.extras_len + m.key_len
                   + m.value_len;
    return whole == udp.payload_len ? -1 : KVS_DROP_BAD_LENGTH;    /* no bytes after the body */
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

struct floem_mc_msg kvs_reply_to(struct kvs_packet *p, uint16_t status, const uint8_t *rec,
                                 uint32_t reclen, uint32_t now)
{
    struct floem_mc_msg r = {
        .request_id = floem_get16(&p->frame.request_id), .magic = FLOEM_MC_RESPONSE,
        .opcode = p->mc.opcode, .status = status, .opaque = floem_get32(&p->mc.opaque),
    };
    uint8_t op = p->mc.opcode;
    if (status == FLOEM_MC_OK && (op == FLOEM_MC_GET || op == FLOEM_MC_GETK)) {
        if (op == FLOEM_MC_GETK) {
            r.key = kvs_key(p);
            r.key_len = kvs_keylen(p);
        }
        if (!kvs_record_live(rec, reclen, now)) {
            r.status = FLOEM_MC_KEY_NOT_FOUND;
            if (op == FLOEM_MC_GETK)        /* memcached echoes the key instead of a message */
                return r;
        } else {
            r.extras = rec;                 /* the flags */
            r.extras_len = 4;
            r.value = rec + KVS_RECORD_HEADER;
            r.value_len = reclen - KVS_RECORD_HEADER;
            return r;
        }
    }
    if (r.status != FLOEM_MC_OK) {
        r.value = (const uint8_t *)error_text(r.status);
        r.value_len = (uint32_t)strlen((const char *)r.value);
    }
    return r;
}

static size_t message_len(const struct floem_mc_msg *r)
{
    return FLOEM_MC_HDR_LEN + (size_t)r->extras_len + r->key_len + r->value_len;
}

unsigned kvs_reply_datagrams(const struct floem_mc_msg *r)
{
    return (unsigned)((message_len(r) + KVS_REPLY_CHUNK - 1) / KVS_REPLY_CHUNK);
}

/* The bytes of the message datagram `seq` carries. */
static size_t part_len(const struct floem_mc_msg *r, unsigned seq)
{
    size_t total = message_len(r), from = (size_t)seq * KVS_REPLY_CHUNK;
    return from >= total ? 0 : total - from < KVS_REPLY_CHUNK ? total - from : KVS_REPLY_CHUNK;
}

size_t kvs_reply_size(const struct floem_mc_msg *r, unsigned seq)
{
    return FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN + part_len(r, seq);
}

size_t kvs_reply_write(uint8_t *out, const struct kvs_packet *req, const struct floem_mc_msg *r,
                       unsigned seq)
{
    /* The whole reply as one datagram first: its parts may point into the request's
     * frame, which `out` may be. */
    uint8_t whole[FLOEM_MC_UDP_HDR_LEN + KVS_REPLY_MESSAGE_MAX];
    floem_mc_build(whole, sizeof whole, r);
    size_t n = part_len(r, seq);
    memmove(out, req, FLOEM_UDP_FRAME_LEN);
    floem_udp_swap(out);
    struct kvs_packet *reply = (struct kvs_packet *)out;
    memcpy(&reply->frame, whole, FLOEM_MC_UDP_HDR_LEN);
    floem_put16(&reply->frame.sequence, (uint16_t)seq);
    floem_put16(&reply->frame.total, (uint16_t)kvs_reply_datagrams(r));
    memcpy(out + FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN,
           whole + FLOEM_MC_UDP_HDR_LEN + (size_t)seq * KVS_REPLY_CHUNK, n);
    size_t size = kvs_reply_size(r, seq);
    floem_udp_set_length(out, size, 0);
    return size;
}
