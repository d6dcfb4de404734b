/* Fuzz target: typed frames (library/packets.py, compiled by fuzz/apps/elements.py): the
 * bodies of CheckFrame and of a rewrite of header members, as the slicing path runs them.
 *
 * The input is one received frame. Checks: CheckFrame reads nothing past the frame and
 * writes nothing, and passes exactly the frames an IPv4Frame describes (the harnesses' own
 * reading of the rules, ipv4.h); the rewrite (IPv4 source and transport source port,
 * checksums updated incrementally with floem_csum_replace16/32) leaves a checksum that
 * verified verifying, one that did not, not, and a UDP checksum of 0 ("none") 0.
 */
#include "elements.h"
#include "fuzz.h"
#include "ipv4.h"
#include "floem_app.h"

static void check_frame(const uint8_t *data, size_t size)
{
    int ok = ipv4_frame_ok(data, size);
    uint8_t *frame = fuzz_frame(data, size);
    FUZZ_CHECK((frame_check(size, frame, NULL) != 0) == ok);
    FUZZ_CHECK(memcmp(frame, data, size) == 0);        /* checking writes nothing */
    fuzz_frame_free(frame);
    if (!ok)
        return;
    frame = fuzz_frame(data, size);
    FUZZ_CHECK(frame_rewrite(size, frame, NULL) == size);
    FUZZ_CHECK(memcmp(frame + 26, "\x0a\x09\x09\x09", 4) == 0 && get16(frame + 34) == 4242);
    check_checksums_kept(data, frame);
    fuzz_frame_free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_BUFFER_BYTES)
        return -1;
    check_frame(data, size);
    return 0;
}
