/* Count-min sketch for floem.library.sketch.
 *
 * `depth` rows of `width` 64-bit counters, row-major in `counts`; row r
 * counts a key in column floem_hashlittle(key, len, r) % width. An estimate
 * is the smallest of the key's counters: never below the key's true total,
 * and above it by more than e/width times the total of all amounts with
 * probability at most exp(-depth).
 */
#ifndef FLOEM_LIBRARY_SKETCH_H
#define FLOEM_LIBRARY_SKETCH_H

#include <stddef.h>
#include <stdint.h>

/* Add `amount` for `key`; returns the key's estimate after the update. Thread-safe.
 * Plain update adds to every row (atomic adds). Conservative update raises each of the
 * key's counters only up to (estimate before + amount), under `lock` (floem_lock: the
 * work no two cores do at once, as floem explore counts it). */
uint64_t floem_cms_update(uint64_t *counts, uint32_t width, uint32_t depth, int *lock,
                          const void *key, size_t len, uint64_t amount, int conservative);

/* The estimate for `key`. */
uint64_t floem_cms_estimate(const uint64_t *counts, uint32_t width, uint32_t depth,
                            const void *key, size_t len);

#endif
