/* The memcached protocols: binary messages parsed and built, text lines tokenized, TCP
 * streams framed (see memcached.h). */
#include "memcached.h"

#include "floem/net.h"

#include <stdint.h>
#include <string.h>

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

enum floem_mc_verdict floem_mc_parse_message(const void *data, size_t len,
                                             struct floem_mc_msg *msg)
{
    const uint8_t *h = (const uint8_t *)data;
    if (h == NULL || len < FLOEM_MC_HDR_LEN)
        return FLOEM_MC_TRUNCATED;
    if (h[0] != FLOEM_MC_REQUEST && h[0] != FLOEM_MC_RESPONSE)
        return FLOEM_MC_BAD_MAGIC;
    uint16_t key_len = get16(h + 2);
    uint8_t extras_len = h[4];
    uint32_t body_len = get32(h + 8);
    if ((uint32_t)extras_len + key_len > body_len)
        return FLOEM_MC_BAD_LENGTHS;
    if (body_len > len - FLOEM_MC_HDR_LEN)
        return FLOEM_MC_BODY_TRUNCATED;
    msg->request_id = msg->sequence = msg->total = 0;
    msg->magic = h[0];
    msg->opcode = h[1];
    msg->data_type = h[5];
    msg->status = get16(h + 6);
    msg->opaque = get32(h + 12);
    msg->cas = (uint64_t)get32(h + 16) << 32 | get32(h + 20);
    msg->extras = h + FLOEM_MC_HDR_LEN;
    msg->extras_len = extras_len;
    msg->key = msg->extras + extras_len;
    msg->key_len = key_len;
    msg->value = msg->key + key_len;
    msg->value_len = body_len - extras_len - key_len;
    return FLOEM_MC_PARSED;
}

enum floem_mc_verdict floem_mc_parse(const void *data, size_t len, struct floem_mc_msg *msg)
{
    const uint8_t *p = (const uint8_t *)data;
    if (p == NULL || len < FLOEM_MC_UDP_HDR_LEN + FLOEM_MC_HDR_LEN)
        return FLOEM_MC_TRUNCATED;
    enum floem_mc_verdict v = floem_mc_parse_message(p + FLOEM_MC_UDP_HDR_LEN,
                                                     len - FLOEM_MC_UDP_HDR_LEN, msg);
    if (v != FLOEM_MC_PARSED)
        return v;
    msg->request_id = get16(p);
    msg->sequence = get16(p + 2);
    msg->total = get16(p + 4);
    return FLOEM_MC_PARSED;
}

size_t floem_mc_build_message(void *out, size_t cap, const struct floem_mc_msg *msg)
{
    uint8_t *h = (uint8_t *)out;
    uint64_t body = (uint64_t)msg->extras_len + msg->key_len + msg->value_len;
    if (body > UINT32_MAX || cap < FLOEM_MC_HDR_LEN || body > cap - FLOEM_MC_HDR_LEN)
        return 0;
    h[0] = msg->magic;
    h[1] = msg->opcode;
    put16(h + 2, msg->key_len);
    h[4] = msg->extras_len;
    h[5] = msg->data_type;
    put16(h + 6, msg->status);
    put32(h + 8, (uint32_t)body);
    put32(h + 12, msg->opaque);
    put32(h + 16, (uint32_t)(msg->cas >> 32));
    put32(h + 20, (uint32_t)msg->cas);
    uint8_t *at = h + FLOEM_MC_HDR_LEN;
    if (msg->extras_len)
        memcpy(at, msg->extras, msg->extras_len);
    at += msg->extras_len;
    if (msg->key_len)
        memcpy(at, msg->key, msg->key_len);
    at += msg->key_len;
    if (msg->value_len)
        memcpy(at, msg->value, msg->value_len);
    return FLOEM_MC_HDR_LEN + (size_t)body;
}

size_t floem_mc_build(void *out, size_t cap, const struct floem_mc_msg *msg)
{
    uint8_t *p = (uint8_t *)out;
    if (cap < FLOEM_MC_UDP_HDR_LEN)
        return 0;
    size_t n = floem_mc_build_message(p + FLOEM_MC_UDP_HDR_LEN, cap - FLOEM_MC_UDP_HDR_LEN, msg);
    if (n == 0)
        return 0;
    put16(p, msg->request_id);
    put16(p + 2, msg->sequence);
    put16(p + 4, msg->total);
    put16(p + 6, 0);
    return FLOEM_MC_UDP_HDR_LEN + n;
}

/* ---- the text protocol ------------------------------------------------------------------- */

void floem_mc_tokenize(const uint8_t *s, size_t len, struct floem_mc_tokens *out)
{
    size_t n = 0, start = 0;
    while (start < len && n < FLOEM_MC_MAX_TOKENS - 1) {
        if (s[start] == ' ') {          /* spaces in a row make no empty tokens */
            start++;
            continue;
        }
        const uint8_t *space = memchr(s + start, ' ', len - start);
        size_t end = space != NULL ? (size_t)(space - s) : len;
        out->t[n++] = (struct floem_mc_token){s + start, end - start};
        start = end + 1;
    }
    bool more = n == FLOEM_MC_MAX_TOKENS - 1 && start < len;
    out->rest = more ? s + start : NULL;
    out->rest_len = more ? len - start : 0;
    out->t[n] = (struct floem_mc_token){out->rest, 0};
    out->n = n + 1;
}

static bool is_space(uint8_t c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* strtoull's reading of a token (base 10): *value, whether it had a '-' sign, and how many
 * bytes it took (0: no number); *range when it overflowed. */
static size_t read_number(const struct floem_mc_token *t, uint64_t *value, bool *minus, bool *range,
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
static bool number_ends(const struct floem_mc_token *t, size_t used)
{
    return used == t->len || is_space(t->at[used]);
}

static bool has_minus(const struct floem_mc_token *t)
{
    return memchr(t->at, '-', t->len) != NULL;
}

/* safe_strtoull */
bool floem_mc_read_u64(const struct floem_mc_token *t, uint64_t *out)
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
bool floem_mc_read_u32(const struct floem_mc_token *t, uint32_t *out)
{
    uint64_t v;
    if (!floem_mc_read_u64(t, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* safe_strtol: a 64-bit long, cut to 32 bits */
bool floem_mc_read_i32(const struct floem_mc_token *t, int32_t *out)
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

/* The first word of `line` (`len` bytes): its first token, found without tokenizing it. */
static struct floem_mc_token first_word(const uint8_t *line, size_t len)
{
    size_t at = 0;
    while (at < len && line[at] == ' ')
        at++;
    const uint8_t *space = memchr(line + at, ' ', len - at);
    return (struct floem_mc_token){line + at, (space != NULL ? (size_t)(space - line) : len) - at};
}

size_t floem_mc_text_block(const uint8_t *line, size_t len)
{
    const uint8_t *nul = memchr(line, 0, len);
    if (nul != NULL)
        len = (size_t)(nul - line);
    struct floem_mc_token word = first_word(line, len);
    bool ms = floem_mc_token_is(&word, "ms"), cas = floem_mc_token_is(&word, "cas");
    if (!ms && !cas && !floem_mc_token_is(&word, "set") && !floem_mc_token_is(&word, "add")
        && !floem_mc_token_is(&word, "replace") && !floem_mc_token_is(&word, "append")
        && !floem_mc_token_is(&word, "prepend"))
        return 0;                   /* no data block; not worth tokenizing: most lines are gets */
    struct floem_mc_tokens tk;
    floem_mc_tokenize(line, len, &tk);
    const struct floem_mc_token *t = tk.t;
    int32_t vlen;
    if (ms) {                       /* ms <key> <datalen> <flags>* */
        if (tk.n <= 3 || t[1].len > 250 || tk.n > 20)
            return 0;
        if (!floem_mc_read_i32(&t[2], &vlen) || vlen < 0 || vlen > INT32_MAX - 2)
            return 0;
        return (size_t)vlen + 2;    /* read, or swallowed after an error in its flags */
    }
    /* <command> <key> <flags> <exptime> <bytes> [<cas unique>] [noreply] */
    if ((tk.n != (cas ? 7u : 6u) && tk.n != (cas ? 8u : 7u)) || t[1].len > 250)
        return 0;
    uint32_t flags;
    int32_t exptime;
    uint64_t unique;
    if (!floem_mc_read_u32(&t[2], &flags) || !floem_mc_read_i32(&t[3], &exptime)
        || !floem_mc_read_i32(&t[4], &vlen) || (cas && !floem_mc_read_u64(&t[5], &unique)))
        return 0;
    if (vlen < 0 || vlen > INT32_MAX - 2)
        return 0;
    return (size_t)vlen + 2;        /* stored, or swallowed when too large */
}

/* ---- framers ------------------------------------------------------------------------------ */

static bool starts_with(const uint8_t *data, size_t len, const char *word)
{
    size_t n = strlen(word);
    return len >= n && memcmp(data, word, n) == 0;
}

/* Whether a line of more than FLOEM_MC_LINE_MAX bytes (`len` of them here) is junk: not a
 * get or gets after at most 100 spaces. */
static bool junk(const uint8_t *data, size_t len)
{
    size_t i = 0;
    while (i < len && data[i] == ' ')
        i++;
    return i > 100 || (!starts_with(data + i, len - i, "get ")
                       && !starts_with(data + i, len - i, "gets "));
}

long floem_frame_memcached_text(const void *config, uint64_t *state, const uint8_t *data,
                                size_t len)
{
    (void)config;
    (void)state;
    const uint8_t *nl = memchr(data, '\n', len);
    size_t line = nl != NULL ? (size_t)(nl - data) : len;
    /* memcached's try_read_command_ascii: no "\n" in 2 KiB is a large get, or junk, closed;
     * so is a line that long whose "\n" came with it, as when it comes later (the stream's
     * messages do not depend on how its bytes arrive) */
    if (line > FLOEM_MC_LINE_MAX && junk(data, len))
        return FLOEM_FRAME_CLOSE;
    if (nl == NULL)
        return FLOEM_FRAME_MORE;
    size_t n = line;
    if (n > 1 && data[n - 1] == '\r')
        n--;
    return (long)(line + 1 + floem_mc_text_block(data, n));
}

long floem_frame_memcached_binary(const void *config, uint64_t *state, const uint8_t *data,
                                  size_t len)
{
    (void)config;
    (void)state;
    if (len == 0)
        return FLOEM_FRAME_MORE;
    if (data[0] != FLOEM_MC_REQUEST)
        return FLOEM_FRAME_CLOSE;   /* memcached closes a binary connection at a bad magic */
    if (len < FLOEM_MC_HDR_LEN)
        return FLOEM_FRAME_MORE;
    return (long)(FLOEM_MC_HDR_LEN + (uint64_t)get32(data + 8));
}

/* The protocol of a connection, in the framer's state: chosen by its first byte. */
enum { PROTOCOL_UNKNOWN, PROTOCOL_TEXT, PROTOCOL_BINARY };

long floem_frame_memcached(const void *config, uint64_t *state, const uint8_t *data, size_t len)
{
    if (*state == PROTOCOL_UNKNOWN) {
        if (len == 0)
            return FLOEM_FRAME_MORE;
        *state = data[0] == FLOEM_MC_REQUEST ? PROTOCOL_BINARY : PROTOCOL_TEXT;
    }
    return *state == PROTOCOL_BINARY ? floem_frame_memcached_binary(config, state, data, len)
                                     : floem_frame_memcached_text(config, state, data, len);
}
