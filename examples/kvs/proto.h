/* The memcached binary protocol over UDP, as the key-value store's elements use it.
 *
 * A request frame is Ethernet / IPv4 (no options) / UDP / the 8-byte memcached UDP
 * frame header / the 24-byte binary header / extras, key, value. kvs_check() accepts
 * only whole single-datagram requests, reading nothing at or past the frame's end;
 * after it, struct kvs_packet lays the parts over the frame (multi-byte fields in
 * network order: read them with floem_get16/32).
 *
 * What the store keeps under a key is a *record*: the flags and the expiry time
 * (big-endian, 4 bytes each; expiry in absolute seconds, 0 = never) followed by the
 * value. A record's bytes mean the same on every device, so records cross queues and
 * sit in the NIC's cache as they are. An empty record (length 0) means "no value":
 * what a get of a missing key fetches, and the NIC cache may keep it as such.
 *
 * A reply is built from the request's headers (the addresses swapped): its first datagram
 * into the request's own frame when it is no longer than the request (kvs_request_size),
 * else into a frame of its own; the others, when the reply is longer than one datagram
 * carries (memcached's 1400 bytes, frame header included), into frames the caller
 * allocates (kvs_reply_size bytes each).
 */
#ifndef KVS_PROTO_H
#define KVS_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "headers.h"
#include "memcached.h"

#define KVS_KEY_MAX 250
/* Largest datagram the packet I/O backends deliver (2048-byte buffers, 42 bytes of headers). */
#define KVS_DATAGRAM_MAX 2006
/* Largest value a SET can carry: a datagram holding the shortest key. */
#define KVS_VALUE_LIMIT (KVS_DATAGRAM_MAX - FLOEM_MC_UDP_HDR_LEN - FLOEM_MC_HDR_LEN - 8 - 1)
#define KVS_RECORD_HEADER 8
/* Datagrams of a reply: at most this many bytes each, the 8-byte frame header included. */
#define KVS_REPLY_DATAGRAM 1400
#define KVS_REPLY_CHUNK (KVS_REPLY_DATAGRAM - FLOEM_MC_UDP_HDR_LEN)
/* The longest reply message: header, flags, the longest key and value. */
#define KVS_REPLY_MESSAGE_MAX (FLOEM_MC_HDR_LEN + 4 + KVS_KEY_MAX + KVS_VALUE_LIMIT)
/* Expiry times above 30 days are absolute Unix times; below, seconds from now. */
#define KVS_RELATIVE_EXPIRY_MAX (60 * 60 * 24 * 30)

struct kvs_packet {
    struct floem_udp_frame udp;
    struct floem_mc_udp_hdr frame;
    struct floem_mc_hdr mc;
    uint8_t body[];                 /* extras, key, value */
} __attribute__((packed));

/* Why kvs_check() refused a frame; counted per reason by ParseRequest. */
enum kvs_drop {
    KVS_DROP_NOT_UDP,               /* not a whole Ethernet/IPv4/UDP frame (CheckUDP's reasons) */
    KVS_DROP_IP_OPTIONS,            /* an IPv4 header with options */
    KVS_DROP_TOO_SHORT,             /* shorter than the two memcached headers */
    KVS_DROP_MULTI_DATAGRAM,        /* a request spread over several datagrams */
    KVS_DROP_BAD_MAGIC,             /* not a binary-protocol request */
    KVS_DROP_BAD_LENGTH,            /* body length and datagram disagree, or extras + key > body */
    KVS_DROPS
};

/* -1 when `frame` (`size` bytes) is a whole single-datagram request, else why not. */
int kvs_check(const uint8_t *frame, size_t size);

/* The parts of an accepted request, in host order. */
static inline uint8_t kvs_extlen(const struct kvs_packet *p) { return p->mc.extras_len; }
static inline uint16_t kvs_keylen(const struct kvs_packet *p) { return floem_get16(&p->mc.key_len); }
static inline uint8_t *kvs_key(struct kvs_packet *p) { return p->body + kvs_extlen(p); }
static inline uint32_t kvs_vallen(const struct kvs_packet *p)
{
    return floem_get32(&p->mc.body_len) - kvs_extlen(p) - kvs_keylen(p);
}
static inline uint8_t *kvs_value(struct kvs_packet *p) { return kvs_key(p) + kvs_keylen(p); }
/* The bytes of the request's frame: its headers and body, up to the end of its datagram. */
static inline size_t kvs_request_size(const struct kvs_packet *p)
{
    return FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN + FLOEM_MC_HDR_LEN
           + (size_t)floem_get32(&p->mc.body_len);
}

/* The status an accepted request gets before the store is asked: FLOEM_MC_OK for a
 * well-formed GET, GETK, SET, DELETE or NOOP; FLOEM_MC_VALUE_TOO_LARGE for a SET whose
 * value is longer than `value_max`; FLOEM_MC_INVALID_ARGUMENTS for arguments memcached
 * rejects (a missing or over-long key, extras where none belong, a SET without its
 * 8 bytes of extras); FLOEM_MC_UNKNOWN_COMMAND for any other opcode. */
uint16_t kvs_validate(struct kvs_packet *p, uint32_t value_max);

/* The record of a SET: flags, expiry (made absolute from `now`), value; into `rec`,
 * which has room for KVS_RECORD_HEADER + the value. Returns its length. */
uint32_t kvs_record_make(uint8_t *rec, struct kvs_packet *p, uint32_t now);
/* The expiry time of a record (0: never). */
static inline uint32_t kvs_record_expiry(const uint8_t *rec) { return floem_get32(rec + 4); }
/* True for a record holding a value that has not expired at `now`. */
static inline bool kvs_record_live(const uint8_t *rec, uint32_t len, uint32_t now)
{
    if (rec == NULL || len < KVS_RECORD_HEADER)
        return false;
    uint32_t expiry = kvs_record_expiry(rec);
    return expiry == 0 || now < expiry;
}

/* The reply memcached gives to request `p` (as a struct floem_mc_msg, memcached.h): a GET
 * or GETK from its record (`rec`, `reclen`; a hit when live at `now`), any other opcode
 * from `status` (with memcached's message for an error). The reply points into `p`,
 * `rec` and constant text. */
struct floem_mc_msg kvs_reply_to(struct kvs_packet *p, uint16_t status, const uint8_t *rec,
                                 uint32_t reclen, uint32_t now);
/* How many datagrams the reply takes. */
unsigned kvs_reply_datagrams(const struct floem_mc_msg *r);
/* The bytes of the frame of datagram `seq` of the reply (at most FLOEM_UDP_FRAME_LEN +
 * KVS_REPLY_DATAGRAM). */
size_t kvs_reply_size(const struct floem_mc_msg *r, unsigned seq);
/* Write datagram `seq` of reply `r` to request `req` as a whole frame of
 * kvs_reply_size(r, seq) bytes into `out`: the request's headers with the addresses
 * swapped, lengths set, the frame header, and its part of the message. `out` may be the
 * request's own frame when the datagram is no longer than the request. Returns the
 * frame's length. */
size_t kvs_reply_write(uint8_t *out, const struct kvs_packet *req, const struct floem_mc_msg *r,
                       unsigned seq);

/* What a NIC cache held for a DELETE's key (Request.cached): the store's answer counts
 * only when it held nothing, since a cached key holds the key's latest value. */
enum kvs_cached { KVS_CACHED_NO = 0, KVS_CACHED_LIVE = 1, KVS_CACHED_DEAD = 2 };

/* The clock of expiry times: seconds since the epoch. */
static inline uint32_t kvs_now(void)
{
    return (uint32_t)time(NULL);
}

/* The hash of a key that picks its bucket in the store. */
static inline uint32_t kvs_hash(const uint8_t *key, uint16_t keylen)
{
    uint32_t h = 2166136261u;
    for (uint16_t i = 0; i < keylen; i++)
        h = (h ^ key[i]) * 16777619u;
    return h;
}

#endif
