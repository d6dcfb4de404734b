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

#endif
