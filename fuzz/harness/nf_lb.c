/* Fuzz target: the load balancer (examples/nf/lb.py, compiled by fuzz/apps/nf_lb.py): the
 * bodies of StoreFrame, CheckFrame, Balance (the 5-tuple's hash into Maglev's table, the
 * rewrite and its checksum updates) and LoadFrame, as the app's segments run them.
 *
 * The input is a sequence of received frames (fuzz_next_frame). Checks against
 * fuzz/apps/nf_lb.py's parameters: nothing is read or written past a frame; exactly the
 * frames an IPv4Frame describes reach Balance; of those exactly the ones to the virtual
 * address pass, the others counted as not_vip; a passed frame goes to one of the backends
 * (destination address, Ethernet destination its own, Ethernet source the balancer's),
 * every frame of a flow (5-tuple) of the input to the same one, every other byte but the
 * checksums as received, and each checksum verifies exactly when it did (a UDP checksum of
 * 0 stays 0); a dropped frame is left alone; nothing else is counted.
 */
#include "fuzz.h"
#include "ipv4.h"
#include "nf_lb.h"
#include "floem_app.h"

#define VIP 0xcb00710au                 /* 203.0.113.10 */
#define BACKENDS 3

static const uint32_t backend[BACKENDS] = {0x0a020001, 0x0a020002, 0x0a020003};
static const uint8_t backend_mac[BACKENDS][6] = {
    {2, 0, 0, 0, 4, 1}, {2, 0, 0, 0, 4, 2}, {2, 0, 0, 0, 4, 3}};
static const uint8_t lb_mac[6] = {2, 0, 0, 0, 0, 1};

static struct flow_table went;          /* each flow's backend in this input, plus one */

static void check_frame(const uint8_t *data, size_t size)
{
    int ok = ipv4_frame_ok(data, size);
    int pass = ok && get32(data + 30) == VIP;
    uint64_t before;
    fuzz_counts(lb_drops, &before, 1);
    uint8_t *frame = fuzz_frame(data, size);
    size_t n = lb(size, frame, NULL);
    FUZZ_CHECK(n == (pass ? size : 0));
    fuzz_counted(lb_drops, &before, 1, ok && !pass ? 0 : -1);
    if (pass) {
        int b = 0;
        while (b < BACKENDS && get32(frame + 30) != backend[b])
            b++;
        FUZZ_CHECK(b < BACKENDS);
        FUZZ_CHECK(memcmp(frame, backend_mac[b], 6) == 0 && memcmp(frame + 6, lb_mac, 6) == 0);
        uint64_t *flow = flow_value(&went, data, 34);
        FUZZ_CHECK(flow == NULL || *flow == 0 || *flow == (uint64_t)b + 1);
        if (flow != NULL)
            *flow = (uint64_t)b + 1;
        uint8_t *want = fuzz_copy(data, size);
        memcpy(want, frame, 12);
        put32(want + 30, backend[b]);
        FUZZ_CHECK(same_but_checksums(want, frame, size));
        check_checksums_kept(data, frame);
        free(want);
    } else {
        FUZZ_CHECK(memcmp(frame, data, size) == 0);
    }
    fuzz_frame_free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    went.n = 0;
    fuzz_each_frame(data, size, check_frame);
    return 0;
}
