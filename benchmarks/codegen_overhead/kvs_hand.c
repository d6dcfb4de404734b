/* Hand-written key-value store: what examples/kvs/kvs.py (-D design=cpu) does, written
 * directly in C.
 *
 * Receive bursts of 32 frames; give each request of a text datagram a frame of its own
 * (kvs_split_next); accept whole single requests with kvs_check (counting the others by
 * reason and giving them back); parse the request, serve it from the store (GET: the
 * key's record; SET: its record; DELETE, or a SET whose value is too large: remove the
 * key; an update: kvs_store_apply), a write taking a CAS value and giving it back when it
 * did not happen, and write memcached's reply into the request's own frame, or into a frame
 * allocated for it when it is longer than the request (a reply longer than one datagram
 * starts in frames allocated for it, its last datagram in the request's frame), send it;
 * flush after each burst. The protocol and the store are the example's own C (proto.c, store.c), with
 * kvs.py's defaults (64 MiB of items, 2^17 buckets, values up to KVS_VALUE_MAX); packet
 * I/O is the Floem runtime's (floem/net.h, pcap backend), the same calls the generated
 * program makes.
 *
 * Written for speed as a C programmer would: one loop, the store made once before it,
 * the key hashed once and the clock read once per request, counters as plain
 * increments (one thread), frames handed to the runtime by pointer. Counts what the store
 * answered as memcached's `stats` does (kvs.py's Respond counts it too). Prints the store's
 * statistics, the drops by reason and those counts, as kvs_replay.py's main does.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "floem/net.h"
#include "update.h"

#define BATCH 32
#define KVS_MEMORY (64u << 20)      /* kvs.py: memory = 64 (MiB) */
#define KVS_BUCKETS (1u << 17)      /* kvs.py: store_buckets */
#define KVS_VALUE_MAX 8192          /* kvs.py: value_max */

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

static uint64_t drops[KVS_DROPS];
/* What the store answered, counted as memcached's `stats` counts it (as kvs.py's Respond). */
static struct {
    uint64_t cmd_get, get_hits, get_misses, cmd_set, cmd_delete, cmd_other, delete_hits,
        delete_misses, cmd_touch, touch_hits, touch_misses, incr_hits, incr_misses, decr_hits,
        decr_misses, cas_hits, cas_misses, cas_badval;
} counts;
static uint64_t last_cas, oldest_cas;
static uint32_t flush_at;
static uint8_t record[KVS_RECORD_MAX], result[KVS_RECORD_MAX], msg[KVS_REPLY_MESSAGE_MAX];

/* Serve single request `r` (parsed at `now` from `pkt`; `part`: its kvs_split_flags) from
 * `store` and write its reply: the datagrams before the last into new frames, the last into
 * the request's frame `pkt`, or a new one when it is longer than the request. */
static inline void serve(kvs_store_t *store, floem_packet_t *pkt, struct kvs_request r,
                         uint32_t now, uint8_t part)
{
    struct kvs_packet *p = pkt->data;
    if (unlikely(r.flush))
        kvs_cas_flush(&last_cas, &oldest_cas, &flush_at, (uint32_t)r.arg, now);
    uint64_t oldest = kvs_cas_oldest(&last_cas, &oldest_cas, &flush_at, now);
    uint64_t cas = r.writes ? kvs_cas_next(&last_cas) : 0;
    uint16_t status = r.status;
    const uint8_t *key = r.key;
    uint16_t keylen = r.keylen;
    const uint8_t *rec = NULL;
    uint32_t reclen = 0;
    bool ok = status == FLOEM_MC_OK, plain = r.arg == 0;
    if (likely(ok && r.op == KVS_OP_GET)) {
        long n = kvs_store_get(store, key, keylen, kvs_hash(key, keylen), now, oldest, record,
                               sizeof record);
        rec = record;
        reclen = n < 0 || (size_t)n > sizeof record ? 0 : (uint32_t)n;
    } else if (ok && r.op == KVS_OP_SET && plain) {
        uint32_t len = kvs_record_make(record, p, now, cas);
        if (kvs_store_set(store, key, keylen, kvs_hash(key, keylen), kvs_record_expiry(record),
                          cas, record, len))
            status = FLOEM_MC_OUT_OF_MEMORY;
    } else if ((ok && r.op == KVS_OP_DELETE && plain)
               || (status == FLOEM_MC_VALUE_TOO_LARGE && r.op == KVS_OP_SET)) {
        int found = kvs_store_delete(store, key, keylen, kvs_hash(key, keylen), now, oldest);
        if (r.op == KVS_OP_DELETE)      /* a SET too large keeps its status */
            status = found ? FLOEM_MC_OK : FLOEM_MC_KEY_NOT_FOUND;
    } else if (ok && r.op != KVS_OP_NONE) {
        uint32_t len = kvs_record_make(record, p, now, cas);
        reclen = kvs_store_apply(store, key, keylen, kvs_hash(key, keylen), now, oldest, r.op,
                                 record, len, r.arg, cas, KVS_VALUE_MAX, result, &status);
        rec = result;
    }
    ok = status == FLOEM_MC_OK;
    if (cas != 0 && !ok)
        kvs_cas_unused(&last_cas, cas);
    uint64_t *cmd = &counts.cmd_other, *outcome = NULL;
    switch (r.op) {
    case KVS_OP_GET:
        if (!ok)
            break;
        cmd = &counts.cmd_get;
        outcome = kvs_record_live(rec, reclen, now, oldest) ? &counts.get_hits
                                                            : &counts.get_misses;
        break;
    case KVS_OP_TOUCH: case KVS_OP_GAT:
        cmd = &counts.cmd_touch;
        outcome = ok ? &counts.touch_hits : &counts.touch_misses;
        break;
    case KVS_OP_DELETE:
        cmd = &counts.cmd_delete;
        outcome = ok ? &counts.delete_hits : &counts.delete_misses;
        break;
    case KVS_OP_INCR:
        outcome = ok ? &counts.incr_hits : &counts.incr_misses;
        break;
    case KVS_OP_DECR:
        outcome = ok ? &counts.decr_hits : &counts.decr_misses;
        break;
    case KVS_OP_CAS:
        cmd = &counts.cmd_set;
        outcome = ok ? &counts.cas_hits : status == FLOEM_MC_KEY_EXISTS ? &counts.cas_badval
                                                                        : &counts.cas_misses;
        break;
    case KVS_OP_SET: case KVS_OP_ADD: case KVS_OP_REPLACE: case KVS_OP_APPEND:
    case KVS_OP_PREPEND:
        cmd = &counts.cmd_set;
        break;
    default:
        break;
    }
    (*cmd)++;
    if (outcome != NULL)
        (*outcome)++;
    long len = kvs_reply(msg, p, status, rec, reclen, cas, now, oldest, part);
    if (len < 0) {
        floem_net_free(pkt);
        return;
    }
    unsigned datagrams = kvs_reply_frames(p, (size_t)len);
    for (unsigned seq = 0; seq + 1 < datagrams; seq++) {
        floem_packet_t more;
        if (!floem_net_alloc((uint32_t)kvs_reply_size(p, (size_t)len, seq), &more))
            break;
        kvs_reply_write(more.data, p, msg, (size_t)len, seq);
        floem_net_tx(0, &more);
    }
    unsigned seq = datagrams - 1;
    floem_packet_t last = {p, (uint32_t)kvs_reply_size(p, (size_t)len, seq), pkt->buffer};
    bool own = last.len > kvs_request_size(p);
    if (!own || floem_net_alloc(last.len, &last)) {
        kvs_reply_write(last.data, p, msg, (size_t)len, seq);
        floem_net_tx(0, &last);
    }
    if (own)
        floem_net_free(pkt);
}

/* Check and serve frame `pkt` (`part`: its kvs_split_flags). */
static inline void accept(kvs_store_t *store, floem_packet_t *pkt, uint8_t part)
{
    int why = kvs_check(pkt->data, pkt->len);
    uint32_t now = kvs_now();
    struct kvs_request r;
    if (likely(why < 0))
        why = kvs_parse(pkt->data, KVS_VALUE_MAX, now, &r);
    if (likely(why < 0)) {
        serve(store, pkt, r, now, part);
    } else {
        drops[why]++;
        floem_net_free(pkt);
    }
}

/* Serve every request of text datagram `pkt` (accepted by kvs_check) in a frame of its own,
 * the last in `pkt`'s; count what is left that is not a whole request. */
static void split(kvs_store_t *store, floem_packet_t *pkt)
{
    struct kvs_packet *p = pkt->data;
    const uint8_t *text = kvs_text(p);
    size_t len = kvs_text_len(p);
    struct kvs_split cur, next;
    if (!kvs_split_next(text, len, 0, NULL, &cur)) {
        drops[KVS_DROP_INCOMPLETE]++;
        floem_net_free(pkt);
        return;
    }
    while (kvs_split_next(text, len, cur.next, &cur, &next)) {
        floem_packet_t more;
        if (!floem_net_alloc((uint32_t)kvs_split_size(pkt->data, &cur), &more))
            break;
        more.len = (uint32_t)kvs_split_write(more.data, pkt->data, &cur);
        accept(store, &more, kvs_split_flags(&cur));
        cur = next;
    }
    if (cur.next < len && !cur.more_keys)
        drops[cur.sends ? KVS_DROP_UNREAD : KVS_DROP_INCOMPLETE]++;
    pkt->len = (uint32_t)kvs_split_write(pkt->data, pkt->data, &cur);
    accept(store, pkt, kvs_split_flags(&cur));
}

int main(void)
{
    floem_net_frame_t frames[BATCH];
    kvs_store_t *store = kvs_store_new(KVS_MEMORY, KVS_BUCKETS);
    if (store == NULL) {
        fprintf(stderr, "kvs_hand: cannot reserve %u bytes for the store\n", KVS_MEMORY);
        return 1;
    }
    floem_net_init();
    for (;;) {
        unsigned n = floem_net_rx(0, frames, BATCH);
        if (unlikely(n == 0)) {
            if (floem_net_rx_done())
                break;
            continue;
        }
        for (unsigned i = 0; i < n; i++) {
            floem_packet_t pkt = floem_net_packet(frames[i]);
            uint8_t *d = pkt.data;
            kvs_uncut(d, pkt.len);
            if (unlikely(kvs_maybe_text(d, pkt.len) && kvs_check(d, pkt.len) < 0))
                split(store, &pkt);
            else
                accept(store, &pkt, 0);
        }
        floem_net_flush(0);
    }
    floem_net_finalize();
    kvs_store_stats_t st;
    kvs_store_stats(store, &st);
    printf("kvs: items %" PRIu64 ", gets %" PRIu64 ", hits %" PRIu64 ", sets %" PRIu64
           ", deletes %" PRIu64 ", evictions %" PRIu64 ", set failures %" PRIu64 "\n",
           st.items, st.gets, st.hits, st.sets, st.deletes, st.evictions, st.set_failures);
    printf("kvs: dropped not_udp %" PRIu64 ", ip_options %" PRIu64 ", too_short %" PRIu64
           ", multi_datagram %" PRIu64 ", bad_length %" PRIu64 ", incomplete %" PRIu64 "\n",
           drops[KVS_DROP_NOT_UDP], drops[KVS_DROP_IP_OPTIONS], drops[KVS_DROP_TOO_SHORT],
           drops[KVS_DROP_MULTI_DATAGRAM], drops[KVS_DROP_BAD_LENGTH],
           drops[KVS_DROP_INCOMPLETE]);
    printf("kvs: cmd_get %" PRIu64 ", get_hits %" PRIu64 ", get_misses %" PRIu64 ", cmd_set %"
           PRIu64 ", cmd_delete %" PRIu64 ", delete_hits %" PRIu64 ", cmd_other %" PRIu64 "\n",
           counts.cmd_get, counts.get_hits, counts.get_misses, counts.cmd_set, counts.cmd_delete,
           counts.delete_hits, counts.cmd_other);
    kvs_store_free(store);
    return 0;
}
