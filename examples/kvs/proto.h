/* memcached's protocols, binary and text, over UDP and TCP, as the key-value store's elements
 * use them.
 *
 * A request frame comes from UDP or from a TCP stream (floem/net.h). Over UDP it is Ethernet
 * / IPv4 (no options) / UDP / the 8-byte memcached UDP frame header / a request; over TCP it
 * is Ethernet / IPv4 / TCP / one request, as the memcached framer delimited it on the stream
 * (library/c/memcached.h). A request whose first byte is 0x80 is binary (the 24-byte header,
 * extras, key, value); any other is text: command lines ending in "\n", each storage command
 * followed by its data block, parsed the way memcached 1.6 parses them. kvs_check() accepts
 * only whole requests, reading nothing at or past the frame's end; after it, kvs_mc() is the
 * binary header and kvs_text() the request's bytes, wherever the transport put them
 * (multi-byte fields in network order: read them with floem_get16/32).
 *
 * One datagram may carry several text commands, and a get several keys; memcached answers
 * each key and each command with datagrams of their own (over TCP with its bytes on the
 * stream, in order). kvs_split_next() walks a request's commands and keys the way memcached
 * does, and SplitRequests (elements.py) gives each its own frame, a *single request*: the
 * transport's headers, then one command line (a get of one key), then its data block; what
 * the answer depends on besides (kvs_split_flags) travels with it in the request's state.
 * Every function below after the splitting works on single requests. The frames of the
 * single requests of a datagram or of a TCP message, and those of their replies, are made
 * with floem_net_alloc_before, so that the replies leave in the order of the request,
 * whatever path each takes through the program.
 *
 * What the store keeps under a key is a *record*: the flags, the expiry time (absolute
 * seconds, 0 = never) and the CAS value (big-endian, 4, 4 and 8 bytes) followed by the
 * value. A record's bytes mean the same on every device, so records cross queues and
 * sit in the NIC's cache as they are. An empty record (length 0) means "no value": what a
 * get of a missing key fetches, and the NIC cache may keep it as such. A record is live
 * until it expires or a flush_all removes it: flush_all makes every record whose CAS is
 * below its own CAS value (the *oldest* live CAS) dead at once.
 *
 * Requests are described to the store by a `struct kvs_request` (kvs_parse): an operation
 * (enum kvs_op), a status (binary protocol statuses, and KVS_TEXT_* for the errors only
 * the text protocol has), the key, and an argument. A reply is built from the request's
 * headers (the addresses swapped): its last frame into the request's own frame when it is
 * no longer than the request (kvs_request_size), the others into frames the caller makes
 * (kvs_reply_size bytes each) before it: over UDP, datagrams of memcached's 1400 bytes, frame
 * header included; over TCP, pieces of the stream of up to a frame buffer each.
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
/* Where a request starts in its frame: after the memcached UDP frame header, or the TCP
 * header. */
#define KVS_UDP_HEADERS (FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN)
#define KVS_TCP_HEADERS FLOEM_TCP_FRAME_LEN
/* Largest value a SET can carry over UDP: a binary datagram holding the shortest key. */
#define KVS_DATAGRAM_VALUE_LIMIT (KVS_DATAGRAM_MAX - FLOEM_MC_UDP_HDR_LEN - FLOEM_MC_HDR_LEN - 8 - 1)
/* Largest value the store takes at all: a binary SET of the shortest key in the longest
 * message a TCP frame holds (floem/net.h's FLOEM_NET_MESSAGE_MAX, 65,494 bytes). */
#define KVS_VALUE_LIMIT (65535 - 20 - 20 - 1 - FLOEM_MC_HDR_LEN - 8 - 1)
#define KVS_RECORD_HEADER 16
#define KVS_RECORD_MAX (KVS_RECORD_HEADER + KVS_VALUE_LIMIT)
/* Datagrams of a reply: at most this many bytes each, the 8-byte frame header included. */
#define KVS_REPLY_DATAGRAM 1400
#define KVS_REPLY_CHUNK (KVS_REPLY_DATAGRAM - FLOEM_MC_UDP_HDR_LEN)
/* Pieces of a reply on a TCP stream: a frame buffer's worth each. */
#define KVS_STREAM_CHUNK (2048 - KVS_TCP_HEADERS)
/* The longest reply message: the longest value and what comes with it (at most a text VALUE
 * line with the longest key, flags, length and CAS and "END", or an mg line with every flag
 * it may return), or the statistics (kvs_stats_reply). */
#define KVS_REPLY_MESSAGE_MAX (400 + KVS_VALUE_LIMIT + 2048)
/* Expiry times above 30 days are absolute Unix times; below, seconds from now. */
#define KVS_RELATIVE_EXPIRY_MAX (60 * 60 * 24 * 30)
/* What memcached 1.6.18 says it is, to "version". */
#define KVS_VERSION "1.6.18"

struct kvs_packet {
    struct floem_udp_frame udp;
    struct floem_mc_udp_hdr frame;
    struct floem_mc_hdr mc;
    uint8_t body[];                 /* extras, key, value */
} __attribute__((packed));

/* Why a frame was refused; counted per reason by the parsing elements. */
enum kvs_drop {
    KVS_DROP_NOT_UDP,               /* not a whole Ethernet/IPv4/UDP (or TCP) frame */
    KVS_DROP_IP_OPTIONS,            /* an IPv4 header with options */
    KVS_DROP_TOO_SHORT,             /* shorter than the frame header, or than a binary header */
    KVS_DROP_MULTI_DATAGRAM,        /* a request spread over several datagrams */
    KVS_DROP_BAD_LENGTH,            /* binary: body length and datagram disagree, or extras + key > body */
    KVS_DROP_INCOMPLETE,            /* text: a line without its "\n", a data block cut short */
    KVS_DROP_UNREAD,                /* text after a get, mn or quit, which memcached ignores */
    KVS_DROPS
};

/* A request longer than the packet I/O backend's buffer arrives cut (floem/net.h): its
 * IPv4 (and UDP) lengths reach past the `size` bytes of `frame`. Make it a request of the
 * bytes it holds (lengths set to them), so that the request at its head can be answered
 * when it needs no more (a SET too large); true if it was cut. */
bool kvs_uncut(uint8_t *frame, size_t size);

/* -1 when `frame` (`size` bytes) is a whole single-datagram request or a TCP stream's
 * request, or the head of a binary SET (its extras and key, the value cut short: kvs_parse
 * judges it), else why not. A text request passes when it holds at least one byte;
 * kvs_split_next judges its commands. */
int kvs_check(const uint8_t *frame, size_t size);

/* Before kvs_check, cheaply: false for a frame whose request is binary or that is too short
 * to tell, true when it may be text (kvs_check then judges it). */
static inline bool kvs_maybe_text(const uint8_t *frame, size_t size)
{
    size_t at = size > 23 && frame[23] == FLOEM_IPPROTO_TCP ? KVS_TCP_HEADERS : KVS_UDP_HEADERS;
    return size > at && frame[at] != FLOEM_MC_REQUEST;
}

/* True for a request that came on a TCP stream (its frame's IPv4 protocol). */
static inline bool kvs_is_stream(const struct kvs_packet *p)
{
    return p->udp.ip.protocol == FLOEM_IPPROTO_TCP;
}
static inline size_t kvs_headers(const struct kvs_packet *p)
{
    return kvs_is_stream(p) ? KVS_TCP_HEADERS : KVS_UDP_HEADERS;
}
/* The request's bytes: what follows the headers, up to the datagram's or message's end. */
static inline const uint8_t *kvs_text(const struct kvs_packet *p)
{
    return (const uint8_t *)p + kvs_headers(p);
}
static inline size_t kvs_text_len(const struct kvs_packet *p)
{
    return kvs_is_stream(p) ? floem_get16(&p->udp.ip.total_len) - 40u
                            : floem_get16(&p->udp.udp.len) - 8u - FLOEM_MC_UDP_HDR_LEN;
}
/* The binary header of a request. */
static inline struct floem_mc_hdr *kvs_mc(const struct kvs_packet *p)
{
    return (struct floem_mc_hdr *)((uint8_t *)p + kvs_headers(p));
}
/* True for a text request (any first byte but the binary magic). */
static inline bool kvs_is_text(const struct kvs_packet *p)
{
    return kvs_mc(p)->magic != FLOEM_MC_REQUEST;
}

/* The bytes of an accepted request's frame: its headers and request. */
static inline size_t kvs_request_size(const struct kvs_packet *p)
{
    return kvs_headers(p) + kvs_text_len(p);
}

/* The parts of an accepted binary request, in host order. */
static inline uint8_t kvs_extlen(const struct kvs_packet *p) { return kvs_mc(p)->extras_len; }
static inline uint16_t kvs_keylen(const struct kvs_packet *p) { return floem_get16(&kvs_mc(p)->key_len); }
static inline uint8_t *kvs_extras(struct kvs_packet *p) { return (uint8_t *)(kvs_mc(p) + 1); }
static inline uint8_t *kvs_key(struct kvs_packet *p) { return kvs_extras(p) + kvs_extlen(p); }
static inline uint32_t kvs_vallen(const struct kvs_packet *p)
{
    return floem_get32(&kvs_mc(p)->body_len) - kvs_extlen(p) - kvs_keylen(p);
}
static inline uint8_t *kvs_value(struct kvs_packet *p) { return kvs_key(p) + kvs_keylen(p); }

/* ---- splitting a text request into single requests -------------------------------------- */

/* One single request of a text datagram (or TCP message): its command line (without
 * "\r\n"), its data block (`data_len` bytes after the line, 0 if none) and, for a get, one
 * of its keys. */
struct kvs_split {
    size_t line, line_len;          /* offsets into the datagram's text */
    size_t key, key_len;            /* a get's key (key_len 0: not a get) */
    size_t data, data_len;
    bool more_keys;                 /* a get with more keys after this one */
    bool first;                     /* the first of the datagram to be answered */
    bool silent;                    /* a command answered with nothing (noreply; a meta
                                       command's q, taken to leave out its answer) */
    bool sends;                     /* a get, mn or quit: memcached sends what it has and
                                       reads nothing more of the datagram */
    size_t next;                    /* where the next request starts */
};

/* What the answer to a single request depends on besides the request (SplitRequests keeps
 * it in the state's `part`, kvs_reply reads it): more keys of its get follow (no "END" with
 * its answer), and over UDP it answers a miss with an empty datagram (memcached sends the
 * empty answer to a get's key only when it is the first it has to send, and drops any
 * other). */
enum { KVS_SPLIT_MORE_KEYS = 1, KVS_SPLIT_FIRST = 2 };
static inline uint8_t kvs_split_flags(const struct kvs_split *s)
{
    return (uint8_t)((s->more_keys ? KVS_SPLIT_MORE_KEYS : 0) | (s->first ? KVS_SPLIT_FIRST : 0));
}

/* The single request of `text` (`len` bytes) at offset `at`, memcached's way, after `prev`
 * (NULL: the first): the next key of the get in progress or the next command and its data
 * block. A data block cut short makes the last request, with what there is of it
 * (kvs_parse answers it if its value is too large anyway, and drops it otherwise, as
 * memcached waits for what never comes). False when none is left (a line without "\n")
 * or when `prev` was a get, mn or quit (after which memcached 1.6 reads no more of a
 * datagram). */
bool kvs_split_next(const uint8_t *text, size_t len, size_t at, const struct kvs_split *prev,
                    struct kvs_split *out);

/* The bytes of the frame of single request `s` of the text request in frame `from`. */
size_t kvs_split_size(const uint8_t *from, const struct kvs_split *s);
/* Write single request `s` of the text request in frame `from` as a whole frame into `out`
 * (room for kvs_split_size bytes; may be `from` itself when `s` is its last request).
 * Returns the frame's length. */
size_t kvs_split_write(uint8_t *out, const uint8_t *from, const struct kvs_split *s);

/* ---- single requests --------------------------------------------------------------------- */

enum kvs_op {                       /* binary opcodes where memcached has them */
    KVS_OP_GET = 0x00, KVS_OP_SET = 0x01, KVS_OP_ADD = 0x02, KVS_OP_REPLACE = 0x03,
    KVS_OP_DELETE = 0x04, KVS_OP_INCR = 0x05, KVS_OP_DECR = 0x06, KVS_OP_APPEND = 0x0e,
    KVS_OP_PREPEND = 0x0f, KVS_OP_TOUCH = 0x1c,
    KVS_OP_CAS = 0x40,              /* a store if the key's CAS is the argument */
    KVS_OP_GAT = 0x41,              /* get and touch: a TOUCH answered with the record */
    KVS_OP_RESTORE = 0x42,          /* put back a record a NIC cache held, answering nothing */
    KVS_OP_STATS = 0x43,            /* the statistics: the store's figures, as a record */
    KVS_OP_NONE = 0xff,             /* answered without the store */
};

/* Statuses of the text protocol's own errors (beside FLOEM_MC_*). */
enum kvs_text_status {
    KVS_TEXT_ERROR = 0x1000,        /* ERROR */
    KVS_TEXT_BAD_FORMAT,            /* CLIENT_ERROR bad command line format */
    KVS_TEXT_BAD_CHUNK,             /* CLIENT_ERROR bad data chunk */
    KVS_TEXT_BAD_EXPTIME,           /* CLIENT_ERROR invalid exptime argument */
    KVS_TEXT_BAD_DELTA,             /* CLIENT_ERROR invalid numeric delta argument */
    KVS_TEXT_NON_NUMERIC,           /* CLIENT_ERROR cannot increment or decrement non-numeric value */
    KVS_TEXT_DELETE_USAGE,          /* CLIENT_ERROR bad command line format.  Usage: ... */
    KVS_TEXT_INVALID_FLAG,          /* CLIENT_ERROR invalid flag */
    KVS_TEXT_DUPLICATE_FLAG,        /* CLIENT_ERROR duplicate flag */
    KVS_TEXT_BAD_TOKEN,             /* CLIENT_ERROR bad token in command line format */
    KVS_TEXT_BAD_MODE,              /* CLIENT_ERROR invalid mode for ms M token */
    KVS_TEXT_MODE_LENGTH,           /* CLIENT_ERROR incorrect length for M token */
    KVS_TEXT_FLAGS_TOO_LONG,        /* CLIENT_ERROR options flags are too long (mg) */
    KVS_TEXT_OPTIONS_TOO_LONG,      /* CLIENT_ERROR options flags too long (ms, md) */
    KVS_TEXT_OPAQUE_TOO_LONG,       /* CLIENT_ERROR opaque token too long */
    KVS_TEXT_MDELETE_FLAG,          /* CLIENT_ERROR invalid or duplicate flag */
    KVS_TEXT_QUIET,                 /* answered with nothing (quit) */
};
/* The binary protocol's "Not supported" (text: SERVER_ERROR not supported): an update in a
 * design that cannot make one. */
#define KVS_NOT_SUPPORTED 0x0083

/* A single request, parsed (kvs_parse). */
struct kvs_request {
    uint8_t op;                     /* enum kvs_op */
    uint16_t status;                /* FLOEM_MC_OK, or the error to answer with */
    const uint8_t *key;
    uint16_t keylen;
    uint64_t arg;                   /* CAS to compare (0: none), INCR/DECR's delta, the
                                       absolute expiry time of a TOUCH/GAT, or the time of a
                                       flush_all */
    bool writes;                    /* takes a new CAS value when it succeeds */
    bool flush;                     /* a flush_all: `arg` is its time (0: now) */
};

/* Parse single request `p` (accepted by kvs_check; a text one as kvs_split_write made it)
 * for the store: what it asks, or the status it is answered with at once. `now` turns
 * relative expiry times into absolute ones; a value longer than `value_max` is too large,
 * whether the datagram holds it or not (memcached answers from the command); over UDP no
 * value longer than a datagram's frame holds (KVS_DATAGRAM_VALUE_LIMIT). Returns -1,
 * or why the request is dropped: a storing command whose value is not too large but cut
 * short (KVS_DROP_INCOMPLETE, KVS_DROP_BAD_LENGTH for binary).
 *
 * Binary requests: every opcode memcached 1.6 knows without SASL (GET, GETQ, GETK, GETKQ,
 * SET, ADD, REPLACE and their quiet forms, DELETE(Q), INCREMENT(Q), DECREMENT(Q), QUIT(Q),
 * FLUSH(Q), NOOP, VERSION, APPEND(Q), PREPEND(Q), STAT, TOUCH, GAT(Q), GATK(Q)), checked as
 * memcached checks their lengths; any other is "Unknown command". A quiet request is
 * answered only when it fails (a GETQ only when it hits). */
int kvs_parse(struct kvs_packet *p, uint32_t value_max, uint32_t now, struct kvs_request *r);

/* Whether the connection of request `p`, answered with `status`, closes after the answer,
 * as memcached closes it: a text quit or HTTP request, a binary QUIT(Q), a binary request
 * whose lengths are wrong (then answered "Invalid arguments" or "Unknown command"). Over UDP
 * nothing closes (inline: the common case, a datagram, costs a test). */
bool kvs_stream_closes(struct kvs_packet *p, uint16_t status);
static inline bool kvs_closes(struct kvs_packet *p, uint16_t status)
{
    return kvs_is_stream(p) && kvs_stream_closes(p, status);
}

/* The key of single request `p` (as kvs_parse finds it), its length in *keylen. */
const uint8_t *kvs_request_key(struct kvs_packet *p, uint16_t *keylen);

/* The record a storing request makes (flags, expiry made absolute from `now`, `cas`, value)
 * into `rec` (room for KVS_RECORD_MAX bytes); returns its length, 0 for a request that
 * stores none. A binary INCREMENT or DECREMENT makes the record it creates when the key
 * has none (its initial value), unless its expiration is 0xffffffff. */
uint32_t kvs_record_make(uint8_t *rec, struct kvs_packet *p, uint32_t now, uint64_t cas);

static inline uint32_t kvs_record_flags(const uint8_t *rec) { return floem_get32(rec); }
/* The expiry time of a record (0: never). */
static inline uint32_t kvs_record_expiry(const uint8_t *rec) { return floem_get32(rec + 4); }
static inline uint64_t kvs_record_cas(const uint8_t *rec)
{
    return (uint64_t)floem_get32(rec + 8) << 32 | floem_get32(rec + 12);
}
static inline void kvs_record_set_cas(uint8_t *rec, uint64_t cas)
{
    floem_put32(rec + 8, (uint32_t)(cas >> 32));
    floem_put32(rec + 12, (uint32_t)cas);
}
/* True for a record holding a value that has not expired at `now` nor been flushed (its
 * CAS below `oldest`). */
static inline bool kvs_record_live(const uint8_t *rec, uint32_t len, uint32_t now,
                                   uint64_t oldest)
{
    if (rec == NULL || len < KVS_RECORD_HEADER)
        return false;
    uint32_t expiry = kvs_record_expiry(rec);
    return (expiry == 0 || now < expiry) && kvs_record_cas(rec) >= oldest;
}

/* What an update (ADD, REPLACE, APPEND, PREPEND, CAS, INCR, DECR, TOUCH, GAT, a SET or DELETE
 * comparing a CAS value, RESTORE) makes of the key's record `old` (`oldlen` bytes; NULL when
 * the key has no live one): the new record into `out` (room for KVS_RECORD_MAX bytes) and
 * its length returned, or KVS_UPDATE_KEEP (leave the key alone) or KVS_UPDATE_DELETE; and
 * in *status the answer. `rec` is the request's record (a storing request's, else NULL),
 * `arg` its argument, `cas` the CAS value of what it stores, `value_max` the longest value. */
#define KVS_UPDATE_KEEP (-1)
#define KVS_UPDATE_DELETE (-2)
long kvs_update(uint8_t op, const uint8_t *old, uint32_t oldlen, const uint8_t *rec,
                uint32_t reclen, uint64_t arg, uint64_t cas, uint32_t value_max, uint8_t *out,
                uint16_t *status);

/* The reply to single request `p` into `msg` (room for KVS_REPLY_MESSAGE_MAX bytes): a get's
 * from its record (`rec`, `reclen`; a hit when live at `now` and `oldest`), an INCR/DECR's
 * from the new record, the others from `status` (and `cas`, the CAS value of what a write
 * stored); `part` is the request's kvs_split_flags. Returns the message's length; -1 when it
 * is answered with nothing (noreply, a quiet binary request that succeeded). */
long kvs_reply(uint8_t *msg, struct kvs_packet *p, uint16_t status, const uint8_t *rec,
               uint32_t reclen, uint64_t cas, uint32_t now, uint64_t oldest, uint8_t part);

/* What `stats` reports: the process's, the transport's and the replies' counts, and the
 * store's figures when the design could ask the store (`store`). */
struct kvs_stats {
    uint32_t pid, uptime, time, threads;
    uint64_t curr_connections, total_connections, bytes_read, bytes_written;
    uint64_t cmd_get, cmd_set, cmd_flush, cmd_touch, get_hits, get_misses, delete_hits,
        delete_misses, incr_hits, incr_misses, decr_hits, decr_misses, cas_hits, cas_misses,
        cas_badval, touch_hits, touch_misses;
    bool store;
    uint64_t limit_maxbytes, curr_items, total_items, bytes, evictions;
};
/* The store's figures (KVS_OP_STATS: curr_items, total_items, bytes, evictions and
 * limit_maxbytes, 8 bytes each, big-endian) as a record into `rec` (room for KVS_RECORD_MAX
 * bytes); returns its length. */
#define KVS_STATS_FIGURES 5
uint32_t kvs_stats_record(uint8_t *rec, const uint64_t figures[KVS_STATS_FIGURES]);
/* The store's figures of such a record into `st` (none: a record of another length). */
void kvs_stats_from_record(struct kvs_stats *st, const uint8_t *rec, uint32_t reclen);
/* The reply to a stats request `p` (text "stats" or binary STAT, with what it asks for)
 * into `msg` (room for KVS_REPLY_MESSAGE_MAX bytes): every statistic of `st`, "RESET" to
 * "stats reset", memcached's errors to the rest. Returns the message's length. */
long kvs_stats_reply(uint8_t *msg, struct kvs_packet *p, const struct kvs_stats *st);
/* True for "stats reset" (binary: STAT of the key "reset"), which zeroes the counts. */
bool kvs_stats_resets(struct kvs_packet *p);
/* The seconds since the process started (memcached's uptime). */
uint32_t kvs_uptime(void);

/* How many frames a reply message of `len` bytes to request `req` takes: over UDP at least one
 * datagram (memcached sends a message of 0 bytes as one datagram that says it is 0 of 0), over TCP as
 * many pieces of the stream as it needs (none for 0 bytes). */
unsigned kvs_reply_frames(const struct kvs_packet *req, size_t len);
/* The bytes of frame `seq` of a reply message of `len` bytes to request `req`. */
size_t kvs_reply_size(const struct kvs_packet *req, size_t len, unsigned seq);
/* Write frame `seq` of reply message `msg` (`len` bytes) to request `req` as a whole frame
 * of kvs_reply_size(req, len, seq) bytes into `out`: the request's headers with the
 * addresses swapped, lengths set, over UDP the frame header, and its part of the message.
 * `out` may be the request's own frame when the frame is no longer than the request
 * (kvs_request_size). Returns the frame's length. */
size_t kvs_reply_write(uint8_t *out, const struct kvs_packet *req, const uint8_t *msg,
                       size_t len, unsigned seq);

/* What a NIC cache held for a DELETE's key (Request.cached): the store's answer counts
 * only when it held nothing, since a cached key holds the key's latest value. */
enum kvs_cached { KVS_CACHED_NO = 0, KVS_CACHED_LIVE = 1, KVS_CACHED_DEAD = 2 };

/* The clock of expiry times: seconds since the epoch. */
static inline uint32_t kvs_now(void)
{
    return (uint32_t)time(NULL);
}

/* The hash of a key that picks its bucket in the store (and its host thread in the split
 * designs): the key read 8 bytes a turn (little-endian, so that the NIC and the host agree
 * whatever their byte order), each word mixed in by a multiplication, the whole finished by
 * MurmurHash3's 64-bit finalizer, so that every bit of the key moves the low bits a bucket
 * index takes. */
static inline uint32_t kvs_hash(const uint8_t *key, uint16_t keylen)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ keylen;
    uint16_t i = 0;
    for (; i + 8 <= keylen; i += 8) {
        const uint8_t *k = key + i;         /* one load where the host is little-endian */
        uint64_t w = (uint64_t)k[0] | (uint64_t)k[1] << 8 | (uint64_t)k[2] << 16
                     | (uint64_t)k[3] << 24 | (uint64_t)k[4] << 32 | (uint64_t)k[5] << 40
                     | (uint64_t)k[6] << 48 | (uint64_t)k[7] << 56;
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    for (unsigned b = 0; i < keylen; i++, b++)
        w |= (uint64_t)key[i] << (8 * b);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (uint32_t)h;
}

/* ---- CAS values and flush_all (where requests are received) ------------------------------- */

/* CAS values are handed out where requests are received, from `last` (the latest handed
 * out); `oldest` is the oldest live one (what flush_all moved up); `flush_at` the time of a
 * delayed flush_all still to come (0: none). Any number of threads may call these. */

/* A new CAS value for a request that writes. */
static inline uint64_t kvs_cas_next(uint64_t *last)
{
    return __atomic_add_fetch(last, 1, __ATOMIC_RELAXED);
}

/* Give back CAS value `cas` of a write that did not happen, when nothing newer was handed
 * out since (so that CAS values count successful writes only, as memcached's do). */
static inline void kvs_cas_unused(uint64_t *last, uint64_t cas)
{
    uint64_t expected = cas;
    __atomic_compare_exchange_n(last, &expected, cas - 1, false, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
}

static inline void kvs_cas_raise(uint64_t *oldest, uint64_t to)
{
    uint64_t seen = __atomic_load_n(oldest, __ATOMIC_RELAXED);
    while (seen < to && !__atomic_compare_exchange_n(oldest, &seen, to, true, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED))
        ;
}

/* The oldest live CAS value for a request received at `now`: a delayed flush_all whose time
 * has come first flushes every value handed out so far. */
static inline uint64_t kvs_cas_oldest(uint64_t *last, uint64_t *oldest, uint32_t *flush_at,
                                      uint32_t now)
{
    uint32_t at = __atomic_load_n(flush_at, __ATOMIC_RELAXED);
    if (__builtin_expect(at != 0, 0) && now >= at
        && __atomic_compare_exchange_n(flush_at, &at, 0, false, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED))
        kvs_cas_raise(oldest, __atomic_load_n(last, __ATOMIC_RELAXED) + 1);
    return __atomic_load_n(oldest, __ATOMIC_RELAXED);
}

/* flush_all at `when` (kvs_request.arg: 0 now, else a relative or absolute time), received
 * at `now`, as memcached does it: one second early, and at once (taking a CAS value of its
 * own, below which every record is dead) when that is not in the future. */
static inline void kvs_cas_flush(uint64_t *last, uint64_t *oldest, uint32_t *flush_at,
                                 uint32_t when, uint32_t now)
{
    uint32_t at = when == 0 ? now : when <= KVS_RELATIVE_EXPIRY_MAX ? now + when : when;
    if (at - 1 <= now) {
        __atomic_store_n(flush_at, 0, __ATOMIC_RELAXED);
        kvs_cas_raise(oldest, kvs_cas_next(last));
    } else {
        __atomic_store_n(flush_at, at - 1, __ATOMIC_RELAXED);
    }
}

#endif
