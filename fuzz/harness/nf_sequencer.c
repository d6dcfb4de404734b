/* Fuzz target: the network sequencer (examples/nf/sequencer.py, compiled by
 * fuzz/apps/nf_sequencer.py): CheckUDP, the body of Stamp (the payload's group bitmap and
 * slots) and the reply, as the app's segment runs them.
 *
 * The input is a sequence of received frames (fuzz_next_frame), met by groups at their first
 * numbers. Checks: nothing is read or written past a frame; exactly the frames
 * floem_udp_parse accepts whose payload has the 82 bytes of bitmap and slots and names no
 * group above 9 are answered; the answer is the frame with its addresses and ports swapped,
 * UDP checksum 0, and in the slot of each group named the group's next number (1, 2, ...),
 * every other byte as it was; a frame with a shorter payload is counted as too_short, one
 * naming a group above 9 as bad_groups, and nothing else is counted.
 */
#include "fuzz.h"
#include "ipv4.h"
#include "nf_sequencer.h"
#include "floem_app.h"

#define GROUPS 10                       /* examples/nf/sequencer.py */
#define SLOTS_END (2 + 8 * GROUPS)
enum { TOO_SHORT, BAD_GROUPS, REASONS };

static uint64_t last[GROUPS];           /* the number each group gave last */

static void check_frame(const uint8_t *data, size_t size)
{
    struct floem_udp_view view;
    int udp = floem_udp_parse((void *)data, size, 0, &view) == FLOEM_UDP_OK;
    int whole = udp && view.payload_len >= SLOTS_END;
    unsigned named = whole ? get16(view.payload) : 0;
    int ok = whole && named >> GROUPS == 0;
    uint64_t before[REASONS];
    fuzz_counts(sequencer_drops, before, REASONS);
    uint8_t *frame = fuzz_frame(data, size);
    size_t n = sequencer(size, frame, NULL);
    FUZZ_CHECK((n != 0) == ok);
    fuzz_counted(sequencer_drops, before, REASONS,
                 !udp || ok ? -1 : whole ? BAD_GROUPS : TOO_SHORT);
    if (ok) {
        FUZZ_CHECK(n == size);
        uint8_t *want = fuzz_copy(data, size);
        size_t at = (size_t)(view.payload - data);
        udp_reply_of(want, (size_t)((const uint8_t *)view.udp - data));
        for (int g = 0; g < GROUPS; g++)
            if (named >> g & 1) {
                uint64_t seq = ++last[g];
                put32(want + at + 2 + 8 * g, (uint32_t)(seq >> 32));
                put32(want + at + 6 + 8 * g, (uint32_t)seq);
            }
        FUZZ_CHECK(memcmp(frame, want, size) == 0);
        free(want);
    } else {
        FUZZ_CHECK(memcmp(frame, data, size) == 0);     /* a dropped frame is left alone */
    }
    fuzz_frame_free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sequencer_clear();
    memset(last, 0, sizeof last);
    fuzz_each_frame(data, size, check_frame);
    return 0;
}
