/* Fuzz target: the source NAT (examples/nf/nat.py, compiled by fuzz/apps/nf_nat.py): the
 * bodies of StoreFrame, CheckFrame, Translate (the direction, the mappings both ways, the
 * rewrite and its checksum updates) and LoadFrame, as the app's segments run them.
 *
 * The input is a sequence of received frames (fuzz_next_frame), met by no mapping. Checks
 * against a model (this file's reading of fuzz/apps/nf_nat.py's inside, public address and
 * ports): nothing is read or written past a frame; exactly the frames an IPv4Frame
 * describes reach Translate; an outbound one (inside to neither inside nor public) leaves
 * from the public address and the port of its (protocol, source, source port), given out
 * in order the first time, or is counted as no_port once every port is; an inbound one
 * (not inside, to the public address) goes to the endpoint of the mapping of its protocol
 * and destination port, or is counted as no_mapping; any other is counted as not_nat. A
 * translated frame is the one received but for the address, port and checksums rewritten,
 * and each checksum verifies exactly when it did (a UDP checksum of 0 stays 0); a dropped
 * one is left alone; nothing else is counted.
 */
#include "fuzz.h"
#include "ipv4.h"
#include "nf_nat.h"
#include "floem_app.h"

#define INSIDE 0x0a010000u              /* 10.1.0.0/16 */
#define INSIDE_MASK 0xffff0000u
#define PUBLIC 0xc0000201u              /* 192.0.2.1 */
#define FIRST_PORT 1024
#define PORTS 16
enum { NO_PORT, NO_MAPPING, NOT_NAT, REASONS };

struct endpoint {
    uint8_t proto;
    uint32_t addr;
    uint16_t port;
};

static struct endpoint given[PORTS];    /* the inside endpoint of port FIRST_PORT + i */
static unsigned n_given;

/* The port given to inside endpoint `e` (given now if it has none), or -1 when none is left. */
static int port_of(struct endpoint e)
{
    for (unsigned i = 0; i < n_given; i++)
        if (given[i].proto == e.proto && given[i].addr == e.addr && given[i].port == e.port)
            return FIRST_PORT + (int)i;
    if (n_given == PORTS)
        return -1;
    given[n_given] = e;
    return FIRST_PORT + (int)n_given++;
}

/* What Translate must make of an IPv4Frame (in `want`): the drop count it must add, or -1
 * when it passes the frame (then rewritten in `want`). */
static int translate(uint8_t *want)
{
    uint8_t proto = want[23];
    uint32_t src = get32(want + 26), dst = get32(want + 30);
    int from_inside = (src & INSIDE_MASK) == INSIDE, to_inside = (dst & INSIDE_MASK) == INSIDE;
    if (from_inside && !to_inside && dst != PUBLIC) {
        int port = port_of((struct endpoint){proto, src, get16(want + 34)});
        if (port < 0)
            return NO_PORT;
        put32(want + 26, PUBLIC);
        put16(want + 34, (uint16_t)port);
        return -1;
    }
    if (dst != PUBLIC || from_inside)
        return NOT_NAT;
    unsigned i = (unsigned)get16(want + 36) - FIRST_PORT;
    if (get16(want + 36) < FIRST_PORT || i >= n_given || given[i].proto != proto)
        return NO_MAPPING;
    put32(want + 30, given[i].addr);
    put16(want + 36, given[i].port);
    return -1;
}

static void check_frame(const uint8_t *data, size_t size)
{
    int ok = ipv4_frame_ok(data, size), counted = -1;
    uint8_t *want = fuzz_copy(data, size);
    if (ok)
        counted = translate(want);
    int pass = ok && counted < 0;
    uint64_t before[REASONS];
    fuzz_counts(nat_drops, before, REASONS);
    uint8_t *frame = fuzz_frame(data, size);
    size_t n = nat(size, frame, NULL);
    FUZZ_CHECK(n == (pass ? size : 0));
    fuzz_counted(nat_drops, before, REASONS, counted);
    if (pass) {
        FUZZ_CHECK(same_but_checksums(want, frame, size));
        check_checksums_kept(data, frame);
    } else {
        FUZZ_CHECK(memcmp(frame, data, size) == 0);
    }
    fuzz_frame_free(frame);
    free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    nat_clear();
    n_given = 0;
    fuzz_each_frame(data, size, check_frame);
    return 0;
}
