/* A request's update (proto.h's kvs_update) applied to the store (store.h's kvs_store_update):
 * what the host's HashtUpdate and the external design's program call for an ADD, REPLACE,
 * APPEND, PREPEND, CAS, INCR, DECR, TOUCH, GAT, a SET or DELETE comparing a CAS value, or a
 * RESTORE of a record a NIC cache held; and the store's figures for stats.
 */
#ifndef KVS_UPDATE_H
#define KVS_UPDATE_H

#include "proto.h"
#include "store.h"

_Static_assert(KVS_UPDATE_KEEP == KVS_STORE_KEEP && KVS_UPDATE_DELETE == KVS_STORE_DELETE,
               "kvs_update answers kvs_store_update");

/* The request, and the status kvs_update answers it with. */
struct kvs_apply {
    uint8_t op;
    const uint8_t *rec;
    uint32_t reclen;
    uint64_t arg, cas;
    uint32_t value_max;
    uint16_t status;
};

static inline long kvs_apply_record(void *ctx, const void *old, size_t oldlen, void *out,
                                    uint32_t *exptime, uint64_t *cas)
{
    struct kvs_apply *a = (struct kvs_apply *)ctx;
    long n = kvs_update(a->op, (const uint8_t *)old, (uint32_t)oldlen, a->rec, a->reclen, a->arg,
                        a->cas, a->value_max, (uint8_t *)out, &a->status);
    if (n >= KVS_RECORD_HEADER) {
        *exptime = kvs_record_expiry((const uint8_t *)out);
        *cas = kvs_record_cas((const uint8_t *)out);
    }
    return n;
}

/* Apply update `op` of `key` (its record `rec`, argument `arg`, new CAS value `cas`) at `now`,
 * records of a CAS value below `oldest` being dead (flush_all); the
 * record the key holds after it in `result` (room for KVS_RECORD_MAX bytes) and its length
 * returned (0: none, or unchanged), the answer in *status. KVS_OP_STATS changes nothing: its
 * record is the store's figures (proto.h's kvs_stats_record). */
static inline uint32_t kvs_store_apply(kvs_store_t *s, const uint8_t *key, uint16_t keylen,
                                       uint32_t hash, uint32_t now, uint64_t oldest, uint8_t op,
                                       const uint8_t *rec, uint32_t reclen, uint64_t arg,
                                       uint64_t cas, uint32_t value_max, uint8_t *result,
                                       uint16_t *status)
{
    static _Thread_local uint8_t old[KVS_RECORD_MAX];
    if (op == KVS_OP_STATS) {
        kvs_store_stats_t st;
        kvs_store_stats(s, &st);
        const uint64_t figures[KVS_STATS_FIGURES] = {st.items, st.sets, st.bytes, st.evictions,
                                                     st.limit};
        *status = FLOEM_MC_OK;
        return kvs_stats_record(result, figures);
    }
    struct kvs_apply a = {op, rec, reclen, arg, cas, value_max, FLOEM_MC_OK};
    long n = kvs_store_update(s, key, keylen, hash, now, oldest, kvs_apply_record, &a, old,
                              result, KVS_RECORD_MAX);
    *status = n == KVS_STORE_FAILED ? FLOEM_MC_OUT_OF_MEMORY : a.status;
    return n >= 0 ? (uint32_t)n : 0;
}

#endif
