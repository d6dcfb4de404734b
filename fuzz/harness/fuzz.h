/* What the fuzz harnesses share: frames laid out as packet I/O hands them to elements, a
 * reader of the fuzzer's bytes, and the check that turns a wrong answer into a crash.
 *
 * Every harness is a libFuzzer target (LLVMFuzzerTestOneInput) built with
 * -fsanitize=fuzzer,address,undefined by scripts/fuzz.sh; see docs/fuzzing.md.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sanitizer/asan_interface.h>

/* The frame buffers of the udp and pcap backends (runtime/include/floem/net_backend.h). */
#define FUZZ_BUFFER_BYTES 2048

/* Abort (a finding) when `cond` is false: the parser accepted or produced something wrong. */
#define FUZZ_CHECK(cond)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

/* A received frame: `size` bytes copied to the start of a fresh FUZZ_BUFFER_BYTES buffer,
 * the bytes after them unaddressable (as the pool makes them under AddressSanitizer), so
 * a read or write past the frame's end is reported. `size` must not exceed the buffer. */
static inline uint8_t *fuzz_frame(const uint8_t *data, size_t size)
{
    uint8_t *frame = malloc(FUZZ_BUFFER_BYTES);
    if (frame == NULL)
        abort();
    memcpy(frame, data, size);
    ASAN_POISON_MEMORY_REGION(frame + size, FUZZ_BUFFER_BYTES - size);
    return frame;
}

/* The whole buffer usable again: what an element may write when it grows a frame in place
 * up to the buffer's room (MemcachedReply's capacity, the KVS's reply). */
static inline void fuzz_frame_room(uint8_t *frame)
{
    ASAN_UNPOISON_MEMORY_REGION(frame, FUZZ_BUFFER_BYTES);
}

static inline void fuzz_frame_free(uint8_t *frame)
{
    fuzz_frame_room(frame);
    free(frame);
}

/* A copy of `size` bytes in a buffer of their own (free it), e.g. the frame a harness
 * expects an element to make of a received one. */
static inline uint8_t *fuzz_copy(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    FUZZ_CHECK(copy != NULL);
    memcpy(copy, data, size);
    return copy;
}

/* The fuzzer's bytes, consumed from the front; reads past the end give zeros. */
struct fuzz_input {
    const uint8_t *at;
    size_t left;
};

static inline uint8_t fuzz_u8(struct fuzz_input *in)
{
    if (in->left == 0)
        return 0;
    in->left--;
    return *in->at++;
}

static inline uint16_t fuzz_u16(struct fuzz_input *in)
{
    uint16_t hi = fuzz_u8(in);
    return (uint16_t)(hi << 8 | fuzz_u8(in));
}

/* Up to `want` bytes: where they are, and *got of them. */
static inline const uint8_t *fuzz_bytes(struct fuzz_input *in, size_t want, size_t *got)
{
    const uint8_t *p = in->at;
    *got = want < in->left ? want : in->left;
    in->at += *got;
    in->left -= *got;
    return p;
}

/* The next of the frames an input is a sequence of: a 2-byte big-endian length (more than
 * FUZZ_BUFFER_BYTES counts as that), then as many bytes (fewer when the input ends first).
 * Where they are, and *size of them. */
static inline const uint8_t *fuzz_next_frame(struct fuzz_input *in, size_t *size)
{
    size_t want = fuzz_u16(in);
    return fuzz_bytes(in, want < FUZZ_BUFFER_BYTES ? want : FUZZ_BUFFER_BYTES, size);
}

/* `check` on each frame of an input that is a sequence of frames (fuzz_next_frame). */
static inline void fuzz_each_frame(const uint8_t *data, size_t size,
                                   void (*check)(const uint8_t *frame, size_t size))
{
    struct fuzz_input in = {data, size};
    while (in.left > 0) {
        size_t got;
        const uint8_t *bytes = fuzz_next_frame(&in, &got);
        check(bytes, got);
    }
}

/* An app's drop counts, `n` of them, read by `count(which)` (a counter_function of
 * fuzz/apps/callables.py) into `at`. */
static inline void fuzz_counts(uint64_t (*count)(int), uint64_t *at, int n)
{
    for (int i = 0; i < n; i++)
        at[i] = count(i);
}

/* Since `before`, drop count `which` grew by one and the others not (`which` -1: none grew). */
static inline void fuzz_counted(uint64_t (*count)(int), const uint64_t *before, int n, int which)
{
    for (int i = 0; i < n; i++)
        FUZZ_CHECK(count(i) == before[i] + (i == which));
}

#endif
