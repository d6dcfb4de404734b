/* memcached's protocols over UDP for the key-value store: see proto.h.
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

bool kvs_uncut(uint8_t *frame, size_t size)
{
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

int kvs_check(const uint8_t *frame, size_t size)
{
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

#define MAX_TOKENS 24               /* memcached's: 23 tokens, then the rest of the line */
#define META_MAX_TOKENS 20          /* MFLAG_MAX_OPT_LENGTH */
#define META_MAX_OPAQUE 32          /* MFLAG_MAX_OPAQUE_LENGTH */

struct token {
    const uint8_t *at;
    size_t len;
};

/* A line split memcached's way: `n` is what memcached calls ntokens (the tokens and the
 * final one, which is `rest`: the unsplit remainder, or NULL at the line's end). */
struct tokens {
    struct token t[MAX_TOKENS];
    size_t n;
    const uint8_t *rest;
    size_t rest_len;
};

static void tokenize(const uint8_t *s, size_t len, struct tokens *out)
{
    size_t n = 0, start = 0, i = 0;
    for (; i < len; i++) {
        if (s[i] != ' ')
            continue;
        if (i > start) {
            out->t[n++] = (struct token){s + start, i - start};
            if (n == MAX_TOKENS - 1) {
                start = ++i;
                break;
            }
        }
        start = i + 1;
    }
    if (i == len && start < len)
        out->t[n++] = (struct token){s + start, len - start};
    bool more = n == MAX_TOKENS - 1 && start < len;
    out->rest = more ? s + start : NULL;
    out->rest_len = more ? len - start : 0;
    out->t[n] = (struct token){out->rest, 0};
    out->n = n + 1;
}

static bool token_is(const struct token *t, const char *word)
{
    size_t n = strlen(word);
    return t->len == n && memcmp(t->at, word, n) == 0;
}

static bool is_space(uint8_t c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* strtoull's reading of a token (base 10): *value, whether it had a '-' sign, and how many
 * bytes it took (0: no number); *range when it overflowed. */
static size_t read_number(const struct token *t, uint64_t *value, bool *minus, bool *range,
                          uint64_t limit_pos, uint64_t limit_neg)
{
    size_t i = 0;
    while (i < t->len && is_space(t->at[i]))
        i++;
    *minus = false;
    if (i < t->len && (t->at[i] == '+' || t->at[i] == '-'))
        *minus = t->at[i++] == '-';
    size_t digits = i;
    uint64_t v = 0;
    *range = false;
    uint64_t limit = *minus ? limit_neg : limit_pos;
    for (; i < t->len && t->at[i] >= '0' && t->at[i] <= '9'; i++) {
        uint64_t d = (uint64_t)(t->at[i] - '0');
        if (v > (limit - d) / 10)
            *range = true;
        else
            v = v * 10 + d;
    }
    if (i == digits)
        return 0;
    *value = v;
    return i;
}

/* The number ends the token, or a space character follows it (memcached's check). */
static bool number_ends(const struct token *t, size_t used)
{
    return used == t->len || is_space(t->at[used]);
}

static bool has_minus(const struct token *t)
{
    return memchr(t->at, '-', t->len) != NULL;
}

/* safe_strtoull */
static bool read_u64(const struct token *t, uint64_t *out)
{
    uint64_t v = 0;
    bool minus, range;
    size_t used = read_number(t, &v, &minus, &range, UINT64_MAX, UINT64_MAX);
    if (used == 0 || range || !number_ends(t, used))
        return false;
    v = minus ? (uint64_t)0 - v : v;
    if ((int64_t)v < 0 && has_minus(t))
        return false;
    *out = v;
    return true;
}

/* safe_strtoul: a 64-bit unsigned long, cut to 32 bits */
static bool read_u32(const struct token *t, uint32_t *out)
{
    uint64_t v;
    if (!read_u64(t, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* safe_strtol: a 64-bit long, cut to 32 bits */
static bool read_i32(const struct token *t, int32_t *out)
{
    uint64_t v = 0;
    bool minus, range;
    size_t used = read_number(t, &v, &minus, &range, (uint64_t)INT64_MAX,
                              (uint64_t)INT64_MAX + 1);
    if (used == 0 || range || !number_ends(t, used))
        return false;
    *out = (int32_t)(uint32_t)(minus ? (uint64_t)0 - v : v);
    return true;
}

/* A token's number after its flag letter (meta commands). */
static struct token flag_value(const struct token *t)
{
    return (struct token){t->at + 1, t->len - 1};
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
    K_MS, K_MD,
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
    struct token key;
    struct token first_key;         /* a get's first key token */
    uint32_t flags;
    int32_t exptime;
    int32_t vlen;                   /* a storage command's value length */
    uint64_t arg;                   /* cas unique, delta, compare value */
    size_t data;                    /* bytes of data block after the line (value + 2) */
    bool cut;                       /* the datagram holds less of the data block (then 0) */
    uint8_t op;                     /* what it asks the store */
    unsigned meta;                  /* M_* */
    struct tokens tokens;
};

static const struct {
    const char *name;
    enum kind kind;
} COMMANDS[] = {
    {"get", K_GET}, {"gets", K_GETS}, {"gat", K_GAT}, {"gats", K_GATS}, {"bget", K_GET},
    {"set", K_SET}, {"add", K_ADD}, {"replace", K_REPLACE}, {"append", K_APPEND},
    {"prepend", K_PREPEND}, {"cas", K_CAS}, {"incr", K_INCR}, {"decr", K_DECR},
    {"touch", K_TOUCH}, {"delete", K_DELETE}, {"verbosity", K_VERBOSITY},
    {"flush_all", K_FLUSH}, {"version", K_VERSION}, {"quit", K_QUIT}, {"mn", K_MN},
    {"mg", K_MG}, {"ms", K_MS}, {"md", K_MD},
};

static bool noreply_token(struct command *c)
{
    const struct token *t = &c->tokens.t[c->tokens.n - 2];
    c->noreply = token_is(t, "noreply");
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
    const struct token *t = c->tokens.t;
    if (!read_u32(&t[2], &c->flags) || !read_i32(&t[3], &c->exptime)
        || !read_i32(&t[4], &c->vlen) || (cas && !read_u64(&t[5], &c->arg)))
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
        const struct token *t = &c->tokens.t[i];
        uint8_t o = t->at[0];
        if (o >= 127 || seen[o]) {
            fail(c, duplicate);
            return false;
        }
        seen[o] = true;
        struct token v = flag_value(t);
        int32_t i32;
        uint64_t u64;
        switch (o) {
        case 'b': case 'h': case 'l': case 'I':
            unsupported = true;
            break;
        case 'N': case 'R':
            unsupported = true;
            if (!read_i32(&v, &i32)) {
                errstr = KVS_TEXT_BAD_TOKEN;
                error = true;
            }
            break;
        case 'T':
            if (!read_i32(&v, &i32)) {
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
            if (!read_u32(&v, &c->flags))
                error = true;
            c->meta |= M_FLAGS;
            break;
        case 'C':
            if (!read_u64(&v, &c->arg)) {
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
            if (!read_u64(&v, &u64)) {
                errstr = KVS_TEXT_BAD_TOKEN;
                error = true;
            }
            break;
        case 'D':
            if (!read_u64(&v, &u64)) {
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
    if (!read_i32(&c->tokens.t[2], &c->vlen) || c->vlen < 0 || c->vlen > INT32_MAX - 2)
        return fail(c, KVS_TEXT_BAD_FORMAT);
    c->data = (size_t)c->vlen + 2;      /* from here on, an error swallows the data */
    if (!parse_meta_flags(c, 3, KVS_TEXT_DUPLICATE_FLAG, KVS_TEXT_INVALID_FLAG))
        return;
    if (!opaque_fits(c))
        return fail(c, KVS_TEXT_OPAQUE_TOO_LONG);
    uint8_t op = KVS_OP_SET;
    for (size_t i = 3; i < c->tokens.n - 1; i++) {
        const struct token *t = &c->tokens.t[i];
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
static void parse_command(const uint8_t *line, size_t len, struct command *c)
{
    const uint8_t *nul = memchr(line, 0, len);   /* memcached reads the line as a C string */
    if (nul != NULL)
        len = (size_t)(nul - line);
    memset(c, 0, offsetof(struct command, tokens));
    c->op = KVS_OP_NONE;
    tokenize(line, len, &c->tokens);
    struct tokens *tk = &c->tokens;
    if (tk->n < 2 || tk->t[0].len < 2)
        return fail(c, KVS_TEXT_ERROR);
    c->kind = K_ERROR;
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (token_is(&tk->t[0], COMMANDS[i].name))
            c->kind = COMMANDS[i].kind;
    const struct token *last = &tk->t[tk->n - 2];
    if (c->kind == K_ERROR && last->len >= 5 && memcmp(last->at, "HTTP/", 5) == 0)
        return fail(c, KVS_TEXT_QUIET);         /* memcached closes an HTTP "connection" */
    switch (c->kind) {
    case K_ERROR:
        return fail(c, KVS_TEXT_ERROR);
    case K_GET: case K_GETS: case K_GAT: case K_GATS: {
        if (tk->n < 3)
            return fail(c, KVS_TEXT_ERROR);
        bool touch = c->kind == K_GAT || c->kind == K_GATS;
        if (touch && !read_i32(&tk->t[1], &c->exptime))
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
        if (c->kind == K_TOUCH ? !read_i32(&tk->t[2], &c->exptime) : !read_u64(&tk->t[2], &c->arg))
            return fail(c, c->kind == K_TOUCH ? KVS_TEXT_BAD_EXPTIME : KVS_TEXT_BAD_DELTA);
        c->key = tk->t[1];
        c->op = c->kind == K_TOUCH ? KVS_OP_TOUCH : c->kind == K_INCR ? KVS_OP_INCR : KVS_OP_DECR;
        return;
    case K_DELETE:
        if (tk->n < 3 || tk->n > 5)
            return fail(c, KVS_TEXT_ERROR);
        if (tk->n > 3) {
            bool hold_is_zero = token_is(&tk->t[2], "0");
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
        if (!read_u32(&tk->t[1], &c->flags))
            return fail(c, KVS_TEXT_BAD_FORMAT);
        return;
    case K_FLUSH:
        if (tk->n > 4)
            return fail(c, KVS_TEXT_ERROR);
        noreply_token(c);
        if (tk->n != (c->noreply ? 3u : 2u) && !read_i32(&tk->t[1], &c->exptime))
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
    size_t stop = from;
    while (stop < end && text[stop] != ' ')
        stop++;
    *key = from;
    *key_len = stop - from;
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

size_t kvs_split_write(uint8_t *out, const uint8_t *from, const struct kvs_split *s)
{
    const struct kvs_packet *p = (const struct kvs_packet *)from;
    const uint8_t *text = kvs_text(p);
    uint8_t single[KVS_DATAGRAM_MAX];
    size_t n = 0, line_end = s->line + s->line_len;
    size_t terminator = s->data - line_end;             /* "\n" or "\r\n", as it came */
    if (s->key_len != 0) {              /* "<command> [<exptime>] <key>" */
        struct command c;
        parse_command(text + s->line, s->line_len, &c);
        size_t head = (size_t)(c.first_key.at - (text + s->line));
        memcpy(single, text + s->line, head);
        memcpy(single + head, text + s->key, s->key_len);
        n = head + s->key_len;
    } else {
        memcpy(single, text + s->line, s->line_len);
        n = s->line_len;
    }
    memcpy(single + n, text + line_end, terminator + s->data_len);
    n += terminator + s->data_len;
    if (out != from)
        memcpy(out, from, FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN);
    struct kvs_packet *q = (struct kvs_packet *)out;
    memcpy((uint8_t *)kvs_text(q), single, n);
    floem_put16(&q->frame.reserved, kvs_split_flags(s));
    size_t size = FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN + n;
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

static uint16_t split_flags(const struct kvs_packet *p)
{
    return floem_get16(&p->frame.reserved);
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

int kvs_parse(struct kvs_packet *p, uint32_t value_max, uint32_t now, struct kvs_request *r)
{
    memset(r, 0, sizeof *r);
    if (!kvs_is_text(p)) {
        uint8_t extlen = kvs_extlen(p);
        uint16_t keylen = kvs_keylen(p);
        uint32_t vallen = kvs_vallen(p);
        bool keyed = keylen > 0 && keylen <= KVS_KEY_MAX;
        uint64_t cas = (uint64_t)floem_get32(&p->mc.cas) << 32 | floem_get32((uint8_t *)&p->mc.cas + 4);
        r->key = kvs_key(p);
        r->keylen = keylen;
        r->op = KVS_OP_NONE;
        switch (p->mc.opcode) {
        case FLOEM_MC_GET:
        case FLOEM_MC_GETK:
        case FLOEM_MC_DELETE:
            if (!keyed || extlen != 0 || vallen != 0) {
                r->status = FLOEM_MC_INVALID_ARGUMENTS;
                return -1;
            }
            r->op = p->mc.opcode == FLOEM_MC_DELETE ? KVS_OP_DELETE : KVS_OP_GET;
            r->arg = r->op == KVS_OP_DELETE ? cas : 0;
            return -1;
        case FLOEM_MC_SET:
            if (!keyed || extlen != 8) {
                r->status = FLOEM_MC_INVALID_ARGUMENTS;
                return -1;
            }
            if (vallen <= value_max
                && kvs_text_len(p) - FLOEM_MC_HDR_LEN < floem_get32(&p->mc.body_len))
                return KVS_DROP_BAD_LENGTH;         /* a value cut short */
            r->op = KVS_OP_SET;
            r->status = vallen <= value_max ? FLOEM_MC_OK : FLOEM_MC_VALUE_TOO_LARGE;
            r->arg = cas;
            r->writes = r->status == FLOEM_MC_OK;
            return -1;
        case FLOEM_MC_NOOP:
            if (keylen != 0 || extlen != 0 || vallen != 0)
                r->status = FLOEM_MC_INVALID_ARGUMENTS;
            return -1;
        default:
            r->status = FLOEM_MC_UNKNOWN_COMMAND;
            return -1;
        }
    }
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
    uint32_t flags, expiry, vallen;
    const uint8_t *value;
    if (!kvs_is_text(p)) {
        flags = floem_get32(p->body);
        expiry = floem_get32(p->body + 4);
        expiry = expiry != 0 && expiry <= KVS_RELATIVE_EXPIRY_MAX ? expiry + now : expiry;
        vallen = kvs_vallen(p);
        value = kvs_value(p);
    } else {
        struct command c;
        text_command(p, &c, &value);
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
    struct token t = {value, oldlen - KVS_RECORD_HEADER};
    uint64_t v;
    if (t.len == 0 || !read_u64(&t, &v)) {
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
        const struct token *t = &c->tokens.t[i];
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
                       uint64_t oldest)
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
        if (!(split_flags(p) & KVS_SPLIT_MORE_KEYS))
            puts_(&o, "END\r\n");
        else if (!hit && !(split_flags(p) & KVS_SPLIT_FIRST))
            return -1;              /* memcached drops this empty answer */
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

long kvs_reply(uint8_t *msg, struct kvs_packet *p, uint16_t status, const uint8_t *rec,
               uint32_t reclen, uint64_t cas, uint32_t now, uint64_t oldest)
{
    if (kvs_is_text(p))
        return text_reply(msg, p, status, rec, reclen, cas, now, oldest);
    struct floem_mc_msg r = {
        .request_id = floem_get16(&p->frame.request_id), .sequence = 0, .total = 1,
        .magic = FLOEM_MC_RESPONSE, .opcode = p->mc.opcode, .status = status,
        .opaque = floem_get32(&p->mc.opaque),
    };
    uint8_t op = p->mc.opcode;
    if (status == FLOEM_MC_OK && (op == FLOEM_MC_GET || op == FLOEM_MC_GETK)) {
        if (op == FLOEM_MC_GETK) {
            r.key = kvs_key(p);
            r.key_len = kvs_keylen(p);
        }
        if (kvs_record_live(rec, reclen, now, oldest)) {
            r.extras = rec;                 /* the flags */
            r.extras_len = 4;
            r.value = rec + KVS_RECORD_HEADER;
            r.value_len = reclen - KVS_RECORD_HEADER;
            r.cas = kvs_record_cas(rec);
        } else {
            r.status = FLOEM_MC_KEY_NOT_FOUND;
            if (op != FLOEM_MC_GETK) {      /* memcached echoes GETK's key instead */
                r.value = (const uint8_t *)binary_error(r.status);
                r.value_len = (uint32_t)strlen((const char *)r.value);
            }
        }
    } else if (status != FLOEM_MC_OK) {
        r.value = (const uint8_t *)binary_error(status);
        r.value_len = (uint32_t)strlen((const char *)r.value);
    } else if (op == FLOEM_MC_SET) {
        r.cas = cas;
    }
    /* the frame header is left out: kvs_reply_write writes one per datagram */
    uint8_t whole[FLOEM_MC_UDP_HDR_LEN + KVS_REPLY_MESSAGE_MAX];
    size_t n = floem_mc_build(whole, sizeof whole, &r) - FLOEM_MC_UDP_HDR_LEN;
    memcpy(msg, whole + FLOEM_MC_UDP_HDR_LEN, n);
    return (long)n;
}

unsigned kvs_reply_datagrams(size_t len)
{
    return (unsigned)((len + KVS_REPLY_CHUNK - 1) / KVS_REPLY_CHUNK);
}

/* The bytes of a message of `len` bytes that datagram `seq` carries. */
static size_t part_len(size_t len, unsigned seq)
{
    size_t from = (size_t)seq * KVS_REPLY_CHUNK;
    return from >= len ? 0 : len - from < KVS_REPLY_CHUNK ? len - from : KVS_REPLY_CHUNK;
}

size_t kvs_reply_size(size_t len, unsigned seq)
{
    return FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN + part_len(len, seq);
}

size_t kvs_reply_write(uint8_t *out, const struct kvs_packet *req, const uint8_t *msg,
                       size_t len, unsigned seq)
{
    size_t n = part_len(len, seq);
    uint16_t request_id = floem_get16(&req->frame.request_id);
    memmove(out, req, FLOEM_UDP_FRAME_LEN);
    floem_udp_swap(out);
    struct kvs_packet *reply = (struct kvs_packet *)out;
    floem_put16(&reply->frame.request_id, request_id);
    floem_put16(&reply->frame.sequence, (uint16_t)seq);
    floem_put16(&reply->frame.total, (uint16_t)kvs_reply_datagrams(len));
    floem_put16(&reply->frame.reserved, 0);
    memcpy(out + FLOEM_UDP_FRAME_LEN + FLOEM_MC_UDP_HDR_LEN, msg + (size_t)seq * KVS_REPLY_CHUNK, n);
    size_t size = kvs_reply_size(len, seq);
    floem_udp_set_length(out, size, 0);
    return size;
}
