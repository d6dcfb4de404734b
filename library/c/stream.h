/* Framing of byte streams for floem.library.stream: where a message ends (floem/net.h's
 * floem_frame_fn), for protocols whose messages say their length in a field of fixed size
 * at a fixed place. */
#ifndef FLOEM_LIBRARY_STREAM_H
#define FLOEM_LIBRARY_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A message starts with `header` bytes, among them the length field: `size` bytes (1, 2, 4
 * or 8) at `offset`, big- or little-endian. Its value is the length of the message when
 * `whole`, else of what follows the header. A message longer than `max` bytes, or shorter
 * than its header, closes the connection. */
struct floem_length_prefix {
    uint32_t offset, size, header;
    bool little_endian, whole;
    uint64_t max;
};

/* `config` is a struct floem_length_prefix. */
long floem_frame_length_prefixed(const void *config, uint64_t *state, const uint8_t *data,
                                 size_t len);

#endif
