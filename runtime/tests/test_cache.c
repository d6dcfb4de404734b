/* The cache construct's storage (floem/cache.h): forgetting keys, deferred write-backs, and
 * values handed out by reference staying intact while other threads set and evict (run
 * under TSan and ASan).
 *
 * Usage: test_cache [seconds of the stress test, default 1] */
#include "check.h"

#include "floem/cache.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static void test_forget(void)
{
    floem_cache_t *c = floem_cache_new(4, 2);
    floem_cache_evicted_t ev = {0};
    const void *ref;
    uint32_t len, version;
    bool dirty;
    CHECK(!floem_cache_forget(c, "k", 1, &ref, &len, &dirty));
    CHECK(floem_cache_set(c, "k", 1, "value", 5, true, false, &ev));
    CHECK(!ev.present);
    CHECK(floem_cache_forget(c, "k", 1, &ref, &len, &dirty));
    CHECK(len == 5 && memcmp(ref, "value", 5) == 0 && dirty);
    CHECK(!floem_cache_get(c, "k", 1, NULL, 0, &ref, &len, &version));

    /* A miss fetched across a forget must not be cached: the fetched value may be stale. */
    CHECK(!floem_cache_get(c, "m", 1, NULL, 0, &ref, &len, &version));
    CHECK(!floem_cache_forget(c, "m", 1, &ref, &len, &dirty));
    const void *cur;
    uint32_t curlen;
    CHECK(!floem_cache_fill(c, "m", 1, "old", 3, version, &cur, &curlen, &ev));
    CHECK(!floem_cache_get(c, "m", 1, NULL, 0, &ref, &len, &version));
    CHECK(!floem_cache_fill(c, "m", 1, "new", 3, version, &cur, &curlen, &ev));
    CHECK(floem_cache_get(c, "m", 1, NULL, 0, &ref, &len, &version));
    CHECK(len == 3 && memcmp(ref, "new", 3) == 0);

    /* A clean entry forgotten is reported clean; a dirty eviction never happens for it. */
    CHECK(floem_cache_forget(c, "m", 1, &ref, &len, &dirty));
    CHECK(!dirty);
    floem_cache_stats_t st;
    floem_cache_stats(c, &st);
    CHECK(st.writebacks == 0);
    floem_cache_free(c);
}

static floem_cache_evicted_t evicted_copy(const char *key, const char *val)
{
    floem_cache_evicted_t e = {.present = true, .keylen = (uint32_t)strlen(key),
                               .vallen = (uint32_t)strlen(val)};
    e.key = malloc(e.keylen);
    e.val = malloc(e.vallen);
    memcpy(e.key, key, e.keylen);
    memcpy(e.val, val, e.vallen);
    return e;
}

static void test_deferred_write_backs(void)
{
    floem_cache_t *c = floem_cache_new(4, 2);
    CHECK(!floem_cache_has_deferred(c));
    floem_cache_evicted_t none = {0};
    floem_cache_defer(c, &none);                /* nothing evicted: nothing deferred */
    CHECK(!floem_cache_has_deferred(c));
    const char *order[][2] = {{"a", "1"}, {"b", "2"}, {"a", "3"}, {"c", "4"}};
    for (int i = 0; i < 4; i++) {
        floem_cache_evicted_t e = evicted_copy(order[i][0], order[i][1]);
        floem_cache_defer(c, &e);
        CHECK(!e.present && e.key == NULL);     /* the cache took its copies */
    }
    CHECK(floem_cache_has_deferred(c));

    /* forget finds the latest value of a key only a deferred write-back holds, and drops
     * every write-back of it: the delete goes to the store after them all */
    const void *ref;
    uint32_t len;
    bool dirty;
    CHECK(floem_cache_forget(c, "a", 1, &ref, &len, &dirty));
    CHECK(len == 1 && memcmp(ref, "3", 1) == 0 && dirty);
    CHECK(!floem_cache_forget(c, "z", 1, &ref, &len, &dirty));

    /* the rest drain oldest first; pending until the drain ends */
    floem_cache_evicted_t e;
    uint64_t taken = 0;
    floem_cache_drain_begin(c);
    CHECK(floem_cache_take_deferred(c, &e) && memcmp(e.key, "b", 1) == 0);
    floem_cache_evicted_free(&e);
    taken++;
    CHECK(floem_cache_has_deferred(c));         /* "b" is taken, not yet sent */
    CHECK(floem_cache_take_deferred(c, &e) && memcmp(e.key, "c", 1) == 0);
    floem_cache_evicted_free(&e);
    taken++;
    CHECK(!floem_cache_take_deferred(c, &e));
    floem_cache_drain_end(c, taken);
    CHECK(!floem_cache_has_deferred(c));

    floem_cache_evicted_t left = evicted_copy("d", "5");
    floem_cache_defer(c, &left);
    floem_cache_free(c);                        /* frees what is still deferred */
}

/* Values of the stress test: byte i of a value of length n is (seed + i) % 251, seed its first
 * byte; a reader seeing anything else saw a torn or freed value. */
static uint32_t make_value(uint8_t *v, uint32_t seed)
{
    uint32_t n = 8 + seed % 120;
    for (uint32_t i = 0; i < n; i++)
        v[i] = (uint8_t)((seed + i) % 251);
    return n;
}

static bool intact(const uint8_t *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] != (uint8_t)((v[0] + i) % 251))
            return false;
    return n >= 8;
}

struct stress {
    floem_cache_t *cache;
    double seconds;
    unsigned seed;
    unsigned long reads;
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *writer(void *arg)
{
    struct stress *s = arg;
    uint8_t v[128];
    double end = now() + s->seconds;
    for (unsigned i = 0; now() < end; i++) {
        char key = (char)('a' + rand_r(&s->seed) % 6);
        uint32_t n = make_value(v, (uint32_t)rand_r(&s->seed) % 250);
        floem_cache_evicted_t ev = {0};
        floem_cache_set(s->cache, &key, 1, v, n, i % 2 == 0, false, &ev);
        if (ev.present)
            CHECK(intact(ev.val, ev.vallen));
        floem_cache_evicted_free(&ev);
        if (i % 3 == 0) {
            const void *ref;
            uint32_t len;
            bool dirty;
            if (floem_cache_forget(s->cache, &key, 1, &ref, &len, &dirty))
                CHECK(intact(ref, len));
        }
    }
    return NULL;
}

static void *reader(void *arg)
{
    struct stress *s = arg;
    double end = now() + s->seconds;
    while (now() < end) {
        char key = (char)('a' + rand_r(&s->seed) % 6);
        const void *ref;
        uint32_t len, version;
        if (floem_cache_get(s->cache, &key, 1, NULL, 0, &ref, &len, &version)) {
            CHECK(intact(ref, len));
            s->reads++;
        } else {
            uint8_t v[128];
            uint32_t n = make_value(v, (uint32_t)rand_r(&s->seed) % 250);
            const void *cur;
            uint32_t curlen;
            floem_cache_evicted_t ev = {0};
            if (floem_cache_fill(s->cache, &key, 1, v, n, version, &cur, &curlen, &ev))
                CHECK(intact(cur, curlen));
            floem_cache_evicted_free(&ev);
        }
    }
    return NULL;
}

/* Two readers hold values by reference while two writers overwrite, evict and forget them
 * (one bucket of two entries, six keys: every set evicts). */
static void test_stress(double seconds)
{
    floem_cache_t *c = floem_cache_new(1, 2);
    struct stress args[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct stress){c, seconds, (unsigned)i + 1, 0};
        CHECK(pthread_create(&threads[i], NULL, i < 2 ? writer : reader, &args[i]) == 0);
    }
    for (int i = 0; i < 4; i++)
        CHECK(pthread_join(threads[i], NULL) == 0);
    CHECK(args[2].reads + args[3].reads > 0);
    printf("stress: %lu reads by reference\n", args[2].reads + args[3].reads);
    floem_cache_free(c);
}

int main(int argc, char **argv)
{
    test_forget();
    test_deferred_write_backs();
    test_stress(argc > 1 ? atof(argv[1]) : 1.0);
    printf("ok: %lu checks\n", checks);
    return 0;
}
