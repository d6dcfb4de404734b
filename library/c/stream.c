/* Framing of byte streams by a length field (see stream.h). */
#include "stream.h"

#include "floem/net.h"

long floem_frame_length_prefixed(const void *config, uint64_t *state, const uint8_t *data,
                                 size_t len)
{
    const struct floem_length_prefix *f = config;
    (void)state;
    if (len < f->header)
        return FLOEM_FRAME_MORE;
    uint64_t v = 0;
    for (uint32_t i = 0; i < f->size; i++) {
        uint32_t at = f->little_endian ? f->offset + f->size - 1 - i : f->offset + i;
        v = v << 8 | data[at];
    }
    if (!f->whole && v > UINT64_MAX - f->header)
        return FLOEM_FRAME_CLOSE;
    uint64_t whole = f->whole ? v : v + f->header;
    if (whole < f->header || whole > f->max || whole > (uint64_t)INT64_MAX)
        return FLOEM_FRAME_CLOSE;
    return (long)whole;
}
