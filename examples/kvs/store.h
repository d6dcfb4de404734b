/* A thread-safe, bounded, in-memory key-value store with memcached-like semantics.
 *
 * Memory. kvs_store_new reserves one region of `memory_bytes` and cuts it into pages:
 * 1 MiB, or for small budgets the largest power of two <= memory_bytes / 64 (at least
 * 4 KiB, so memory_bytes must be at least that), so that even a 1 MiB store has enough
 * pages for several item sizes. Pages go to slab classes on demand and never move
 * between classes. A class hands out chunks of one size; sizes grow by a factor of
 * 1.25 from 64 bytes, and the last class is one whole page, which is therefore the
 * largest storable item (48-byte header + key + record on 64-bit CPUs). The `bytes`
 * statistic counts pages given to classes and can never exceed the budget.
 *
 * Items. A chunk holds a header (hash-chain link, the class's list links, version, hash,
 * exptime, record length, key length, class, accessed bit, linked bit), then the key,
 * then the record. Chunk sizes are multiples of 8 and pages start at multiples of the
 * page size, so every header is 8-byte aligned.
 *
 * Eviction. A class keeps its items in insertion order. When it has no free chunk and
 * no page is left, a CLOCK hand walks from the oldest item: an expired item is taken at
 * once; an item read since it was last considered gets a second chance (its accessed
 * bit is cleared and it goes to the back); otherwise the item is evicted. If nothing
 * can be taken (the class has no items, or all of them are busy), the set fails.
 * kvs_store_set has no clock argument, so eviction judges expiry by the latest `now`
 * given to kvs_store_get or kvs_store_delete.
 *
 * Concurrency. Any number of threads may call any function except kvs_store_free.
 * Each hash bucket has a spinlock (one 32-bit word next to the chain head: tables
 * have millions of buckets and every critical section is a short chain walk plus at
 * most one record copy); each slab class has a pthread mutex (an eviction scan can be
 * long, so waiters should sleep). Readers copy the record out under the bucket lock,
 * so a chunk is never reused while it is being read. See store.c for the lock order.
 *
 * Statistics: `gets`, `sets` and `deletes` count calls (an update counts as a set or a delete
 * when it stores or removes); `hits` counts gets that found a live record (whether or not it
 * fitted in `cap`).
 *
 * Versions. Every item carries a 64-bit version, the caller's (the key-value store's CAS
 * value). Readers say, beside the time `now`, the oldest live version `oldest` (0: any): an
 * item of a lower one is dead to them, as if expired (flush_all). Eviction judges expiry by
 * the latest `now` and the highest `oldest` any call gave.
 *
 * Compile with -std=c11 (or later) and -pthread.
 */
#ifndef KVS_STORE_H
#define KVS_STORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvs_store kvs_store_t;

typedef struct {
    uint64_t items;        /* items linked now */
    uint64_t bytes;        /* bytes of memory given to item chunks so far (never above the budget) */
    uint64_t gets, hits, sets, deletes;
    uint64_t evictions;    /* live items removed to make room */
    uint64_t expired;      /* items found expired (on get/delete/eviction scan) and removed */
    uint64_t set_failures; /* sets that could not be stored (too large, or no memory) */
    uint64_t limit;        /* the budget: bytes of the pages */
} kvs_store_stats_t;

/* A store of at most `memory_bytes` of item memory and `buckets` hash buckets (rounded up to a
 * power of two). Returns NULL when the memory cannot be reserved or the arguments are unusable. */
kvs_store_t *kvs_store_new(size_t memory_bytes, uint32_t buckets);
void kvs_store_free(kvs_store_t *s);
/* The store at *slot, made with kvs_store_new by the first caller (any number of threads may
 * call it at once; one store is kept) and freed when the process exits (returns from main or
 * calls exit, when no thread may use it any more). NULL when it cannot be made. Once the
 * store exists this is one load and one branch, inlined: callers may call it for every
 * request. */
kvs_store_t *kvs_store_make_once(kvs_store_t **slot, size_t memory_bytes, uint32_t buckets);
static inline kvs_store_t *kvs_store_once(kvs_store_t **slot, size_t memory_bytes, uint32_t buckets)
{
    kvs_store_t *s = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    return __builtin_expect(s != NULL, 1) ? s : kvs_store_make_once(slot, memory_bytes, buckets);
}

/* The record stored under `key` (keylen bytes, 1..250), whose 32-bit hash the caller computed
 * (any hash function; the same key must always come with the same hash). `now` is the current
 * time in seconds (the caller's clock), `oldest` the oldest live version. If the key holds a live record of L bytes and L <= cap,
 * copies it to `out` and returns L; if L > cap returns L without copying; if the key is absent or
 * its item has expired, returns -1 (an expired item found is removed). */
long kvs_store_get(kvs_store_t *s, const void *key, size_t keylen, uint32_t hash, uint32_t now,
                   uint64_t oldest, void *out, size_t cap);

/* Store `rec` (reclen bytes, may be 0) under `key`, replacing any previous record, expiring at
 * `exptime` (absolute seconds, 0 = never; an item is expired when exptime != 0 && now >= exptime),
 * with version `cas` (any number the caller chooses: see "Versions").
 * Returns 0, or -1 when it cannot be stored (item larger than the largest chunk, or no memory
 * can be found even after evicting) -- then the previous record of the key, if any, is removed
 * (memcached does the same: a failed set does not leave the old value). */
int kvs_store_set(kvs_store_t *s, const void *key, size_t keylen, uint32_t hash, uint32_t exptime,
                  uint64_t cas, const void *rec, size_t reclen);

/* Change what `key` holds, atomically: `fn` gets the key's live record (`old`, NULL when it has
 * none, or when it is longer than `cap`) and writes the new one to `out` (room for `cap` bytes),
 * returning its length with its expiry time and version in *exptime and *cas, or
 * KVS_STORE_KEEP (leave the key as it is) or KVS_STORE_DELETE (remove it). `fn` runs with no
 * lock held, and again if another write changed the key meanwhile. `old` and `out` are the
 * caller's buffers of `cap` bytes. Returns what `fn` returned last, or KVS_STORE_FAILED when
 * the new record cannot be stored (then the key is as it was). */
#define KVS_STORE_KEEP (-1)
#define KVS_STORE_DELETE (-2)
#define KVS_STORE_FAILED (-3)
typedef long (*kvs_store_update_fn)(void *ctx, const void *old, size_t oldlen, void *out,
                                    uint32_t *exptime, uint64_t *cas);
long kvs_store_update(kvs_store_t *s, const void *key, size_t keylen, uint32_t hash, uint32_t now,
                      uint64_t oldest, kvs_store_update_fn fn, void *ctx, void *old, void *out,
                      size_t cap);

/* Remove `key`. Returns 1 when it held a live record, 0 when it was absent or expired. */
int kvs_store_delete(kvs_store_t *s, const void *key, size_t keylen, uint32_t hash, uint32_t now,
                     uint64_t oldest);

/* Remove `key` and hand back the record it held: returns and copies like kvs_store_get (L,
 * copied to `out` when L <= cap; -1 when absent or expired), and counts as a delete. */
long kvs_store_take(kvs_store_t *s, const void *key, size_t keylen, uint32_t hash, uint32_t now,
                    uint64_t oldest, void *out, size_t cap);

void kvs_store_stats(kvs_store_t *s, kvs_store_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif
