/* Count-min sketch updates and queries (see sketch.h). */
#include "sketch.h"

#include "floem/runtime.h"
#include "hash.h"

static size_t cell(uint32_t width, uint32_t row, const void *key, size_t len)
{
    return (size_t)row * width + floem_hashlittle(key, len, row) % width;
}

uint64_t floem_cms_estimate(const uint64_t *counts, uint32_t width, uint32_t depth,
                            const void *key, size_t len)
{
    uint64_t best = UINT64_MAX;
    for (uint32_t row = 0; row < depth; row++) {
        uint64_t c = __atomic_load_n(&counts[cell(width, row, key, len)], __ATOMIC_RELAXED);
        if (c < best)
            best = c;
    }
    return depth ? best : 0;
}

uint64_t floem_cms_update(uint64_t *counts, uint32_t width, uint32_t depth, int *lock,
                          const void *key, size_t len, uint64_t amount, int conservative)
{
    if (!conservative) {
        uint64_t best = UINT64_MAX;
        for (uint32_t row = 0; row < depth; row++) {
            uint64_t c = __atomic_add_fetch(&counts[cell(width, row, key, len)], amount,
                                            __ATOMIC_RELAXED);
            if (c < best)
                best = c;
        }
        return depth ? best : 0;
    }
    floem_lock(lock);                   /* serial work, as floem explore counts it */
    uint64_t target = floem_cms_estimate(counts, width, depth, key, len) + amount;
    for (uint32_t row = 0; row < depth; row++) {
        uint64_t *c = &counts[cell(width, row, key, len)];
        if (*c < target)
            __atomic_store_n(c, target, __ATOMIC_RELAXED);
    }
    floem_unlock(lock);
    return depth ? target : 0;
}
