/* Floem cache construct: a hash cache of byte-string keys and values.
 *
 * `buckets` buckets of at most `entries` entries each (0: an unbounded chain);
 * a full bucket evicts its least recently used entry. Keys and values are
 * copied into the cache. Every bucket has a version, bumped by every set and
 * eviction in it, so a miss can tell at fill time whether the key may have
 * changed while its value was being fetched (then the fetched value is not
 * cached). One lock per bucket makes the cache safe for several threads of one
 * process. Counters: hits, misses, evictions, write-backs (dirty evictions).
 *
 * A value handed out by reference (`val_ref`, `cur_ref`) is a copy, made under the
 * bucket lock into a buffer of the calling thread: it stays valid, whatever other
 * threads do to the cache, until the same thread's next call that hands one out.
 */
#ifndef FLOEM_CACHE_H
#define FLOEM_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct floem_cache floem_cache_t;

typedef struct {
    uint64_t hits, misses, evictions, writebacks;
} floem_cache_stats_t;

/* A dirty entry pushed out of the cache: its own copies of key and value (free with
 * floem_cache_evicted_free). `present` is false when nothing dirty was evicted. */
typedef struct {
    bool present;
    void *key;
    uint32_t keylen;
    void *val;
    uint32_t vallen;
} floem_cache_evicted_t;

/* The hash of a key (FNV-1a): the cache's bucket choice, and the queue instance it steers to. */
static inline uint64_t floem_cache_hash(const void *key, uint32_t keylen)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < keylen; i++)
        h = (h ^ ((const uint8_t *)key)[i]) * 1099511628211ull;
    return h;
}

floem_cache_t *floem_cache_new(uint32_t buckets, uint32_t entries);
void floem_cache_free(floem_cache_t *c);

/* Look `key` up. On a hit, copies at most `cap` bytes of the value to `val` (or, when
 * `val_ref` is given, points *val_ref at the calling thread's copy of it),
 * sets *vallen and returns true. On a miss returns false. Either way *version is the
 * bucket's version now (for floem_cache_fill). Counts a hit or a miss. */
bool floem_cache_get(floem_cache_t *c, const void *key, uint32_t keylen, void *val, uint32_t cap,
                     const void **val_ref, uint32_t *vallen, uint32_t *version);

/* After a miss: cache the fetched value unless the bucket changed since `version` or the
 * key is present already. Returns true when the key is present afterwards with a value
 * other than the one fetched (a set won the race): then *cur_ref and *cur_len name it. */
bool floem_cache_fill(floem_cache_t *c, const void *key, uint32_t keylen, const void *val,
                      uint32_t vallen, uint32_t version, const void **cur_ref, uint32_t *cur_len,
                      floem_cache_evicted_t *evicted);

/* A set: store the value (marking the entry dirty when `dirty`), inserting the key when
 * absent unless `only_if_present`. Returns true when the key is in the cache afterwards.
 * A dirty entry evicted to make room is returned in *evicted. Bumps the bucket version. */
bool floem_cache_set(floem_cache_t *c, const void *key, uint32_t keylen, const void *val,
                     uint32_t vallen, bool dirty, bool only_if_present,
                     floem_cache_evicted_t *evicted);

/* Remove `key` from the cache without writing it back, dirty or not (its set region will
 * not run for it): for a delete that goes to the store itself. A deferred write-back of
 * the key (below) goes too. Bumps the bucket version, so a miss being fetched meanwhile
 * is not cached. Returns true when the key was cached or its write-back pending; then
 * *val_ref and *vallen name (the calling thread's copy of) its latest value and *dirty
 * says whether it had not been written back. */
bool floem_cache_forget(floem_cache_t *c, const void *key, uint32_t keylen, const void **val_ref,
                        uint32_t *vallen, bool *dirty);

/* Deferred write-backs. A thread that must not run the set region itself (it would wait
 * on a queue that only it drains) hands a dirty evicted entry over with floem_cache_defer
 * (taking its copies); the set region's own segment runs them, oldest first, before its
 * next lookup or update:
 *
 *     if (floem_cache_has_deferred(c)) {
 *         uint64_t n = 0;
 *         floem_cache_drain_begin(c);
 *         while (floem_cache_take_deferred(c, &evicted)) { run it; n++; }
 *         floem_cache_drain_end(c, n);
 *     }
 *
 * A key's write-back therefore always leaves before a later miss or forget of the key:
 * has_deferred counts write-backs taken but not yet sent, and forget waits for a drain. */
void floem_cache_defer(floem_cache_t *c, floem_cache_evicted_t *evicted);
bool floem_cache_has_deferred(const floem_cache_t *c);
void floem_cache_drain_begin(floem_cache_t *c);
bool floem_cache_take_deferred(floem_cache_t *c, floem_cache_evicted_t *out);
void floem_cache_drain_end(floem_cache_t *c, uint64_t taken);

void floem_cache_evicted_free(floem_cache_evicted_t *e);
void floem_cache_stats(const floem_cache_t *c, floem_cache_stats_t *out);
/* One line of counters: "floem: cache NAME: hits ..., misses ..., ...". */
void floem_cache_report(FILE *out, const char *name, const floem_cache_t *c);

#endif
