/* Fuzz target: Ethernet/IPv4/UDP frames through floem_udp_parse (library/c/headers.c) and
 * through the C bodies of CheckUDP, SwapUDP, SetUDPLength and FillUDP
 * (library/headers.py, compiled by fuzz/apps/elements.py).
 *
 * The input is one received frame. Checks: parsing reads nothing past the frame; the
 * elements pass exactly the frames floem_udp_parse accepts; the reply they make of one
 * (addresses swapped, lengths and checksums rewritten) parses again, checksums included,
 * with the same payload; FillUDP makes a valid frame of any buffer of 42 bytes or more.
 */
#include "elements.h"
#include "fuzz.h"
#include "headers.h"
#include "floem_app.h"

static void check_reply(const uint8_t *request, size_t size,
                        size_t (*reply)(size_t, uint8_t *, void *), int verify)
{
    struct floem_udp_view view;
    enum floem_udp_verdict verdict = floem_udp_parse((void *)request, size, verify, &view);
    FUZZ_CHECK(verdict < FLOEM_UDP_VERDICTS);
    uint8_t *frame = fuzz_frame(request, size);
    size_t n = reply(size, frame, NULL);
    FUZZ_CHECK((n != 0) == (verdict == FLOEM_UDP_OK));
    if (n != 0) {
        FUZZ_CHECK(n == size);
        FUZZ_CHECK(view.payload >= request && view.payload + view.payload_len <= request + size);
        struct floem_udp_view out;
        FUZZ_CHECK(floem_udp_parse(frame, n, verify, &out) == FLOEM_UDP_OK);
        /* SetUDPLength makes any Ethernet padding part of the payload: the old one is a prefix. */
        FUZZ_CHECK(out.payload_len >= view.payload_len);
        FUZZ_CHECK(memcmp(out.payload, view.payload, view.payload_len) == 0);
        FUZZ_CHECK(out.payload == floem_udp_payload(frame));
        FUZZ_CHECK(out.payload_len == floem_udp_payload_len(frame));
        FUZZ_CHECK(memcmp(out.eth->dst, view.eth->src, 6) == 0);
        FUZZ_CHECK(memcmp(&out.udp->dst_port, &view.udp->src_port, 2) == 0);
        struct floem_flow_key key;
        floem_udp_flow_key(frame, &key);
        FUZZ_CHECK(key.src_ip == view.ip->dst && key.dst_port == view.udp->src_port);
    }
    fuzz_frame_free(frame);
}

static void check_fill(const uint8_t *data, size_t size)
{
    uint8_t *frame = fuzz_frame(data, size);
    size_t n = udp_fill(size, frame, NULL);
    FUZZ_CHECK(n == size);
    if (size >= FLOEM_UDP_FRAME_LEN) {
        struct floem_udp_view view;
        FUZZ_CHECK(floem_udp_parse(frame, size, 1, &view) == FLOEM_UDP_OK);
        FUZZ_CHECK(view.payload_len == size - FLOEM_UDP_FRAME_LEN);
        FUZZ_CHECK(memcmp(view.payload, data + FLOEM_UDP_FRAME_LEN, view.payload_len) == 0);
    } else {
        FUZZ_CHECK(memcmp(frame, data, size) == 0);    /* too short: left alone */
    }
    fuzz_frame_free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_BUFFER_BYTES)
        return -1;
    check_reply(data, size, udp_reply, 0);
    check_reply(data, size, udp_reply_verified, 1);
    check_fill(data, size);
    return 0;
}
