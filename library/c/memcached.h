/* The memcached protocols, for floem.library.memcached and floem.library.stream.
 *
 * A memcached UDP datagram is an 8-byte frame header (request id, sequence
 * number, total datagrams, reserved) followed by a binary-protocol message:
 * a 24-byte header, then extras, key and value. Multi-byte fields are in
 * network byte order on the wire; struct floem_mc_msg holds them in host
 * order with pointers to the variable parts. Over TCP the same messages follow
 * each other on the stream without the frame header.
 *
 * The text protocol: command lines ending in "\n", split into tokens at spaces
 * and read the way memcached 1.6 reads them (floem_mc_tokenize and the
 * floem_mc_read_* numbers), a storage command followed by its data block.
 *
 * The framers (floem/net.h's floem_frame_fn) say where a request ends on a TCP
 * stream, the way memcached's connection state machine reads one: a text command
 * line and the data block memcached reads or swallows after it
 * (floem_frame_memcached_text); a binary header and its body
 * (floem_frame_memcached_binary); either, by the first byte of the connection
 * (floem_frame_memcached, memcached's -B auto).
 */
#ifndef FLOEM_LIBRARY_MEMCACHED_H
#define FLOEM_LIBRARY_MEMCACHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FLOEM_MC_UDP_HDR_LEN 8
#define FLOEM_MC_HDR_LEN 24
#define FLOEM_MC_REQUEST 0x80
#define FLOEM_MC_RESPONSE 0x81

enum floem_mc_opcode {
    FLOEM_MC_GET = 0x00, FLOEM_MC_SET = 0x01, FLOEM_MC_ADD = 0x02, FLOEM_MC_REPLACE = 0x03,
    FLOEM_MC_DELETE = 0x04, FLOEM_MC_INCREMENT = 0x05, FLOEM_MC_DECREMENT = 0x06,
    FLOEM_MC_QUIT = 0x07, FLOEM_MC_FLUSH = 0x08, FLOEM_MC_GETQ = 0x09, FLOEM_MC_NOOP = 0x0a,
    FLOEM_MC_VERSION = 0x0b, FLOEM_MC_GETK = 0x0c, FLOEM_MC_GETKQ = 0x0d,
    FLOEM_MC_APPEND = 0x0e, FLOEM_MC_PREPEND = 0x0f, FLOEM_MC_STAT = 0x10, FLOEM_MC_SETQ = 0x11,
    FLOEM_MC_ADDQ = 0x12, FLOEM_MC_REPLACEQ = 0x13, FLOEM_MC_DELETEQ = 0x14,
    FLOEM_MC_INCREMENTQ = 0x15, FLOEM_MC_DECREMENTQ = 0x16, FLOEM_MC_QUITQ = 0x17,
    FLOEM_MC_FLUSHQ = 0x18, FLOEM_MC_APPENDQ = 0x19, FLOEM_MC_PREPENDQ = 0x1a,
    FLOEM_MC_VERBOSITY = 0x1b, FLOEM_MC_TOUCH = 0x1c, FLOEM_MC_GAT = 0x1d, FLOEM_MC_GATQ = 0x1e,
    FLOEM_MC_GATK = 0x23, FLOEM_MC_GATKQ = 0x24,
};

enum floem_mc_status {
    FLOEM_MC_OK = 0x0000, FLOEM_MC_KEY_NOT_FOUND = 0x0001, FLOEM_MC_KEY_EXISTS = 0x0002,
    FLOEM_MC_VALUE_TOO_LARGE = 0x0003, FLOEM_MC_INVALID_ARGUMENTS = 0x0004,
    FLOEM_MC_ITEM_NOT_STORED = 0x0005, FLOEM_MC_DELTA_BADVAL = 0x0006,
    FLOEM_MC_UNKNOWN_COMMAND = 0x0081, FLOEM_MC_OUT_OF_MEMORY = 0x0082,
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
/* The same for a message without the frame header (a TCP stream's): request_id, sequence and
 * total are 0. */
enum floem_mc_verdict floem_mc_parse_message(const void *data, size_t len,
                                             struct floem_mc_msg *msg);

/* Write `msg` as a datagram (frame header, binary header, extras, key, value) into `out`,
 * which has room for `cap` bytes; returns its length, or 0 when it does not fit.
 * The extras, key and value must not overlap `out`. */
size_t floem_mc_build(void *out, size_t cap, const struct floem_mc_msg *msg);
/* The same without the frame header (a message on a TCP stream). */
size_t floem_mc_build_message(void *out, size_t cap, const struct floem_mc_msg *msg);

/* ---- the text protocol ------------------------------------------------------------------- */

/* memcached's MAX_TOKENS: 23 tokens, then the rest of the line. */
#define FLOEM_MC_MAX_TOKENS 24
/* The longest text line without "\n" memcached reads on before it closes the connection
 * (unless the line is a get, which may be long). */
#define FLOEM_MC_LINE_MAX 2048

struct floem_mc_token {
    const uint8_t *at;
    size_t len;
};

/* A line split memcached's way: `n` is what memcached calls ntokens (the tokens and the
 * final one, which is `rest`: the unsplit remainder, or NULL at the line's end). */
struct floem_mc_tokens {
    struct floem_mc_token t[FLOEM_MC_MAX_TOKENS];
    size_t n;
    const uint8_t *rest;
    size_t rest_len;
};

/* Split `len` bytes at `s` (a command line without "\r\n") at spaces, as memcached's
 * tokenize_command does. */
void floem_mc_tokenize(const uint8_t *s, size_t len, struct floem_mc_tokens *out);
/* Whether `t` is `word` (inline, so that a literal word's length is a constant). */
static inline bool floem_mc_token_is(const struct floem_mc_token *t, const char *word)
{
    size_t n = strlen(word);
    return t->len == n && memcmp(t->at, word, n) == 0;
}
/* A token's number, as memcached's safe_strtoull, safe_strtoul (64 bits, cut to 32) and
 * safe_strtol (cut to 32) read it; false when they refuse it. */
bool floem_mc_read_u64(const struct floem_mc_token *t, uint64_t *out);
bool floem_mc_read_u32(const struct floem_mc_token *t, uint32_t *out);
bool floem_mc_read_i32(const struct floem_mc_token *t, int32_t *out);
/* The bytes memcached reads after command line `line` (`len` bytes, without its "\r\n";
 * read up to a NUL byte as memcached reads a C string): a storage command's data block (its
 * <bytes> and "\r\n"), which it stores or swallows; 0 when it reads none (any other command,
 * or a storage command it refuses before reading the block). */
size_t floem_mc_text_block(const uint8_t *line, size_t len);

/* ---- framers of TCP streams (floem/net.h's floem_frame_fn; `config` unused) -------------- */

long floem_frame_memcached_text(const void *config, uint64_t *state, const uint8_t *data,
                                size_t len);
long floem_frame_memcached_binary(const void *config, uint64_t *state, const uint8_t *data,
                                  size_t len);
long floem_frame_memcached(const void *config, uint64_t *state, const uint8_t *data,
                           size_t len);

#endif
