/* The memcached binary protocol over UDP, for floem.library.memcached.
 *
 * A memcached UDP datagram is an 8-byte frame header (request id, sequence
 * number, total datagrams, reserved) followed by a binary-protocol message:
 * a 24-byte header, then extras, key and value. Multi-byte fields are in
 * network byte order on the wire; struct floem_mc_msg holds them in host
 * order with pointers to the variable parts.
 */
#ifndef FLOEM_LIBRARY_MEMCACHED_H
#define FLOEM_LIBRARY_MEMCACHED_H

#include <stddef.h>
#include <stdint.h>

#define FLOEM_MC_UDP_HDR_LEN 8
#define FLOEM_MC_HDR_LEN 24
#define FLOEM_MC_REQUEST 0x80
#define FLOEM_MC_RESPONSE 0x81

enum floem_mc_opcode {
    FLOEM_MC_GET = 0x00, FLOEM_MC_SET = 0x01, FLOEM_MC_ADD = 0x02, FLOEM_MC_REPLACE = 0x03,
    FLOEM_MC_DELETE = 0x04, FLOEM_MC_INCREMENT = 0x05, FLOEM_MC_DECREMENT = 0x06,
    FLOEM_MC_QUIT = 0x07, FLOEM_MC_FLUSH = 0x08, FLOEM_MC_GETQ = 0x09, FLOEM_MC_NOOP = 0x0a,
    FLOEM_MC_VERSION = 0x0b, FLOEM_MC_GETK = 0x0c, FLOEM_MC_GETKQ = 0x0d,
};

enum floem_mc_status {
    FLOEM_MC_OK = 0x0000, FLOEM_MC_KEY_NOT_FOUND = 0x0001, FLOEM_MC_KEY_EXISTS = 0x0002,
    FLOEM_MC_VALUE_TOO_LARGE = 0x0003, FLOEM_MC_INVALID_ARGUMENTS = 0x0004,
    FLOEM_MC_ITEM_NOT_STORED = 0x0005, FLOEM_MC_UNKNOWN_COMMAND = 0x0081,
    FLOEM_MC_OUT_OF_MEMORY = 0x0082,
};

/* The 8-byte memcached UDP frame header, as on the wire. */
struct floem_mc_udp_hdr {
    uint16_t request_id;
    uint16_t sequence;            /* this datagram's number, from 0 */
    uint16_t total;               /* datagrams in the message */
    uint16_t reserved;
} __attribute__((packed));

/* The 24-byte binary protocol header, as on the wire. */
struct floem_mc_hdr {
    uint8_t magic;                /* 0x80 request, 0x81 response */
    uint8_t opcode;
    uint16_t key_len;
    uint8_t extras_len;
    uint8_t data_type;
    uint16_t status;              /* vbucket id in a request */
    uint32_t body_len;            /* extras + key + value */
    uint32_t opaque;
    uint64_t cas;
} __attribute__((packed));

/* A message: header values in host byte order, pointers to its parts. */
struct floem_mc_msg {
    uint16_t request_id;
    uint16_t sequence;
    uint16_t total;
    uint8_t magic;
    uint8_t opcode;
    uint8_t data_type;
    uint16_t status;              /* vbucket id in a request */
    uint32_t opaque;
    uint64_t cas;
    const uint8_t *extras;
    uint8_t extras_len;
    const uint8_t *key;
    uint16_t key_len;
    const uint8_t *value;
    uint32_t value_len;
};

/* Why floem_mc_parse rejected a datagram. */
enum floem_mc_verdict {
    FLOEM_MC_PARSED = 0,
    FLOEM_MC_TRUNCATED,           /* shorter than the two headers */
    FLOEM_MC_BAD_MAGIC,           /* neither a request nor a response */
    FLOEM_MC_BAD_LENGTHS,         /* extras + key longer than the body */
    FLOEM_MC_BODY_TRUNCATED,      /* the body reaches past the datagram */
    FLOEM_MC_VERDICTS
};

/* Parse the datagram of `len` bytes at `data` into `msg` (pointers into the datagram).
 * Reads only bytes below `len`; bytes after the body are ignored. */
enum floem_mc_verdict floem_mc_parse(const void *data, size_t len, struct floem_mc_msg *msg);

/* Write `msg` as a datagram (frame header, binary header, extras, key, value) into `out`,
 * which has room for `cap` bytes; returns its length, or 0 when it does not fit.
 * The extras, key and value must not overlap `out`. */
size_t floem_mc_build(void *out, size_t cap, const struct floem_mc_msg *msg);

#endif
