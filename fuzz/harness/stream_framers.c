/* Fuzz target: the framers of TCP streams (library/c/memcached.c's memcached text, binary and
 * either, library/c/stream.c's length-prefixed), as the tcp backend (runtime/src/net_tcp.c)
 * calls them: with the bytes a connection has received from where its next message starts,
 * over and over as more arrive.
 *
 * Input: a byte choosing the framer (and, for length-prefixed, the next four its layout:
 * field size, offset, header beyond the field, whole or not), a byte giving the size of the
 * pieces the stream arrives in (1 to 256 bytes), then the stream. It is framed twice: all
 * of it at once, and piece by piece, calling the framer again after each piece with all it
 * has of the message so far (each call's bytes in a buffer of exactly their size, so a read
 * past them is reported). Checks: both ways find the same messages, of the same lengths, and
 * stop (at a close or at bytes that are not yet a message) at the same place; a length is
 * never 0, nor shorter than the bytes the framer needed to find it; the connection's state
 * evolves the same way.
 */
#include "fuzz.h"
#include "memcached.h"
#include "stream.h"

#include "floem/net.h"

#define MAX_MESSAGES 4096

struct framing {
    long lengths[MAX_MESSAGES];
    size_t n;
    bool closed;
};

/* One call of the framer on exactly `len` bytes at `data`. */
static long call(const floem_framer_t *f, uint64_t *state, const uint8_t *data, size_t len)
{
    uint8_t *copy = fuzz_copy(data, len);
    long got = f->frame(f->config, state, copy, len);
    free(copy);
    FUZZ_CHECK(got != 0 || len == 0 || got == FLOEM_FRAME_MORE);
    FUZZ_CHECK(got >= FLOEM_FRAME_CLOSE);
    return got;
}

/* The messages of `stream` when the first `arrived` bytes are there, then the rest in pieces
 * of `piece` bytes (arrived == len: at once). */
static void frame(const floem_framer_t *f, const uint8_t *stream, size_t len, size_t piece,
                  struct framing *out)
{
    uint64_t state = 0;
    size_t at = 0, have = piece < len ? piece : len;
    memset(out, 0, sizeof *out);
    while (out->n < MAX_MESSAGES) {
        long got = call(f, &state, stream + at, have - at);
        if (got == FLOEM_FRAME_CLOSE) {
            out->closed = true;
            return;
        }
        if (got == FLOEM_FRAME_MORE || (size_t)got > have - at) {
            if (have == len)
                return;                     /* the stream ends before the message does */
            have = len - have < piece ? len : have + piece;
            continue;
        }
        out->lengths[out->n++] = got;
        at += (size_t)got;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = {data, size};
    uint8_t which = fuzz_u8(&in) % 4;
    struct floem_length_prefix prefix = {0};
    floem_framer_t f = {floem_frame_memcached, NULL};
    if (which == 0)
        f.frame = floem_frame_memcached_text;
    else if (which == 1)
        f.frame = floem_frame_memcached_binary;
    else if (which == 3) {
        static const uint32_t sizes[] = {1, 2, 4, 8};
        prefix.size = sizes[fuzz_u8(&in) % 4];
        prefix.offset = fuzz_u8(&in) % 16;
        prefix.header = prefix.offset + prefix.size + fuzz_u8(&in) % 16;
        uint8_t mode = fuzz_u8(&in);
        prefix.whole = mode & 1;
        prefix.little_endian = (mode >> 1) & 1;
        prefix.max = (mode & 4) ? UINT64_MAX : 1u << 20;
        f = (floem_framer_t){floem_frame_length_prefixed, &prefix};
    }
    size_t piece = 1 + fuzz_u8(&in);
    static struct framing whole, pieces;
    frame(&f, in.at, in.left, in.left, &whole);
    frame(&f, in.at, in.left, piece, &pieces);
    FUZZ_CHECK(whole.n == pieces.n && whole.closed == pieces.closed);
    for (size_t i = 0; i < whole.n; i++)
        FUZZ_CHECK(whole.lengths[i] == pieces.lengths[i] && whole.lengths[i] > 0);
    return 0;
}
