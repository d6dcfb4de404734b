/* Hand-written key-value store: what examples/kvs/kvs.py (-D design=cpu) does, written
 * directly in C.
 *
 * Receive bursts of 32 frames; accept whole single-datagram memcached requests with
 * kvs_check (counting the others by reason and giving them back); validate the request,
 * serve it from the store (GET/GETK: the key's record; SET: its record; DELETE, or a SET
 * whose value is too large: remove the key) and write memcached's reply into the
 * request's own frame, or into a frame allocated for it when it is longer than the
 * request (a reply longer than one datagram continues in frames allocated for it),
 * send it; flush after each burst. The protocol and the store are the
 * example's own C (proto.c, store.c), with kvs.py's defaults (64 MiB of items, 2^17
 * buckets, values up to KVS_VALUE_LIMIT); packet I/O is the Floem runtime's
 * (floem/net.h, pcap backend), the same calls the generated program makes.
 *
 * Written for speed as a C programmer would: one loop, the store made once before it,
 * the key hashed once and the clock read once per request, counters as plain
 * increments (one thread), frames handed to the runtime by pointer. Prints the store's
 * statistics and the drops by reason, as kvs_replay.py's main does.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "floem/net.h"
#include "proto.h"
#include "store.h"

#define BATCH 32
#define KVS_MEMORY (64u << 20)      /* kvs.py: memory = 64 (MiB) */
#define KVS_BUCKETS (1u << 17)      /* kvs.py: store_buckets */

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

static uint64_t drops[KVS_DROPS];
static uint8_t record[KVS_RECORD_HEADER + KVS_VALUE_LIMIT];

/* Serve request `p` from `store` and write its reply: the datagrams after the first into
 * new frames (sent at once), the first into the request's frame `pkt`, or a new one when
 * it is longer than the request (sent last). */
static inline void serve(kvs_store_t *store, floem_packet_t *pkt)
{
    struct kvs_packet *p = pkt->data;
    uint8_t op = p->mc.opcode;
    uint16_t status = kvs_validate(p, KVS_VALUE_LIMIT);
    uint8_t *key = kvs_key(p);
    uint16_t keylen = kvs_keylen(p);
    uint32_t now = kvs_now();
    const uint8_t *rec = NULL;
    uint32_t reclen = 0;
    if (likely(status == FLOEM_MC_OK && (op == FLOEM_MC_GET || op == FLOEM_MC_GETK))) {
        long n = kvs_store_get(store, key, keylen, kvs_hash(key, keylen), now, record,
                               sizeof record);
        rec = record;
        reclen = n < 0 || (size_t)n > sizeof record ? 0 : (uint32_t)n;
    } else if (status == FLOEM_MC_OK && op == FLOEM_MC_SET) {
        uint32_t len = kvs_record_make(record, p, now);
        if (kvs_store_set(store, key, keylen, kvs_hash(key, keylen), kvs_record_expiry(record),
                          record, len))
            status = FLOEM_MC_OUT_OF_MEMORY;
    } else if ((status == FLOEM_MC_OK && op == FLOEM_MC_DELETE)
               || status == FLOEM_MC_VALUE_TOO_LARGE) {
        int found = kvs_store_delete(store, key, keylen, kvs_hash(key, keylen), now);
        if (op == FLOEM_MC_DELETE)      /* a SET too large keeps its status */
            status = found ? FLOEM_MC_OK : FLOEM_MC_KEY_NOT_FOUND;
    }
    struct floem_mc_msg r = kvs_reply_to(p, status, rec, reclen, now);
    unsigned datagrams = kvs_reply_datagrams(&r);
    for (unsigned seq = 1; seq < datagrams; seq++) {
        floem_packet_t more;
        if (!floem_net_alloc((uint32_t)kvs_reply_size(&r, seq), &more))
            break;
        kvs_reply_write(more.data, p, &r, seq);
        floem_net_tx(0, &more);
    }
    floem_packet_t first = {p, (uint32_t)kvs_reply_size(&r, 0), pkt->buffer};
    bool own = first.len > kvs_request_size(p);
    if (!own || floem_net_alloc(first.len, &first)) {
        kvs_reply_write(first.data, p, &r, 0);
        floem_net_tx(0, &first);
    }
    if (own)
        floem_net_free(pkt);
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
            int why = kvs_check(pkt.data, pkt.len);
            if (likely(why < 0)) {
                serve(store, &pkt);
            } else {
                drops[why]++;
                floem_net_free(&pkt);
            }
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
           ", multi_datagram %" PRIu64 ", bad_magic %" PRIu64 ", bad_length %" PRIu64 "\n",
           drops[KVS_DROP_NOT_UDP], drops[KVS_DROP_IP_OPTIONS], drops[KVS_DROP_TOO_SHORT],
           drops[KVS_DROP_MULTI_DATAGRAM], drops[KVS_DROP_BAD_MAGIC], drops[KVS_DROP_BAD_LENGTH]);
    kvs_store_free(store);
    return 0;
}
