/* memcached's protocols over UDP and TCP for the key-value store: see proto.h.
 *
 * The text protocol is parsed the way memcached 1.6.18 parses it (proto_text.c there):
 * a line is split into at most 23 tokens at spaces (the 24th "token" is the rest of the
 * line, or nothing), a line ends at "\n" (a "\r" before it is dropped when the line has
 * more than that "\r"), and stops at a NUL byte as memcached's C strings do; numbers are
 * read the way its safe_strto* functions read them. Every reader here takes a length and
 * reads nothing beyond it.
 */
#include "proto.h"

#include <string.h>

/* ---- checking a frame -------------------------------------------------------------------- */

/* A TCP message cut: its IPv4 length (within what it can say) past the frame's bytes. */
static bool uncut_message(uint8_t *frame, size_t size)
{
    const uint8_t *payload;
    size_t len, whole;
    if (floem_tcp_message(frame, size, &payload, &len, &whole) != FLOEM_UDP_TRUNCATED
        || size < KVS_TCP_HEADERS || frame[14] != 0x45 || payload != frame + KVS_TCP_HEADERS)
        return false;
    floem_tcp_set_length(frame, size);
    return true;
}

bool kvs_uncut(uint8_t *frame, size_t size)
{
    if (size > 23 && frame[23] == FLOEM_IPPROTO_TCP)
        return uncut_message(frame, size);
    if (size < FLOEM_UDP_FRAME_LEN
        || floem_udp_parse(frame, size, 0, NULL) != FLOEM_UDP_TRUNCATED)
        return false;
    struct floem_udp_frame *f = (struct floem_udp_frame *)frame;
    size_t total = floem_get16(&f->ip.total_len);
    if (FLOEM_ETHER_LEN + total <= size || floem_get16(&f->eth.type) != FLOEM_ETHERTYPE_IPV4
        || f->ip.version_ihl != 0x45 || f->ip.protocol != FLOEM_IPPROTO_UDP
        || (floem_get16(&f->ip.frag_off) & 0x3fff) != 0
        || floem_get16(&f->udp.len) != total - FLOEM_IPV4_MIN_LEN)
        return false;               /* lengths that disagree: not a datagram cut short */
    floem_udp_set_length(frame, size, 0);
    return true;
}

/* A request in one datagram: its frame header numbers it 0 of 1. */
static bool one_datagram(const uint8_t *payload)
{
    return floem_get16(payload + 2) == 0 && floem_get16(payload + 4) == 1;
}

/* A binary SET's head: a single datagram holding the SET's header, extras and key. */
static bool set_head(const uint8_t *payload, size_t len)
{
    const uint8_t *h = payload + FLOEM_MC_UDP_HDR_LEN;
    return one_datagram(payload) && h[1] == FLOEM_MC_SET
           && len >= (size_t)FLOEM_MC_UDP_HDR_LEN + FLOEM_MC_HDR_LEN + h[4] + floem_get16(h + 2);
}

/* kvs_check of a TCP message: a whole message (the framer delimited it) with a request; a
 * binary one cut short (longer than a frame holds) only as the head of a storage command. */
static int check_message(const uint8_t *frame, size_t size)
{
    const uint8_t *payload;
    size_t len, whole;
    enum floem_udp_verdict v = floem_tcp_message(frame, size, &payload, &len, &whole);
    if (v != FLOEM_UDP_OK)
        return KVS_DROP_NOT_UDP;
    if (payload != frame + KVS_TCP_HEADERS)
        return KVS_DROP_IP_OPTIONS;
    if (len == 0)
        return KVS_DROP_TOO_SHORT;
    if (payload[0] != FLOEM_MC_REQUEST)
        return -1;
    struct floem_mc_msg m;
    switch (floem_mc_parse_message(payload, len, &m)) {
    case FLOEM_MC_PARSED:
    case FLOEM_MC_BAD_LENGTHS:              /* answered "Unknown command", as memcached does */
        return -1;
    case FLOEM_MC_BODY_TRUNCATED:           /* cut: answered from its head */
        return len >= (size_t)FLOEM_MC_HDR_LEN + payload[4] + floem_get16(payload + 2) ? -1
                                                                                   : KVS_DROP_BAD_LENGTH;
    default:
        return KVS_DROP_TOO_SHORT;
    }
}

int kvs_check(const uint8_t *frame, size_t size)
{
    if (size > 23 && frame[23] == FLOEM_IPPROTO_TCP)
        return check_message(frame, size);
    struct floem_udp_view udp;
    if (floem_udp_parse((void *)frame, size, 0, &udp) != FLOEM_UDP_OK)
        return KVS_DROP_NOT_UDP;
    if (floem_ipv4_header_len(udp.ip) != FLOEM_IPV4_MIN_LEN)
        return KVS_DROP_IP_OPTIONS;
    if (udp.payload_len <= FLOEM_MC_UDP_HDR_LEN)
        return KVS_DROP_TOO_SHORT;
    uint8_t magic = udp.payload[FLOEM_MC_UDP_HDR_LEN];
    if (magic != FLOEM_MC_REQUEST) {            /* text: kvs_split_next reads the commands */
        return one_datagram(udp.payload) ? -1 : KVS_DROP_MULTI_DATAGRAM;
    }
    struct floem_mc_msg m;
    switch (floem_mc_parse(udp.payload, udp.payload_len, &m)) {
    case FLOEM_MC_PARSED:
        break;
    case FLOEM_MC_TRUNCATED:
        return KVS_DROP_TOO_SHORT;
    case FLOEM_MC_BODY_TRUNCATED:
        return set_head(udp.payload, udp.payload_len) ? -1 : KVS_DROP_BAD_LENGTH;
    default:
        return KVS_DROP_BAD_LENGTH;
    }
    if (m.sequence != 0 || m.total != 1)
        return KVS_DROP_MULTI_DATAGRAM;
    size_t whole = (size_t)FLOEM_MC_UDP_HDR_LEN + FLOEM_MC_HDR_LEN + m.extras_len + m.key_len
                   + m.value_len;
    return whole == udp.payload_len ? -1 : KVS_DROP_BAD_LENGTH;    /* no bytes after the body */
}

/* ---- text: tokens and numbers ------------------------------------------------------------ */

#define META_MAX_TOKENS 20          /* MFLAG_MAX_OPT_LENGTH */
#define META_MAX_OPAQUE 32          /* MFLAG_MAX_OPAQUE_LENGTH */

/* A token's number after its flag letter (meta commands). */
static struct floem_mc_token flag_value(const struct floem_mc_token *t)
{
    return (struct floem_mc_token){t->at + 1, t->len - 1};
}

/* memcached's relative-or-absolute expiry time as an absolute one (0: never). */
static uint32_t absolute_expiry(int32_t exptime, uint32_t now)
{
    uint32_t e = exptime < 0 ? KVS_RELATIVE_EXPIRY_MAX + 1 : (uint32_t)exptime;
    return e != 0 && e <= KVS_RELATIVE_EXPIRY_MAX ? e + now : e;
}

/* ---- text: commands ---------------------------------------------------------------------- */

static bool next_key(const uint8_t *text, size_t from, size_t end, size_t *key, size_t *key_len);

enum kind {
    K_ERROR, K_GET, K_GETS, K_GAT, K_GATS, K_SET, K_ADD, K_REPLACE, K_APPEND, K_PREPEND, K_CAS,
    K_INCR, K_DECR, K_TOUCH, K_DELETE, K_VERBOSITY, K_FLUSH, K_VERSION, K_QUIT, K_MN, K_MG,
    K_MS, K_MD, K_STATS,
};

/* Meta flags (mg, ms, md). */
enum {
    M_C = 1 << 0, M_F = 1 << 1, M_K = 1 << 2, M_O = 1 << 3, M_Q = 1 << 4, M_S = 1 << 5,
    M_T = 1 << 6, M_V = 1 << 7, M_CAS = 1 << 8, M_TTL = 1 << 9, M_FLAGS = 1 << 10,
};

/* A command line, parsed. */
struct command {
    enum kind kind;
    uint16_t status;                /* FLOEM_MC_OK or the error it is answered with */
    bool noreply;                   /* a nominal answer is not sent */
    bool loud;                      /* an error is sent even with noreply (meta) */
    struct floem_mc_token key;
    struct floem_mc_token first_key;         /* a get's first key token */
    uint32_t flags;
    int32_t exptime;
    int32_t vlen;                   /* a storage command's value length */
    uint64_t arg;                   /* cas unique, delta, compare value */
    size_t data;                    /* bytes of data block after the line (value + 2) */
    bool cut;                       /* the datagram holds less of the data block (then 0) */
    uint8_t op;                     /* what it asks the store */
    unsigned meta;                  /* M_* */
    struct floem_mc_tokens tokens;
};

#define COMMAND(name, kind) {name, sizeof name - 1, kind}
static const struct {
    const char *name;
    size_t len;
    enum kind kind;
} COMMANDS[] = {
    COMMAND("get", K_GET), COMMAND("gets", K_GETS), COMMAND("gat", K_GAT),
    COMMAND("gats", K_GATS), COMMAND("bget", K_GET), COMMAND("set", K_SET),
    COMMAND("add", K_ADD), COMMAND("replace", K_REPLACE), COMMAND("append", K_APPEND),
    COMMAND("prepend", K_PREPEND), COMMAND("cas", K_CAS), COMMAND("incr", K_INCR),
    COMMAND("decr", K_DECR), COMMAND("touch", K_TOUCH), COMMAND("delete", K_DELETE),
    COMMAND("verbosity", K_VERBOSITY), COMMAND("flush_all", K_FLUSH),
    COMMAND("version", K_VERSION), COMMAND("quit", K_QUIT), COMMAND("mn", K_MN),
    COMMAND("mg", K_MG), COMMAND("ms", K_MS), COMMAND("md", K_MD), COMMAND("stats", K_STATS),
};
#undef COMMAND

static bool noreply_token(struct command *c)
{
    const struct floem_mc_token *t = &c->tokens.t[c->tokens.n - 2];
    c->noreply = floem_mc_token_is(t, "noreply");
    return c->noreply;
}

static void fail(struct command *c, uint16_t status)
{
    c->status = status;
    c->op = KVS_OP_NONE;
}

static bool key_too_long(struct command *c)
{
    if (c->tokens.t[1].len <= KVS_KEY_MAX)
        return false;
    fail(c, KVS_TEXT_BAD_FORMAT);
    return true;
}

/* set, add, replace, append, prepend, cas <key> <flags> <exptime> <bytes> [cas] [noreply] */
static void parse_storage(struct command *c)
{
    size_t n = c->tokens.n;
    bool cas = c->kind == K_CAS;
    if (n != (cas ? 7u : 6u) && n != (cas ? 8u : 7u))
        return fail(c, KVS_TEXT_ERROR);
    noreply_token(c);
    if (key_too_long(c))
        return;
    const struct floem_mc_token *t = c->tokens.t;
    if (!floem_mc_read_u32(&t[2], &c->flags) || !floem_mc_read_i32(&t[3], &c->exptime)
        || !floem_mc_read_i32(&t[4], &c->vlen) || (cas && !floem_mc_read_u64(&t[5], &c->arg)))
        return fail(c, KVS_TEXT_BAD_FORMAT);
    if (c->vlen < 0 || c->vlen > INT32_MAX - 2)
        return fail(c, KVS_TEXT_BAD_FORMAT);
    c->key = t[1];
    c->data = (size_t)c->vlen + 2;
    static const uint8_t ops[] = {
        [K_SET] = KVS_OP_SET, [K_ADD] = KVS_OP_ADD, [K_REPLACE] = KVS_OP_REPLACE,
        [K_APPEND] = KVS_OP_APPEND, [K_PREPEND] = KVS_OP_PREPEND, [K_CAS] = KVS_OP_CAS,
    };
    c->op = ops[c->kind];
}

/* The meta flags from token `from` on, checked as memcached's _meta_flag_preparse checks
 * them; the ones this store does not implement (b, h, l, N, R, E, I, and T on mg) are
 * "invalid". False with c->status set on an error. */
static bool parse_meta_flags(struct command *c, size_t from, uint16_t duplicate,
                             uint16_t invalid)
{
    bool seen[128] = {false}, unsupported = false, error = false;
    uint16_t errstr = KVS_TEXT_BAD_FORMAT;
    for (size_t i = from; i < c->tokens.n - 1; i++) {
        const struct floem_mc_token *t = &c->tokens.t[i];
        uint8_t o = t->at[0];
        if (o >= 127 || seen[o]) {
            fail(c, duplicate);
            return false;
        }
        seen[o] = true;
        struct floem_mc_token v = flag_value(t);
        int32_t i32;
        uint64_t u64;
        switch (o) {
        case 'b': case 'h': case 'l': case 'I':
            unsupported = true;
            break;
        case 'N': case 'R':
            unsupported = true;
            if (!floem_mc_read_i32(&v, &i32)) {
                errstr = KVS_TEXT_BAD_TOKEN;
                error = true;
            }
            break;
        case 'T':
            if (!floem_mc_read_i32(&v, &i32)) {
                errstr = KVS_TEXT_BAD_TOKEN;
                error = true;
            } else {
                c->exptime = i32;
                c->meta |= M_TTL;
            }
            break;
        case 'O':
            c->meta |= M_O;
            break;
        case 'P': case 'L': case 'u':
            break;
        case 'k': c->meta |= M_K; break;
        case 's': c->meta |= M_S; break;
        case 't': c->meta |= M_T; break;
        case 'c': c->meta |= M_C; break;
        case 'f': c->meta |= M_F; break;
        case 'v': c->meta |= M_V; break;
        case 'q': c->meta |= M_Q; break;
        case 'F':
            if (!floem_mc_read_u32(&v, &c->flags))
                error = true;
            c->meta |= M_FLAGS;
            break;
        case 'C':
            if (!floem_mc_read_u64(&v, &c->arg)) {
                errstr = KVS_TEXT_BAD_TOKEN;
                error = true;
            } else {
                c->meta |= M_CAS;
            }
            break;
        case 'M':
            if (t->len != 2) {
                errstr = KVS_TEXT_MODE_LENGTH;
                error = true;
            }
            break;
        case 'J':
            if (!floem_mc_read_u64(&v, &u64)) {
                errstr = KVS_TEXT_BAD_TOKEN;
                error = true;
            }
            break;
        case 'D':
            if (!floem_mc_read_u64(&v, &u64)) {
                errstr = KVS_TEXT_BAD_DELTA;
                error = true;
            }
            break;
        default:
            fail(c, invalid);
            return false;
        }
    }
    if (error || unsupported) {
        fail(c, error ? errstr : invalid);
        return false;
    }
    return true;
}

/* The opaque tokens of a meta command fit (checked when memcached writes them). */
static bool opaque_fits(const struct command *c)
{
    for (size_t i = 2; i < c->tokens.n - 1; i++)
        if (c->tokens.t[i].at[0] == 'O' && c->tokens.t[i].len > META_MAX_OPAQUE)
            return false;
    return true;
}

static void parse_mg(struct command *c)
{
    if (c->tokens.n < 3)
        return fail(c, KVS_TEXT_ERROR);
    c->loud = true;
    if (key_too_long(c))
        return;
    if (c->tokens.n > META_MAX_TOKENS)
        return fail(c, KVS_TEXT_FLAGS_TOO_LONG);
    if (!parse_meta_flags(c, 2, KVS_TEXT_DUPLICATE_FLAG, KVS_TEXT_INVALID_FLAG))
        return;
    if (c->meta & M_TTL)            /* mg's T touches: not implemented */
        return fail(c, KVS_TEXT_INVALID_FLAG);
    if (!opaque_fits(c))
        return fail(c, KVS_TEXT_OPAQUE_TOO_LONG);
    c->noreply = c->meta & M_Q;
    c->key = c->tokens.t[1];
    c->op = KVS_OP_GET;
}

static void parse_ms(struct command *c)
{
    if (c->tokens.n < 3)
        return fail(c, KVS_TEXT_ERROR);
    c->loud = true;
    if (key_too_long(c))
        return;
    if (c->tokens.n == 3)
        return fail(c, KVS_TEXT_BAD_FORMAT);
    if (c->tokens.n > META_MAX_TOKENS)
        return fail(c, KVS_TEXT_OPTIONS_TOO_LONG);
    if (!floem_mc_read_i32(&c->tokens.t[2], &c->vlen) || c->vlen < 0 || c->vlen > INT32_MAX - 2)
        return fail(c, KVS_TEXT_BAD_FORMAT);
    c->data = (size_t)c->vlen + 2;      /* from here on, an error swallows the data */
    if (!parse_meta_flags(c, 3, KVS_TEXT_DUPLICATE_FLAG, KVS_TEXT_INVALID_FLAG))
        return;
    if (!opaque_fits(c))
        return fail(c, KVS_TEXT_OPAQUE_TOO_LONG);
    uint8_t op = KVS_OP_SET;
    for (size_t i = 3; i < c->tokens.n - 1; i++) {
        const struct floem_mc_token *t = &c->tokens.t[i];
        if (t->at[0] != 'M')
            continue;
        switch (t->at[1]) {
        case 'E': op = KVS_OP_ADD; break;
        case 'A': op = KVS_OP_APPEND; break;
        case 'P': op = KVS_OP_PREPEND; break;
        case 'R': op = KVS_OP_REPLACE; break;
        case 'S': op = KVS_OP_SET; break;
        default: return fail(c, KVS_TEXT_BAD_MODE);
        }
    }
    if ((c->meta & M_CAS) && (op == KVS_OP_SET || op == KVS_OP_REPLACE))
        op = KVS_OP_CAS;
    c->noreply = c->meta & M_Q;
    c->key = c->tokens.t[1];
    c->op = op;
}

static void parse_md(struct command *c)
{
    if (c->tokens.n < 3)
        return fail(c, KVS_TEXT_ERROR);
    if (key_too_long(c))
        return;
    c->loud = true;
    if (c->tokens.n > META_MAX_TOKENS)
        return fail(c, KVS_TEXT_OPTIONS_TOO_LONG);
    if (!parse_meta_flags(c, 2, KVS_TEXT_MDELETE_FLAG, KVS_TEXT_MDELETE_FLAG))
        return;
    if (c->meta & M_TTL)            /* md's T marks stale: not implemented */
        return fail(c, KVS_TEXT_MDELETE_FLAG);
    if (!opaque_fits(c))
        return fail(c, KVS_TEXT_OPAQUE_TOO_LONG);
    c->noreply = c->meta & M_Q;
    c->key = c->tokens.t[1];
    c->op = KVS_OP_DELETE;
}

/* Parse command line `line` (`len` bytes, no "\r\n") as memcached's process_command_ascii
 * does. */
static void parse_line(const uint8_t *line, size_t len, struct command *c)
{
    const uint8_t *nul = memchr(line, 0, len);   /* memcached reads the line as a C string */
    if (nul != NULL)
        len = (size_t)(nul - line);
    memset(c, 0, offsetof(struct command, tokens));
    c->op = KVS_OP_NONE;
    floem_mc_tokenize(line, len, &c->tokens);
    struct floem_mc_tokens *tk = &c->tokens;
    if (tk->n < 2 || tk->t[0].len < 2)
        return fail(c, KVS_TEXT_ERROR);
    c->kind = K_ERROR;
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (tk->t[0].len == COMMANDS[i].len && memcmp(tk->t[0].at, COMMANDS[i].name,
                                                      COMMANDS[i].len) == 0) {
            c->kind = COMMANDS[i].kind;
            break;
        }
    const struct floem_mc_token *last = &tk->t[tk->n - 2];
    if (c->kind == K_ERROR && last->len >= 5 && memcmp(last->at, "HTTP/", 5) == 0)
        return fail(c, KVS_TEXT_QUIET);         /* memcached closes an HTTP "connection" */
    switch (c->kind) {
    case K_ERROR:
        return fail(c, KVS_TEXT_ERROR);
    case K_GET: case K_GETS: case K_GAT: case K_GATS: {
        if (tk->n < 3)
            return fail(c, KVS_TEXT_ERROR);
        bool touch = c->kind == K_GAT || c->kind == K_GATS;
        if (touch && !floem_mc_read_i32(&tk->t[1], &c->exptime))
            return fail(c, KVS_TEXT_BAD_EXPTIME);
        c->first_key = tk->t[touch ? 2 : 1];
        c->key = c->first_key;
        if (c->key.len == 0)            /* "gat 10": memcached answers END, asks nothing */
            return;
        size_t from = c->first_key.at == NULL ? len : (size_t)(c->first_key.at - line);
        for (size_t k, kl; next_key(line, from, len, &k, &kl); from = k + kl)
            if (kl > KVS_KEY_MAX)       /* memcached answers only this, for the whole get */
                return fail(c, KVS_TEXT_BAD_FORMAT);
        c->op = touch ? KVS_OP_GAT : KVS_OP_GET;
        return;
    }
    case K_SET: case K_ADD: case K_REPLACE: case K_APPEND: case K_PREPEND: case K_CAS:
        return parse_storage(c);
    case K_INCR: case K_DECR: case K_TOUCH:
        if (tk->n != 4 && tk->n != 5)
            return fail(c, KVS_TEXT_ERROR);
        noreply_token(c);
        if (key_too_long(c))
            return;
        if (c->kind == K_TOUCH ? !floem_mc_read_i32(&tk->t[2], &c->exptime) : !floem_mc_read_u64(&tk->t[2], &c->arg))
            return fail(c, c->kind == K_TOUCH ? KVS_TEXT_BAD_EXPTIME : KVS_TEXT_BAD_DELTA);
        c->key = tk->t[1];
        c->op = c->kind == K_TOUCH ? KVS_OP_TOUCH : c->kind == K_INCR ? KVS_OP_INCR : KVS_OP_DECR;
        return;
    case K_DELETE:
        if (tk->n < 3 || tk->n > 5)
            return fail(c, KVS_TEXT_ERROR);
        if (tk->n > 3) {
            bool hold_is_zero = floem_mc_token_is(&tk->t[2], "0");
            bool noreply = noreply_token(c);
            bool valid = (tk->n == 4 && (hold_is_zero || noreply))
                         || (tk->n == 5 && hold_is_zero && noreply);
            if (!valid)
                return fail(c, KVS_TEXT_DELETE_USAGE);
        }
        if (key_too_long(c))
            return;
        c->key = tk->t[1];
        c->op = KVS_OP_DELETE;
        return;
    case K_VERBOSITY:
        if (tk->n != 3 && tk->n != 4)
            return fail(c, KVS_TEXT_ERROR);
        noreply_token(c);
        if (!floem_mc_read_u32(&tk->t[1], &c->flags))
            return fail(c, KVS_TEXT_BAD_FORMAT);
        return;
    case K_FLUSH:
        if (tk->n > 4)
            return fail(c, KVS_TEXT_ERROR);
        noreply_token(c);
        if (tk->n != (c->noreply ? 3u : 2u) && !floem_mc_read_i32(&tk->t[1], &c->exptime))
            return fail(c, KVS_TEXT_BAD_EXPTIME);
        return;
    case K_QUIT:
        return fail(c, KVS_TEXT_QUIET);
    case K_VERSION: case K_MN:
        return;
    case K_MG:
        return parse_mg(c);
    case K_MS:
        return parse_ms(c);
    case K_MD:
        return parse_md(c);
    case K_STATS:                   /* stats, stats reset; the others are not kept here */
        if (tk->n == 2 || floem_mc_token_is(&tk->t[1], "reset")) {
            c->op = KVS_OP_STATS;
            return;
        }
        return fail(c, KVS_TEXT_ERROR);
    }
}

/* The longest line whose parse a thread keeps. */
#define KEPT_LINE 256

/* parse_line, the line's last parse on this thread kept: a request's line is parsed where it
 * is split, where it is read and where it is answered, on one thread in the cpu design. The
 * parse is kept with the line's place and bytes (its tokens point into the line), and given
 * again only for the same bytes at the same place. */
static void parse_command(const uint8_t *line, size_t len, struct command *c)
{
    static _Thread_local struct {
        const uint8_t *line;
        size_t len;
        uint8_t bytes[KEPT_LINE];
        struct command parsed;
    } kept;
    if (line != NULL && len <= KEPT_LINE && kept.line == line && kept.len == len
        && memcmp(kept.bytes, line, len) == 0) {
        *c = kept.parsed;
        return;
    }
    parse_line(line, len, c);
    if (len <= KEPT_LINE) {
        kept.line = line;
        kept.len = len;
        memcpy(kept.bytes, line, len);
        kept.parsed = *c;
    }
}

/* ---- text: splitting a datagram ------------------------------------------------------------ */

/* The line at `at` of `text` (`len` bytes): its length without "\r\n" and where the next
 * starts; false when it has no "\n". */
static bool find_line(const uint8_t *text, size_t len, size_t at, size_t *line_len,
                      size_t *next)
{
    const uint8_t *nl = memchr(text + at, '\n', len - at);
    if (nl == NULL)
        return false;
    size_t n = (size_t)(nl - (text + at));
    *next = at + n + 1;
    if (n > 1 && text[at + n - 1] == '\r')
        n--;
    *line_len = n;
    return true;
}

/* The get key token after `from` (an offset in `text` inside the line ending at `end`):
 * *key, *key_len; false when none is left. */
static bool next_key(const uint8_t *text, size_t from, size_t end, size_t *key,
                     size_t *key_len)
{
    while (from < end && text[from] == ' ')
        from++;
    if (from >= end)
        return false;
    const uint8_t *space = memchr(text + from, ' ', end - from);
    *key = from;
    *key_len = (space != NULL ? (size_t)(space - text) : end) - from;
    return true;
}

bool kvs_split_next(const uint8_t *text, size_t len, size_t at, const struct kvs_split *prev,
                    struct kvs_split *out)
{
    if (prev != NULL && prev->more_keys) {  /* the next key of the get in progress */
        *out = *prev;
        out->first = false;
        size_t end = prev->line + prev->line_len;
        const uint8_t *nul = memchr(text + prev->line, 0, prev->line_len);
        if (nul != NULL)
            end = (size_t)(nul - text);
        next_key(text, prev->key + prev->key_len, end, &out->key, &out->key_len);
        size_t after, after_len;
        out->more_keys = next_key(text, out->key + out->key_len, end, &after, &after_len);
        return true;
    }
    if (at >= len || (prev != NULL && prev->sends))
        return false;
    struct kvs_split s = {.line = at};
    size_t next;
    if (!find_line(text, len, at, &s.line_len, &next))
        return false;
    s.data = next;
    s.next = next;
    s.first = prev == NULL || (prev->first && prev->silent);
    struct command c;
    parse_command(text + at, s.line_len, &c);
    bool get = c.kind == K_GET || c.kind == K_GETS || c.kind == K_GAT || c.kind == K_GATS;
    s.silent = c.noreply;           /* a meta command's q: as when its nominal answer goes */
    s.sends = (get && c.status == FLOEM_MC_OK) || c.kind == K_MN || c.kind == K_QUIT;
    if (get && c.status == FLOEM_MC_OK && c.first_key.len != 0) {
        const uint8_t *nul = memchr(text + at, 0, s.line_len);
        size_t line_end = nul != NULL ? (size_t)(nul - text) : at + s.line_len;
        s.key = (size_t)(c.first_key.at - text);
        s.key_len = c.first_key.len;
        size_t after, after_len;
        s.more_keys = next_key(text, s.key + s.key_len, line_end, &after, &after_len);
    }
    s.data_len = c.data <= len - next ? c.data : len - next;   /* or a data block cut short */
    s.next = next + s.data_len;
    *out = s;
    return true;
}

/* The command line's head (up to a get's first key) of single request `s` of `text`. */
static size_t split_head(const uint8_t *text, const struct kvs_split *s)
{
    if (s->key_len == 0)
        return s->line_len;
    struct command c;
    parse_command(text + s->line, s->line_len, &c);
    return (size_t)(c.first_key.at - (text + s->line));
}

size_t kvs_split_size(const uint8_t *from, const struct kvs_split *s)
{
    const struct kvs_packet *p = (const struct kvs_packet *)from;
    size_t head = split_head(kvs_text(p), s);
    return kvs_headers(p) + head + s->key_len + (s->data - s->line - s->line_len) + s->data_len;
}

size_t kvs_split_write(uint8_t *out, const uint8_t *from, const struct kvs_split *s)
{
    const struct kvs_packet *p = (const struct kvs_packet *)from;
    const uint8_t *text = kvs_text(p);
    size_t headers = kvs_headers(p), line_end = s->line + s->line_len;
    size_t head = split_head(text, s);
    size_t terminator = s->data - line_end;             /* "\n" or "\r\n", as it came */
    if (out != from)
        memcpy(out, from, headers);
    /* "<command> [<exptime>] <key>", then the terminator and the data block: each piece moves
     * to no later a place than it was at, after the pieces before it, so `out` may be
     * `from`. */
    uint8_t *to = out + headers;
    memmove(to, text + s->line, head);
    size_t n = head;
    if (s->key_len != 0) {
        memmove(to + n, text + s->key, s->key_len);
        n += s->key_len;
    }
    memmove(to + n, text + line_end, terminator + s->data_len);
    n += terminator + s->data_len;
    size_t size = headers + n;
    if (kvs_is_stream(p))
        floem_tcp_set_length(out, size);
    else
        floem_udp_set_length(out, size, 0);
    return size;
}

/* ---- single requests ----------------------------------------------------------------------- */

/* The command of single text request `p`; *data its data block (value and "\r\n"). */
static void text_command(const struct kvs_packet *p, struct command *c, const uint8_t **data)
{
    const uint8_t *text = kvs_text(p);
    size_t len = kvs_text_len(p), line_len = 0, next = len;
    if (!find_line(text, len, 0, &line_len, &next))
        line_len = len;             /* kvs_split_write makes none without its "\n" */
    parse_command(text, line_len, c);
    *data = text + next;
    c->cut = c->data > len - next;  /* the datagram's last request, cut short */
    if (c->cut)
        c->data = 0;
}

const uint8_t *kvs_request_key(struct kvs_packet *p, uint16_t *keylen)
{
    if (!kvs_is_text(p)) {
        *keylen = kvs_keylen(p);
        return kvs_key(p);
    }
    struct command c;
    const uint8_t *data;
    text_command(p, &c, &data);
    *keylen = (uint16_t)c.key.len;
    return c.key.at;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)floem_get32(p) << 32 | floem_get32(p + 4);
}

/* A quiet binary opcode's loud twin (memcached's dispatch_bin_command); others as they are. */
static uint8_t loud(uint8_t opcode)
{
    switch (opcode) {
    case FLOEM_MC_GETQ: return FLOEM_MC_GET;
    case FLOEM_MC_GETKQ: return FLOEM_MC_GETK;
    case FLOEM_MC_SETQ: return FLOEM_MC_SET;
    case FLOEM_MC_ADDQ: return FLOEM_MC_ADD;
    case FLOEM_MC_REPLACEQ: return FLOEM_MC_REPLACE;
    case FLOEM_MC_DELETEQ: return FLOEM_MC_DELETE;
    case FLOEM_MC_INCREMENTQ: return FLOEM_MC_INCREMENT;
    case FLOEM_MC_DECREMENTQ: return FLOEM_MC_DECREMENT;
    case FLOEM_MC_QUITQ: return FLOEM_MC_QUIT;
    case FLOEM_MC_FLUSHQ: return FLOEM_MC_FLUSH;
    case FLOEM_MC_APPENDQ: return FLOEM_MC_APPEND;
    case FLOEM_MC_PREPENDQ: return FLOEM_MC_PREPEND;
    case FLOEM_MC_GATQ: return FLOEM_MC_GAT;
    case FLOEM_MC_GATKQ: return FLOEM_MC_GATK;
    default: return opcode;
    }
}

static bool quiet(uint8_t opcode)
{
    return loud(opcode) != opcode;
}

/* SASL's opcodes, which memcached without SASL answers "Unknown command" (after its checks). */
enum { SASL_LIST_MECHS = 0x20, SASL_AUTH = 0x21, SASL_STEP = 0x22 };

/* A binary request whose lengths memcached refuses as a protocol error (answered "Invalid
 * arguments", and a stream closed): those of its dispatch_bin_command. */
static bool bad_binary(uint8_t opcode, uint8_t ext, uint16_t key, uint32_t body)
{
    if (key > KVS_KEY_MAX)
        return true;
    switch (loud(opcode)) {
    case FLOEM_MC_VERSION: case FLOEM_MC_NOOP: case FLOEM_MC_QUIT: case SASL_LIST_MECHS:
        return ext != 0 || key != 0 || body != 0;
    case FLOEM_MC_FLUSH:
        return !(key == 0 && body == ext && (ext == 0 || ext == 4));
    case FLOEM_MC_SET: case FLOEM_MC_ADD: case FLOEM_MC_REPLACE:
        return !(ext == 8 && key != 0 && body >= (uint32_t)key + 8);
    case FLOEM_MC_GET: case FLOEM_MC_GETK:
        return !(ext == 0 && body == key && key > 0);
    case FLOEM_MC_DELETE:
        return !(key > 0 && ext == 0 && body == key);
    case FLOEM_MC_INCREMENT: case FLOEM_MC_DECREMENT:
        return !(key > 0 && ext == 20 && body == (uint32_t)key + ext);
    case FLOEM_MC_APPEND: case FLOEM_MC_PREPEND:
        return !(key > 0 && ext == 0);
    case FLOEM_MC_STAT:
        return ext != 0;
    case SASL_AUTH: case SASL_STEP:
        return !(ext == 0 && key != 0);
    case FLOEM_MC_TOUCH: case FLOEM_MC_GAT: case FLOEM_MC_GATK:
        return !(ext == 4 && key != 0);
    default:
        return false;
    }
}

/* kvs_parse of a binary request, as memcached's dispatch_bin_command and the functions it
 * calls take it. */
static int parse_binary(struct kvs_packet *p, uint32_t value_max, uint32_t now,
                        struct kvs_request *r)
{
    const struct floem_mc_hdr *h = kvs_mc(p);
    uint8_t ext = kvs_extlen(p), opcode = h->opcode;
    uint16_t key = kvs_keylen(p);
    uint32_t body = floem_get32(&h->body_len);
    const uint8_t *x = kvs_extras(p);
    uint64_t cas = get64((const uint8_t *)&h->cas);
    r->key = kvs_key(p);
    r->keylen = key;
    r->op = KVS_OP_NONE;
    if ((uint32_t)key + ext > body) {
        r->status = FLOEM_MC_UNKNOWN_COMMAND;
        r->keylen = 0;
        return -1;
    }
    if (bad_binary(opcode, ext, key, body)) {
        r->status = FLOEM_MC_INVALID_ARGUMENTS;
        return -1;
    }
    uint32_t vallen = body - ext - key;
    bool cut = kvs_text_len(p) - FLOEM_MC_HDR_LEN < body;
    switch (loud(opcode)) {
    case FLOEM_MC_GET: case FLOEM_MC_GETK:
        r->op = KVS_OP_GET;
        return -1;
    case FLOEM_MC_TOUCH: case FLOEM_MC_GAT: case FLOEM_MC_GATK:
        r->op = loud(opcode) == FLOEM_MC_TOUCH ? KVS_OP_TOUCH : KVS_OP_GAT;
        r->arg = absolute_expiry((int32_t)floem_get32(x), now);
        return -1;
    case FLOEM_MC_DELETE:
        r->op = KVS_OP_DELETE;
        r->arg = cas;
        return -1;
    case FLOEM_MC_SET: case FLOEM_MC_ADD: case FLOEM_MC_REPLACE:
    case FLOEM_MC_APPEND: case FLOEM_MC_PREPEND: {
        uint8_t l = loud(opcode);
        bool set = l == FLOEM_MC_SET;
        if (vallen <= value_max && cut)
            return KVS_DROP_BAD_LENGTH;         /* a value cut short */
        /* memcached stores a SET, ADD or REPLACE with a CAS value as a CAS */
        r->op = l == FLOEM_MC_APPEND ? KVS_OP_APPEND : l == FLOEM_MC_PREPEND ? KVS_OP_PREPEND
                : cas != 0 && !set ? KVS_OP_CAS : l == FLOEM_MC_ADD ? KVS_OP_ADD
                : l == FLOEM_MC_REPLACE ? KVS_OP_REPLACE : KVS_OP_SET;
        r->arg = cas;
        if (vallen > value_max) {
            r->status = FLOEM_MC_VALUE_TOO_LARGE;   /* memcached unlinks a SET's old value */
            r->op = set ? KVS_OP_SET : KVS_OP_NONE;
        }
        r->writes = r->status == FLOEM_MC_OK;
        return -1;
    }
    case FLOEM_MC_INCREMENT: case FLOEM_MC_DECREMENT:
        r->op = loud(opcode) == FLOEM_MC_INCREMENT ? KVS_OP_INCR : KVS_OP_DECR;
        r->arg = get64(x);
        r->writes = true;
        return -1;
    case FLOEM_MC_FLUSH:
        r->flush = true;
        r->arg = ext == 4 ? floem_get32(x) : 0;
        return -1;
    case FLOEM_MC_STAT:
        r->op = KVS_OP_STATS;
        r->keylen = 0;
        return -1;
    case FLOEM_MC_NOOP: case FLOEM_MC_VERSION: case FLOEM_MC_QUIT:
        r->keylen = 0;
        return -1;
    default:                            /* SASL's too: memcached here has none */
        r->status = FLOEM_MC_UNKNOWN_COMMAND;
        r->keylen = 0;
        return -1;
    }
}

int kvs_parse(struct kvs_packet *p, uint32_t value_max, uint32_t now, struct kvs_request *r)
{
    memset(r, 0, sizeof *r);
    if (!kvs_is_stream(p) && value_max > KVS_DATAGRAM_VALUE_LIMIT)
        value_max = KVS_DATAGRAM_VALUE_LIMIT;       /* what a datagram's frame holds */
    if (!kvs_is_text(p))
        return parse_binary(p, value_max, now, r);
    struct command c;
    const uint8_t *data;
    text_command(p, &c, &data);
    r->op = c.op;
    r->status = c.status;
    r->key = c.key.at;
    r->keylen = (uint16_t)c.key.len;
    if (c.status != FLOEM_MC_OK)
        return -1;
    switch (c.kind) {
    case K_SET: case K_ADD: case K_REPLACE: case K_APPEND: case K_PREPEND: case K_CAS: case K_MS:
        r->arg = c.arg;
        if ((uint32_t)c.vlen > value_max) {
            r->status = FLOEM_MC_VALUE_TOO_LARGE;       /* memcached unlinks the key's old */
            r->op = c.kind == K_SET || c.kind == K_MS ? KVS_OP_SET : KVS_OP_NONE;   /* value */
        } else if (c.cut) {
            r->op = KVS_OP_NONE;
            return KVS_DROP_INCOMPLETE;
        } else if (c.data < 2 || data[c.data - 2] != '\r' || data[c.data - 1] != '\n') {
            r->status = KVS_TEXT_BAD_CHUNK;
            r->op = KVS_OP_NONE;
        } else {
            r->writes = true;
        }
        return -1;
    case K_INCR: case K_DECR:
        r->arg = c.arg;
        r->writes = true;
        return -1;
    case K_TOUCH: case K_GAT: case K_GATS:
        r->arg = absolute_expiry(c.exptime, now);
        return -1;
    case K_MD:
        r->arg = c.arg;
        return -1;
    case K_FLUSH:
        r->flush = true;
        r->arg = c.exptime > 0 ? (uint32_t)c.exptime : 0;
        return -1;
    default:
        return -1;
    }
}

uint32_t kvs_record_make(uint8_t *rec, struct kvs_packet *p, uint32_t now, uint64_t cas)
{
    uint32_t flags = 0, expiry = 0, vallen;
    const uint8_t *value;
    char digits[21];
    if (!kvs_is_text(p)) {
        uint8_t op = loud(kvs_mc(p)->opcode), ext = kvs_extlen(p);
        const uint8_t *x = kvs_extras(p);
        value = kvs_value(p);
        vallen = kvs_vallen(p);
        if (op == FLOEM_MC_INCREMENT || op == FLOEM_MC_DECREMENT) {
            /* delta, initial value, expiration (0xffffffff: create nothing) */
            if (ext != 20 || floem_get32(x + 16) == 0xffffffffu)
                return 0;
            uint64_t v = get64(x + 8);
            vallen = 0;
            do
                digits[sizeof digits - 1 - vallen++] = (char)('0' + v % 10);
            while ((v /= 10) != 0);
            value = (const uint8_t *)digits + sizeof digits - vallen;
            expiry = floem_get32(x + 16);
        } else if (op == FLOEM_MC_SET || op == FLOEM_MC_ADD || op == FLOEM_MC_REPLACE) {
            if (ext != 8)
                return 0;
            flags = floem_get32(x);
            expiry = floem_get32(x + 4);
        } else if (op != FLOEM_MC_APPEND && op != FLOEM_MC_PREPEND) {
            return 0;
        }
        expiry = expiry != 0 && expiry <= KVS_RELATIVE_EXPIRY_MAX ? expiry + now : expiry;
    } else {
        struct command c;
        text_command(p, &c, &value);
        bool stores = c.kind == K_SET || c.kind == K_ADD || c.kind == K_REPLACE
                      || c.kind == K_APPEND || c.kind == K_PREPEND || c.kind == K_CAS
                      || c.kind == K_MS;
        if (!stores || c.status != FLOEM_MC_OK)
            return 0;
        flags = c.flags;
        expiry = absolute_expiry(c.exptime, now);
        vallen = c.data >= 2 ? (uint32_t)c.data - 2 : 0;
    }
    if (vallen > KVS_VALUE_LIMIT)
        vallen = 0;
    floem_put32(rec, flags);
    floem_put32(rec + 4, expiry);
    kvs_record_set_cas(rec, cas);
    memcpy(rec + KVS_RECORD_HEADER, value, vallen);
    return KVS_RECORD_HEADER + vallen;
}

/* ---- updates --------------------------------------------------------------------------------- */

/* A record with `old`'s flags and expiry, CAS `cas`, and the value `a` (`alen` bytes) then
 * `b` (`blen` bytes; either may be NULL when its length is 0). */
static long remake(uint8_t *out, const uint8_t *old, uint64_t cas, const uint8_t *a, size_t alen,
                   const uint8_t *b, size_t blen)
{
    memcpy(out, old, 8);
    kvs_record_set_cas(out, cas);
    if (alen > 0)
        memmove(out + KVS_RECORD_HEADER, a, alen);
    if (blen > 0)
        memmove(out + KVS_RECORD_HEADER + alen, b, blen);
    return (long)(KVS_RECORD_HEADER + alen + blen);
}

/* INCR/DECR of record `old` by `delta`, memcached's way: the number the value starts with
 * (a value that is not one is "non-numeric"), wrapping up, stopping at 0 down; written
 * over the old digits and padded with spaces when it is no longer. */
static long delta(uint8_t op, const uint8_t *old, uint32_t oldlen, uint64_t by, uint64_t cas,
                  uint8_t *out, uint16_t *status)
{
    const uint8_t *value = old + KVS_RECORD_HEADER;
    struct floem_mc_token t = {value, oldlen - KVS_RECORD_HEADER};
    uint64_t v;
    if (t.len == 0 || !floem_mc_read_u64(&t, &v)) {
        *status = KVS_TEXT_NON_NUMERIC;
        return KVS_UPDATE_KEEP;
    }
    v = op == KVS_OP_INCR ? v + by : by > v ? 0 : v - by;
    char digits[21];
    size_t n = 0;
    do
        digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    const uint8_t *d = (const uint8_t *)digits + sizeof digits - n;
    long len = remake(out, old, cas, d, n, NULL, 0);
    if (n < t.len) {                    /* in place: the old length, padded */
        memset(out + len, ' ', t.len - n);
        len += (long)(t.len - n);
    }
    *status = FLOEM_MC_OK;
    return len;
}

long kvs_update(uint8_t op, const uint8_t *old, uint32_t oldlen, const uint8_t *rec,
                uint32_t reclen, uint64_t arg, uint64_t cas, uint32_t value_max, uint8_t *out,
                uint16_t *status)
{
    bool compare = arg != 0 && (op == KVS_OP_SET || op == KVS_OP_DELETE || op == KVS_OP_APPEND
                                || op == KVS_OP_PREPEND);
    if (op == KVS_OP_RESTORE) {
        *status = FLOEM_MC_OK;
        if (reclen < KVS_RECORD_HEADER)
            return KVS_UPDATE_DELETE;
        memcpy(out, rec, reclen);
        return reclen;
    }
    if (old == NULL && (op == KVS_OP_INCR || op == KVS_OP_DECR) && reclen >= KVS_RECORD_HEADER) {
        *status = FLOEM_MC_OK;              /* a binary INCR's initial value, as an ADD */
        memcpy(out, rec, reclen);
        kvs_record_set_cas(out, cas);
        return reclen;
    }
    if (old == NULL) {
        *status = op == KVS_OP_ADD || op == KVS_OP_APPEND || op == KVS_OP_PREPEND
                      || op == KVS_OP_REPLACE ? FLOEM_MC_ITEM_NOT_STORED : FLOEM_MC_KEY_NOT_FOUND;
        if (op != KVS_OP_ADD && !(op == KVS_OP_SET && !compare))
            return KVS_UPDATE_KEEP;
    } else if ((op == KVS_OP_CAS || compare) && kvs_record_cas(old) != arg) {
        *status = FLOEM_MC_KEY_EXISTS;
        return KVS_UPDATE_KEEP;
    }
    const uint8_t *value = rec + KVS_RECORD_HEADER;
    size_t vallen = reclen >= KVS_RECORD_HEADER ? reclen - KVS_RECORD_HEADER : 0;
    *status = FLOEM_MC_OK;
    switch (op) {
    case KVS_OP_ADD:
        if (old != NULL) {
            *status = FLOEM_MC_ITEM_NOT_STORED;
            return KVS_UPDATE_KEEP;
        }
        /* fall through */
    case KVS_OP_SET: case KVS_OP_REPLACE: case KVS_OP_CAS:
        memcpy(out, rec, reclen);
        kvs_record_set_cas(out, cas);
        return reclen;
    case KVS_OP_APPEND: case KVS_OP_PREPEND: {
        size_t have = oldlen - KVS_RECORD_HEADER;
        if (have + vallen > value_max) {
            *status = FLOEM_MC_ITEM_NOT_STORED;
            return KVS_UPDATE_KEEP;
        }
        const uint8_t *mine = old + KVS_RECORD_HEADER;
        return op == KVS_OP_APPEND ? remake(out, old, cas, mine, have, value, vallen)
                                   : remake(out, old, cas, value, vallen, mine, have);
    }
    case KVS_OP_INCR: case KVS_OP_DECR:
        return delta(op, old, oldlen, arg, cas, out, status);
    case KVS_OP_TOUCH: case KVS_OP_GAT:
        memcpy(out, old, oldlen);
        floem_put32(out + 4, (uint32_t)arg);
        return oldlen;
    case KVS_OP_DELETE:
        return KVS_UPDATE_DELETE;
    default:
        *status = FLOEM_MC_UNKNOWN_COMMAND;
        return KVS_UPDATE_KEEP;
    }
}

/* ---- replies ----------------------------------------------------------------------------------- */

/* memcached's text for an error status of the binary protocol (the body of such a reply). */
static const char *binary_error(uint16_t status)
{
    switch (status) {
    case FLOEM_MC_KEY_NOT_FOUND: return "Not found";
    case FLOEM_MC_KEY_EXISTS: return "Data exists for key.";
    case FLOEM_MC_VALUE_TOO_LARGE: return "Too large.";
    case FLOEM_MC_INVALID_ARGUMENTS: return "Invalid arguments";
    case FLOEM_MC_ITEM_NOT_STORED: return "Not stored.";
    case FLOEM_MC_UNKNOWN_COMMAND: return "Unknown command";
    case FLOEM_MC_DELTA_BADVAL: return "Non-numeric server-side value for incr or decr";
    case KVS_NOT_SUPPORTED: return "Not supported";
    default: return "Out of memory";
    }
}

/* memcached's line for a text error status, or NULL. */
static const char *text_error(uint16_t status, enum kind kind)
{
    switch (status) {
    case KVS_TEXT_ERROR: return "ERROR";
    case KVS_TEXT_BAD_FORMAT: return "CLIENT_ERROR bad command line format";
    case KVS_TEXT_BAD_CHUNK: return "CLIENT_ERROR bad data chunk";
    case KVS_TEXT_BAD_EXPTIME: return "CLIENT_ERROR invalid exptime argument";
    case KVS_TEXT_BAD_DELTA: return kind == K_MS || kind == K_MG || kind == K_MD
                                   ? "CLIENT_ERROR invalid numeric delta value"
                                   : "CLIENT_ERROR invalid numeric delta argument";
    case KVS_TEXT_NON_NUMERIC: return "CLIENT_ERROR cannot increment or decrement non-numeric value";
    case KVS_TEXT_DELETE_USAGE:
        return "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]";
    case KVS_TEXT_INVALID_FLAG: return "CLIENT_ERROR invalid flag";
    case KVS_TEXT_DUPLICATE_FLAG: return "CLIENT_ERROR duplicate flag";
    case KVS_TEXT_BAD_TOKEN: return "CLIENT_ERROR bad token in command line format";
    case KVS_TEXT_BAD_MODE: return "CLIENT_ERROR invalid mode for ms M token";
    case KVS_TEXT_MODE_LENGTH: return "CLIENT_ERROR incorrect length for M token";
    case KVS_TEXT_FLAGS_TOO_LONG: return "CLIENT_ERROR options flags are too long";
    case KVS_TEXT_OPTIONS_TOO_LONG: return "CLIENT_ERROR options flags too long";
    case KVS_TEXT_OPAQUE_TOO_LONG: return "CLIENT_ERROR opaque token too long";
    case KVS_TEXT_MDELETE_FLAG: return "CLIENT_ERROR invalid or duplicate flag";
    case FLOEM_MC_VALUE_TOO_LARGE: return "SERVER_ERROR object too large for cache";
    case KVS_NOT_SUPPORTED: return "SERVER_ERROR not supported";
    case FLOEM_MC_OUT_OF_MEMORY:
        return kind == K_INCR || kind == K_DECR ? "SERVER_ERROR out of memory"
                                                : "SERVER_ERROR out of memory storing object";
    default: return NULL;
    }
}

/* A message being written: `at` bytes into `msg`. */
struct out {
    uint8_t *msg;
    size_t at;
};

static void put(struct out *o, const void *bytes, size_t n)
{
    memcpy(o->msg + o->at, bytes, n);
    o->at += n;
}

static void puts_(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

static void put_u64(struct out *o, uint64_t v)
{
    char digits[21];
    size_t n = 0;
    do
        digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    put(o, digits + sizeof digits - n, n);
}

/* A meta command's returned flags, in the order the request gave them: `which` lists the
 * flag letters to return (O: the opaque token as it came, k: the key, c, f, s, t). */
static void put_meta_flags(struct out *o, const struct command *c, const char *which,
                           const uint8_t *rec, uint32_t reclen, uint64_t cas, uint32_t now)
{
    for (size_t i = 2; i < c->tokens.n - 1; i++) {
        const struct floem_mc_token *t = &c->tokens.t[i];
        uint8_t f = t->at[0];
        if (strchr(which, f) == NULL)
            continue;
        put(o, " ", 1);
        if (f == 'O') {
            put(o, t->at, t->len);
            continue;
        }
        put(o, &f, 1);
        uint32_t expiry = rec != NULL ? kvs_record_expiry(rec) : 0;
        switch (f) {
        case 'k': put(o, c->key.at, c->key.len); break;
        case 'c': put_u64(o, cas); break;
        case 'f': put_u64(o, kvs_record_flags(rec)); break;
        case 's': put_u64(o, reclen - KVS_RECORD_HEADER); break;
        case 't':
            if (expiry == 0)
                puts_(o, "-1");
            else
                put_u64(o, expiry - now);
            break;
        }
    }
}

static long text_reply(uint8_t *msg, const struct kvs_packet *p, uint16_t status,
                       const uint8_t *rec, uint32_t reclen, uint64_t cas, uint32_t now,
                       uint64_t oldest, uint8_t part)
{
    struct command c;
    const uint8_t *data;
    text_command(p, &c, &data);
    struct out o = {msg, 0};
    const char *error = text_error(status, c.kind);
    if (status == KVS_TEXT_QUIET || (error != NULL && c.noreply && !c.loud))
        return -1;
    if (error != NULL) {
        puts_(&o, error);
        puts_(&o, "\r\n");
        return (long)o.at;
    }
    bool hit = kvs_record_live(rec, reclen, now, oldest);
    const uint8_t *value = hit ? rec + KVS_RECORD_HEADER : NULL;
    size_t vallen = hit ? reclen - KVS_RECORD_HEADER : 0;
    const char *word = NULL;
    switch (c.kind) {
    case K_GET: case K_GETS: case K_GAT: case K_GATS:
        if (hit) {
            puts_(&o, "VALUE ");
            put(&o, c.key.at, c.key.len);
            puts_(&o, " ");
            put_u64(&o, kvs_record_flags(rec));
            puts_(&o, " ");
            put_u64(&o, vallen);
            if (c.kind == K_GETS || c.kind == K_GATS) {
                puts_(&o, " ");
                put_u64(&o, kvs_record_cas(rec));
            }
            puts_(&o, "\r\n");
            put(&o, value, vallen);
            puts_(&o, "\r\n");
        }
        if (!(part & KVS_SPLIT_MORE_KEYS))
            puts_(&o, "END\r\n");
        else if (!hit && !(part & KVS_SPLIT_FIRST) && !kvs_is_stream(p))
            return -1;              /* memcached drops this empty datagram */
        return (long)o.at;
    case K_INCR: case K_DECR:
        if (status != FLOEM_MC_OK) {
            word = "NOT_FOUND";
            break;
        }
        if (c.noreply)
            return -1;
        for (size_t i = KVS_RECORD_HEADER; i < reclen && rec[i] != ' '; i++)
            put(&o, rec + i, 1);
        puts_(&o, "\r\n");
        return (long)o.at;
    case K_SET: case K_ADD: case K_REPLACE: case K_APPEND: case K_PREPEND: case K_CAS:
        word = status == FLOEM_MC_OK ? "STORED" : status == FLOEM_MC_KEY_EXISTS ? "EXISTS"
               : status == FLOEM_MC_KEY_NOT_FOUND ? "NOT_FOUND" : "NOT_STORED";
        break;
    case K_TOUCH:
        word = status == FLOEM_MC_OK ? "TOUCHED" : "NOT_FOUND";
        break;
    case K_DELETE:
        word = status == FLOEM_MC_OK ? "DELETED" : "NOT_FOUND";
        break;
    case K_VERBOSITY: case K_FLUSH:
        word = "OK";
        break;
    case K_VERSION:
        word = "VERSION " KVS_VERSION;
        break;
    case K_MN:
        word = "MN";
        break;
    case K_MG:
        if (!hit) {
            if (c.noreply)
                return -1;
            puts_(&o, "EN");
            put_meta_flags(&o, &c, "Ok", NULL, 0, 0, now);
        } else {
            if (c.meta & M_V) {
                puts_(&o, "VA ");
                put_u64(&o, vallen);
            } else {
                puts_(&o, "HD");
            }
            put_meta_flags(&o, &c, "Okcfst", rec, reclen, kvs_record_cas(rec), now);
        }
        puts_(&o, "\r\n");
        if (hit && (c.meta & M_V)) {
            put(&o, value, vallen);
            puts_(&o, "\r\n");
        }
        return (long)o.at;
    case K_MS: case K_MD:
        if (status == FLOEM_MC_OK && c.noreply)
            return -1;
        puts_(&o, status == FLOEM_MC_OK ? "HD" : status == FLOEM_MC_KEY_EXISTS ? "EX"
                  : status == FLOEM_MC_KEY_NOT_FOUND ? "NF" : "NS");
        put_meta_flags(&o, &c, c.kind == K_MS ? "Okc" : "Ok", NULL, 0,
                       status == FLOEM_MC_OK ? cas : 0, now);
        puts_(&o, "\r\n");
        return (long)o.at;
    default:
        break;
    }
    if (c.noreply)
        return -1;
    puts_(&o, word);
    puts_(&o, "\r\n");
    return (long)o.at;
}

/* memcached's answer to a binary request that failed with `status` (complete_update_bin maps
 * a storage command's NOT_STORED by command). */
static uint16_t binary_status(uint8_t op, uint16_t status)
{
    if (status == FLOEM_MC_ITEM_NOT_STORED && op == FLOEM_MC_ADD)
        return FLOEM_MC_KEY_EXISTS;
    if (status == FLOEM_MC_ITEM_NOT_STORED && op == FLOEM_MC_REPLACE)
        return FLOEM_MC_KEY_NOT_FOUND;
    if (status == KVS_TEXT_NON_NUMERIC)
        return FLOEM_MC_DELTA_BADVAL;
    return status;
}

static long binary_reply(uint8_t *msg, struct kvs_packet *p, uint16_t status, const uint8_t *rec,
                         uint32_t reclen, uint64_t cas, uint32_t now, uint64_t oldest)
{
    const struct floem_mc_hdr *h = kvs_mc(p);
    uint8_t op = loud(h->opcode);
    struct floem_mc_msg r = {
        .magic = FLOEM_MC_RESPONSE, .opcode = h->opcode, .status = status,
        .opaque = floem_get32(&h->opaque),
    };
    bool hit = status == FLOEM_MC_OK && kvs_record_live(rec, reclen, now, oldest);
    bool fetches = op == FLOEM_MC_GET || op == FLOEM_MC_GETK || op == FLOEM_MC_GAT
                   || op == FLOEM_MC_GATK || op == FLOEM_MC_TOUCH;
    uint8_t value[8];
    if (status == FLOEM_MC_OK || (fetches && status == FLOEM_MC_KEY_NOT_FOUND)) {
        switch (op) {
        case FLOEM_MC_GET: case FLOEM_MC_GETK: case FLOEM_MC_GAT: case FLOEM_MC_GATK:
        case FLOEM_MC_TOUCH:
            if (!hit) {
                if (quiet(h->opcode))
                    return -1;
                r.status = FLOEM_MC_KEY_NOT_FOUND;
                if (op == FLOEM_MC_GETK || op == FLOEM_MC_GATK) {
                    r.key = kvs_key(p);     /* memcached echoes the key instead */
                    r.key_len = kvs_keylen(p);
                    r.value = r.key;
                    r.value_len = 0;
                    break;
                }
                r.value = (const uint8_t *)binary_error(r.status);
                r.value_len = (uint32_t)strlen((const char *)r.value);
                break;
            }
            r.extras = rec;                 /* the flags */
            r.extras_len = 4;
            r.cas = kvs_record_cas(rec);
            if (op == FLOEM_MC_GETK || op == FLOEM_MC_GATK) {
                r.key = kvs_key(p);
                r.key_len = kvs_keylen(p);
            }
            if (op != FLOEM_MC_TOUCH) {
                r.value = rec + KVS_RECORD_HEADER;
                r.value_len = reclen - KVS_RECORD_HEADER;
            }
            break;
        case FLOEM_MC_INCREMENT: case FLOEM_MC_DECREMENT: {
            if (quiet(h->opcode))
                return -1;
            uint64_t v = 0;             /* the new value, as a number */
            for (uint32_t i = KVS_RECORD_HEADER; i < reclen && rec[i] >= '0' && rec[i] <= '9'; i++)
                v = v * 10 + (uint64_t)(rec[i] - '0');
            floem_put32(value, (uint32_t)(v >> 32));
            floem_put32(value + 4, (uint32_t)v);
            r.value = value;
            r.value_len = 8;
            r.cas = reclen >= KVS_RECORD_HEADER ? kvs_record_cas(rec) : cas;
            break;
        }
        case FLOEM_MC_VERSION:
            r.value = (const uint8_t *)KVS_VERSION;
            r.value_len = (uint32_t)strlen(KVS_VERSION);
            break;
        case FLOEM_MC_SET: case FLOEM_MC_ADD: case FLOEM_MC_REPLACE: case FLOEM_MC_APPEND:
        case FLOEM_MC_PREPEND:
            if (quiet(h->opcode))
                return -1;
            r.cas = cas;
            break;
        default:                        /* DELETE, FLUSH, NOOP, QUIT: a bare OK */
            if (quiet(h->opcode))
                return -1;
            break;
        }
    } else {
        r.status = binary_status(op, status);
        r.value = (const uint8_t *)binary_error(r.status);
        r.value_len = (uint32_t)strlen((const char *)r.value);
    }
    return (long)floem_mc_build_message(msg, KVS_REPLY_MESSAGE_MAX, &r);
}

long kvs_reply(uint8_t *msg, struct kvs_packet *p, uint16_t status, const uint8_t *rec,
               uint32_t reclen, uint64_t cas, uint32_t now, uint64_t oldest, uint8_t part)
{
    if (kvs_is_text(p))
        return text_reply(msg, p, status, rec, reclen, cas, now, oldest, part);
    return binary_reply(msg, p, status, rec, reclen, cas, now, oldest);
}

bool kvs_stream_closes(struct kvs_packet *p, uint16_t status)
{
    if (kvs_is_text(p))
        return status == KVS_TEXT_QUIET;
    const struct floem_mc_hdr *h = kvs_mc(p);
    uint8_t ext = h->extras_len;
    uint16_t key = floem_get16(&h->key_len);
    uint32_t body = floem_get32(&h->body_len);
    return loud(h->opcode) == FLOEM_MC_QUIT || (uint32_t)key + ext > body
           || bad_binary(h->opcode, ext, key, body);
}

/* ---- statistics -------------------------------------------------------------------------- */

static uint32_t started;

__attribute__((constructor)) static void note_start(void)
{
    started = (uint32_t)time(NULL);
}

uint32_t kvs_uptime(void)
{
    return (uint32_t)time(NULL) - started;
}

uint32_t kvs_stats_record(uint8_t *rec, const uint64_t figures[KVS_STATS_FIGURES])
{
    memset(rec, 0, KVS_RECORD_HEADER);
    for (unsigned i = 0; i < KVS_STATS_FIGURES; i++) {
        floem_put32(rec + KVS_RECORD_HEADER + 8 * i, (uint32_t)(figures[i] >> 32));
        floem_put32(rec + KVS_RECORD_HEADER + 8 * i + 4, (uint32_t)figures[i]);
    }
    return KVS_RECORD_HEADER + 8 * KVS_STATS_FIGURES;
}

void kvs_stats_from_record(struct kvs_stats *st, const uint8_t *rec, uint32_t reclen)
{
    st->store = rec != NULL && reclen == KVS_RECORD_HEADER + 8 * KVS_STATS_FIGURES;
    if (!st->store)
        return;
    uint64_t *to[KVS_STATS_FIGURES] = {&st->curr_items, &st->total_items, &st->bytes,
                                       &st->evictions, &st->limit_maxbytes};
    for (unsigned i = 0; i < KVS_STATS_FIGURES; i++)
        *to[i] = get64(rec + KVS_RECORD_HEADER + 8 * i);
}

/* One statistic: a text line "STAT name value", or a binary STAT response. */
static void put_stat(struct out *o, const struct kvs_packet *p, const char *name,
                     const char *value)
{
    if (kvs_is_text(p)) {
        puts_(o, "STAT ");
        puts_(o, name);
        puts_(o, " ");
        puts_(o, value);
        puts_(o, "\r\n");
        return;
    }
    const struct floem_mc_hdr *h = kvs_mc(p);
    struct floem_mc_msg r = {
        .magic = FLOEM_MC_RESPONSE, .opcode = h->opcode, .opaque = floem_get32(&h->opaque),
        .key = (const uint8_t *)name, .key_len = (uint16_t)strlen(name),
        .value = (const uint8_t *)value, .value_len = (uint32_t)strlen(value),
    };
    o->at += floem_mc_build_message(o->msg + o->at, KVS_REPLY_MESSAGE_MAX - o->at, &r);
}

static void put_stat_u64(struct out *o, const struct kvs_packet *p, const char *name, uint64_t v)
{
    char digits[21];
    size_t n = 0;
    do
        digits[sizeof digits - 2 - n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    digits[sizeof digits - 1] = '\0';
    put_stat(o, p, name, digits + sizeof digits - 1 - n);
}

bool kvs_stats_resets(struct kvs_packet *p)
{
    if (!kvs_is_text(p))
        return kvs_keylen(p) == 5 && memcmp(kvs_key(p), "reset", 5) == 0;
    struct command c;
    const uint8_t *data;
    text_command(p, &c, &data);
    return c.tokens.n > 2;
}

long kvs_stats_reply(uint8_t *msg, struct kvs_packet *p, const struct kvs_stats *st)
{
    struct out o = {msg, 0};
    bool text = kvs_is_text(p);
    if (!text && kvs_keylen(p) != 0 && !kvs_stats_resets(p)) {
        const struct floem_mc_hdr *h = kvs_mc(p);
        struct floem_mc_msg r = {           /* settings, items, slabs, ...: not kept here */
            .magic = FLOEM_MC_RESPONSE, .opcode = h->opcode, .status = FLOEM_MC_KEY_NOT_FOUND,
            .opaque = floem_get32(&h->opaque), .value = (const uint8_t *)"Not found",
            .value_len = 9,
        };
        return (long)floem_mc_build_message(msg, KVS_REPLY_MESSAGE_MAX, &r);
    }
    if (kvs_stats_resets(p)) {
        if (text) {
            puts_(&o, "RESET\r\n");
            return (long)o.at;
        }
    } else {
        const struct { const char *name; uint64_t value; } all[] = {
            {"pid", st->pid}, {"uptime", st->uptime}, {"time", st->time},
        };
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            put_stat_u64(&o, p, all[i].name, all[i].value);
        put_stat(&o, p, "version", KVS_VERSION);
        const struct { const char *name; uint64_t value; } counts[] = {
            {"pointer_size", 8 * sizeof(void *)},
            {"curr_connections", st->curr_connections},
            {"total_connections", st->total_connections},
            {"cmd_get", st->cmd_get}, {"cmd_set", st->cmd_set}, {"cmd_flush", st->cmd_flush},
            {"cmd_touch", st->cmd_touch}, {"get_hits", st->get_hits},
            {"get_misses", st->get_misses}, {"delete_misses", st->delete_misses},
            {"delete_hits", st->delete_hits}, {"incr_misses", st->incr_misses},
            {"incr_hits", st->incr_hits}, {"decr_misses", st->decr_misses},
            {"decr_hits", st->decr_hits}, {"cas_misses", st->cas_misses},
            {"cas_hits", st->cas_hits}, {"cas_badval", st->cas_badval},
            {"touch_hits", st->touch_hits}, {"touch_misses", st->touch_misses},
            {"bytes_read", st->bytes_read}, {"bytes_written", st->bytes_written},
            {"threads", st->threads},
        };
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
            put_stat_u64(&o, p, counts[i].name, counts[i].value);
        if (st->store) {
            const struct { const char *name; uint64_t value; } store[] = {
                {"limit_maxbytes", st->limit_maxbytes}, {"curr_items", st->curr_items},
                {"total_items", st->total_items}, {"bytes", st->bytes},
                {"evictions", st->evictions},
            };
            for (size_t i = 0; i < sizeof store / sizeof store[0]; i++)
                put_stat_u64(&o, p, store[i].name, store[i].value);
        }
    }
    if (text) {
        puts_(&o, "END\r\n");
    } else {                                /* the last: a response with no key */
        const struct floem_mc_hdr *h = kvs_mc(p);
        struct floem_mc_msg r = {
            .magic = FLOEM_MC_RESPONSE, .opcode = h->opcode, .opaque = floem_get32(&h->opaque),
        };
        o.at += floem_mc_build_message(o.msg + o.at, KVS_REPLY_MESSAGE_MAX - o.at, &r);
    }
    return (long)o.at;
}

/* ---- reply frames ------------------------------------------------------------------------ */

static size_t chunk(const struct kvs_packet *req)
{
    return kvs_is_stream(req) ? KVS_STREAM_CHUNK : KVS_REPLY_CHUNK;
}

unsigned kvs_reply_frames(const struct kvs_packet *req, size_t len)
{
    unsigned n = (unsigned)((len + chunk(req) - 1) / chunk(req));
    return n == 0 && !kvs_is_stream(req) ? 1 : n;   /* an empty datagram "of 0" */
}

/* The bytes of a message of `len` bytes that frame `seq` carries. */
static size_t part_len(const struct kvs_packet *req, size_t len, unsigned seq)
{
    size_t piece = chunk(req), from = (size_t)seq * piece;
    return from >= len ? 0 : len - from < piece ? len - from : piece;
}

size_t kvs_reply_size(const struct kvs_packet *req, size_t len, unsigned seq)
{
    return kvs_headers(req) + part_len(req, len, seq);
}

size_t kvs_reply_write(uint8_t *out, const struct kvs_packet *req, const uint8_t *msg,
                       size_t len, unsigned seq)
{
    size_t n = part_len(req, len, seq), size = kvs_reply_size(req, len, seq);
    const uint8_t *from = msg + (size_t)seq * chunk(req);
    if (kvs_is_stream(req)) {
        memmove(out, req, KVS_TCP_HEADERS);
        floem_tcp_swap(out);
        memcpy(out + KVS_TCP_HEADERS, from, n);
        floem_tcp_set_length(out, size);
        return size;
    }
    uint16_t request_id = floem_get16(&req->frame.request_id);
    memmove(out, req, FLOEM_UDP_FRAME_LEN);
    floem_udp_swap(out);
    struct kvs_packet *reply = (struct kvs_packet *)out;
    floem_put16(&reply->frame.request_id, request_id);
    floem_put16(&reply->frame.sequence, (uint16_t)seq);
    floem_put16(&reply->frame.total, (uint16_t)((len + KVS_REPLY_CHUNK - 1) / KVS_REPLY_CHUNK));
    floem_put16(&reply->frame.reserved, 0);
    memcpy(out + KVS_UDP_HEADERS, from, n);
    floem_udp_set_length(out, size, 0);
    return size;
}
