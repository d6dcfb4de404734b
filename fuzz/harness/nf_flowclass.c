/* Fuzz target: flow classification (examples/nf/flowclass.py, compiled by
 * fuzz/apps/nf_flowclass.py): CheckUDP, the bodies of FlowKey (the flow's key), CountMin and
 * Stamp, and the reply, as the app's segment runs them.
 *
 * The input is a sequence of received frames (fuzz_next_frame). Checks: nothing is read or
 * written past a frame; exactly the frames floem_udp_parse accepts whose payload has 8 bytes
 * or more are answered, the others with a payload counted as too_short; the answer is the
 * frame with its addresses and ports swapped, UDP checksum 0, and its first 8 payload bytes
 * the flow's estimate, every other byte as it was; the estimate is at least the bytes of the
 * flow's frames in this input (the flow: this file's reading of the addresses, protocol and
 * ports) and at most those of every frame answered since the harness started (the sketch is
 * never cleared).
 */
#include "nf_flowclass.h"
#include "fuzz.h"
#include "ipv4.h"
#include "floem_app.h"

static struct flow_table sent;                  /* the bytes of each flow of this input */
static uint64_t total;                          /* bytes of every frame answered */

static void check_frame(const uint8_t *data, size_t size)
{
    struct floem_udp_view view;
    int udp = floem_udp_parse((void *)data, size, 0, &view) == FLOEM_UDP_OK;
    int ok = udp && view.payload_len >= 8;
    uint64_t before;
    fuzz_counts(flowclass_drops, &before, 1);
    uint8_t *frame = fuzz_frame(data, size);
    size_t n = flowclass(size, frame, NULL);
    FUZZ_CHECK((n != 0) == ok);
    fuzz_counted(flowclass_drops, &before, 1, udp && !ok ? 0 : -1);
    if (ok) {
        FUZZ_CHECK(n == size);
        size_t l4 = (size_t)((const uint8_t *)view.udp - data);
        size_t at = (size_t)(view.payload - data);
        uint64_t estimate = (uint64_t)get32(frame + at) << 32 | get32(frame + at + 4);
        uint64_t *flow = flow_value(&sent, data, l4);
        total += size;
        FUZZ_CHECK((flow == NULL || estimate >= (*flow += size)) && estimate <= total);
        uint8_t *want = fuzz_copy(data, size);
        udp_reply_of(want, l4);
        memcpy(want + at, frame + at, 8);
        FUZZ_CHECK(memcmp(frame, want, size) == 0);
        free(want);
    } else {
        FUZZ_CHECK(memcmp(frame, data, size) == 0);     /* a dropped frame is left alone */
    }
    fuzz_frame_free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sent.n = 0;
    fuzz_each_frame(data, size, check_frame);
    return 0;
}
