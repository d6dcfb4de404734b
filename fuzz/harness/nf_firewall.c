/* Fuzz target: the stateful firewall (examples/nf/firewall.py, compiled by
 * fuzz/apps/nf_firewall.py): the bodies of StoreFrame, CheckFrame, Filter (its flow's
 * 5-tuple, the rules, the established-flow table) and LoadFrame, as the app's segments run
 * them.
 *
 * The input is a sequence of received frames (fuzz_next_frame), met by an empty table.
 * Checks against a model (this file's reading of the rules of fuzz/apps/nf_firewall.py and
 * of a table of FLOWS flows that never forgets one): nothing is read or written past a
 * frame, and no frame is changed; exactly the frames an IPv4Frame describes reach Filter;
 * of those exactly the frames of a remembered flow, either way, or allowed by the first
 * rule that matches them, pass; an allowed frame of a new flow is remembered while the
 * table has room, and counted as table_full when it has none; a refused one is counted as
 * denied; nothing else is counted.
 */
#include "nf_firewall.h"
#include "fuzz.h"
#include "ipv4.h"
#include "floem_app.h"

#define FLOWS 16                        /* fuzz/apps/nf_firewall.py's -D flows */
enum { DENIED, TABLE_FULL, REASONS };

struct rule {
    int allow, proto;                   /* proto 0: any */
    uint32_t src, src_mask, dst, dst_mask;
    uint16_t sport_lo, sport_hi, dport_lo, dport_hi;
};

/* fuzz/apps/nf_firewall.py's -D rules. */
static const struct rule rules[] = {
    {1, 6, 0x0a010000, 0xffff0000, 0xc6336400, 0xffffff00, 0, 65535, 80, 80},
    {1, 6, 0x0a010000, 0xffff0000, 0xc6336400, 0xffffff00, 0, 65535, 443, 443},
    {1, 17, 0x0a010000, 0xffff0000, 0, 0, 0, 65535, 53, 53},
    {0, 6, 0, 0, 0x0a010050, 0xffffffff, 0, 65535, 22, 22},
    {1, 6, 0, 0, 0x0a010050, 0xffffffff, 0, 65535, 1, 1023},
};

struct flow {
    uint32_t src, dst;
    uint16_t sport, dport;
    uint8_t proto;
};

static struct flow table[FLOWS];        /* the flows remembered */
static unsigned n_table;

static int remembered(struct flow f)
{
    for (unsigned i = 0; i < n_table; i++)
        if (table[i].src == f.src && table[i].dst == f.dst && table[i].sport == f.sport &&
            table[i].dport == f.dport && table[i].proto == f.proto)
            return 1;
    return 0;
}

/* Whether the first rule matching flow `f` allows it (none: no). */
static int allowed(struct flow f)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const struct rule *r = &rules[i];
        if ((r->proto == 0 || r->proto == f.proto) && (f.src & r->src_mask) == r->src &&
            (f.dst & r->dst_mask) == r->dst && f.sport >= r->sport_lo &&
            f.sport <= r->sport_hi && f.dport >= r->dport_lo && f.dport <= r->dport_hi)
            return r->allow;
    }
    return 0;
}

static void check_frame(const uint8_t *data, size_t size)
{
    int pass = 0, counted = -1;
    if (ipv4_frame_ok(data, size)) {
        struct flow f = {get32(data + 26), get32(data + 30), get16(data + 34),
                         get16(data + 36), data[23]};
        struct flow back = {f.dst, f.src, f.dport, f.sport, f.proto};
        pass = remembered(f) || remembered(back);
        if (!pass) {
            pass = allowed(f);
            if (!pass)
                counted = DENIED;
            else if (n_table == FLOWS)
                counted = TABLE_FULL;
            else
                table[n_table++] = f;
        }
    }
    uint64_t before[REASONS];
    fuzz_counts(firewall_drops, before, REASONS);
    uint8_t *frame = fuzz_frame(data, size);
    size_t n = firewall(size, frame, NULL);
    FUZZ_CHECK(n == (pass ? size : 0));
    FUZZ_CHECK(memcmp(frame, data, size) == 0);
    fuzz_counted(firewall_drops, before, REASONS, counted);
    fuzz_frame_free(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    firewall_clear();
    n_table = 0;
    fuzz_each_frame(data, size, check_frame);
    return 0;
}
