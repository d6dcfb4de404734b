/* Fuzz target: typed frames (library/packets.py, compiled by fuzz/apps/elements.py): the
 * bodies of CheckFrame and of a rewrite of header members, as the slicing path runs them.
 *
 * The input is one received frame. Checks: CheckFrame reads nothing past the frame and
 * writes nothing, and passes exactly the frames an IPv4Frame describes (this file's own
 * reading of the rules); the rewrite (IPv4 source and transport source port, checksums
 * updated incrementally with floem_csum_replace16/32) leaves a checksum that verified
 * verifying, one that did not, not, and a UDP checksum of 0 ("none") 0.
 */
#include "elements.h"
#include "fuzz.h"
static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* Does an IPv4Frame describe this frame, by CheckFrame's rules? */
static int well_formed(const uint8_t *f, size_t len)
{
    if (len < 34 || get16(f + 12) != 0x0800 || f[14] != 0x45)
        return 0;
    size_t total = get16(f + 16);
    if (total < 20 || 14 + total > len || (get16(f + 20) & 0x3fff) != 0)
        return 0;
    if (f[23] == 17)
        return total >= 28 && get16(f + 38) >= 8 && get16(f + 38) <= total - 20;
    if (f[23] == 6)
        return total >= 40 && f[46] >> 4 == 5;
    return 0;
}

/* The one's complement sum of `n` bytes (big-endian words, an odd byte padded), folded. */
static uint32_t sum_bytes(uint32_t sum, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        sum += get16(p + i);
    if (n % 2)
        sum += (uint32_t)p[n - 1] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return sum;
}

static int ip_checksum_ok(const uint8_t *f)
{
    return sum_bytes(0, f + 14, 20) == 0xffff;
}

/* The transport checksum over the pseudo-header and the segment (a UDP checksum of 0: none). */
static int l4_checksum_ok(const uint8_t *f)
{
    size_t total = get16(f + 16), seg = total - 20;
    if (f[23] == 17 && get16(f + 40) == 0)
        return 1;
    uint32_t sum = sum_bytes(0, f + 26, 8) + f[23] + (uint32_t)seg;
    return sum_bytes(sum, f + 34, seg) == 0xffff;
}

static void check_frame(const uint8_t *data, size_t size)
{
    int ok = well_formed(data, size);
    uint8_t *frame = fuzz_frame(data, size);
    FUZZ_CHECK((frame_check(size, frame, NULL) != 0) == ok);
    FUZZ_CHECK(memcmp(frame, data, size) == 0);        /* checking writes nothing */
    fuzz_frame_free(frame);
    if (!ok)
        return;
    frame = fuzz_frame(data, size);
    FUZZ_CHECK(frame_rewrite(size, frame, NULL) == size);
    FUZZ_CHECK(memcmp(frame + 26, "\x0a\x09\x09\x09", 4) == 0 && get16(frame + 34) == 4242);
    FUZZ_CHECK(ip_checksum_ok(frame) == ip_checksum_ok(data));
    FUZZ_CHECK(l4_checksum_ok(frame) == l4_checksum_ok(data));
    if (data[23] == 17)
        FUZZ_CHECK((get16(frame + 40) == 0) == (get16(data + 40) == 0));
    fuzz_frame_free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        floem_init();
        ready = 1;
    }
    if (size > FUZZ_BUFFER_BYTES)
        return -1;
    check_frame(data, size);
    return 0;
}
