/* Tests of the key-value store (examples/kvs/store.c).
 *
 * Usage: store_test unit           behaviour tests, single-threaded
 *        store_test stress [SCALE] 4 threads on a 4 MiB store (SCALE 1: a million ops each)
 * Build: cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread -Iexamples/kvs
 *        -Iruntime/tests tests/kvs/store_test.c examples/kvs/store.c -o store_test
 * Prints "ok: N checks" (unit) or a summary and "ok" (stress); any failed check names
 * itself and aborts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "store.h"

#include "check.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define MIB ((size_t)1 << 20)

static uint32_t fnv1a(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static uint64_t rnd(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Record bytes that depend on `seed` and position, so a mixed-up or torn record shows. */
static void fill(unsigned char *p, size_t len, uint32_t seed)
{
    for (size_t j = 0; j < len; j++)
        p[j] = (unsigned char)(((seed + (uint32_t)j) * 0x9E3779B1u) >> 24);
}

static bool filled(const unsigned char *p, size_t len, uint32_t seed)
{
    for (size_t j = 0; j < len; j++)
        if (p[j] != (unsigned char)(((seed + (uint32_t)j) * 0x9E3779B1u) >> 24))
            return false;
    return true;
}

static int set_str(kvs_store_t *s, const char *key, uint32_t exptime, const void *rec, size_t len)
{
    return kvs_store_set(s, key, strlen(key), fnv1a(key, strlen(key)), exptime, 0, rec, len);
}

static long get_str(kvs_store_t *s, const char *key, uint32_t now, void *out, size_t cap)
{
    return kvs_store_get(s, key, strlen(key), fnv1a(key, strlen(key)), now, 0, out, cap);
}

static int delete_str(kvs_store_t *s, const char *key, uint32_t now)
{
    return kvs_store_delete(s, key, strlen(key), fnv1a(key, strlen(key)), now, 0);
}

static kvs_store_stats_t stats_of(kvs_store_t *s)
{
    kvs_store_stats_t st;
    kvs_store_stats(s, &st);
    return st;
}

static void test_arguments(void)
{
    CHECK(kvs_store_new(0, 16) == NULL);
    CHECK(kvs_store_new(MIB, 0) == NULL);
    kvs_store_t *s = kvs_store_new(MIB, 3);
    CHECK(s != NULL);
    kvs_store_free(s);
    kvs_store_free(NULL);
}

static void test_basic(void)
{
    kvs_store_t *s = kvs_store_new(8 * MIB, 1024);
    CHECK(s != NULL);
    unsigned char rec[300], out[300];
    fill(rec, sizeof rec, 1);

    CHECK(get_str(s, "alpha", 0, out, sizeof out) == -1);
    CHECK(set_str(s, "alpha", 0, "hello", 5) == 0);
    CHECK(get_str(s, "alpha", 0, out, sizeof out) == 5);
    CHECK(memcmp(out, "hello", 5) == 0);
    /* Overwrite with a longer record (another slab class), then a shorter one. */
    CHECK(set_str(s, "alpha", 0, rec, sizeof rec) == 0);
    CHECK(get_str(s, "alpha", 0, out, sizeof out) == (long)sizeof rec);
    CHECK(memcmp(out, rec, sizeof rec) == 0);
    CHECK(set_str(s, "alpha", 0, "abc", 3) == 0);
    memset(out, 0xAA, sizeof out);
    CHECK(get_str(s, "alpha", 0, out, 2) == 3);  /* too small: length only, nothing copied */
    CHECK(out[0] == 0xAA && out[1] == 0xAA);
    CHECK(get_str(s, "alpha", 0, out, 3) == 3);
    CHECK(memcmp(out, "abc", 3) == 0);
    CHECK(stats_of(s).items == 1);
    CHECK(delete_str(s, "alpha", 0) == 1);
    CHECK(get_str(s, "alpha", 0, out, sizeof out) == -1);
    CHECK(delete_str(s, "alpha", 0) == 0);

    /* Shortest and longest keys; two long keys that differ only in their last byte. */
    char long1[251], long2[251];
    memset(long1, 'k', 250);
    long1[250] = '\0';
    memcpy(long2, long1, sizeof long1);
    long2[249] = 'j';
    CHECK(set_str(s, "k", 0, "one", 3) == 0);
    CHECK(set_str(s, long1, 0, "long1", 5) == 0);
    CHECK(set_str(s, long2, 0, "long2", 5) == 0);
    CHECK(get_str(s, "k", 0, out, sizeof out) == 3 && memcmp(out, "one", 3) == 0);
    CHECK(get_str(s, long1, 0, out, sizeof out) == 5 && memcmp(out, "long1", 5) == 0);
    CHECK(get_str(s, long2, 0, out, sizeof out) == 5 && memcmp(out, "long2", 5) == 0);
    CHECK(kvs_store_set(s, "", 0, 0, 0, 0, "x", 1) == -1);

    /* A zero-length record is present, not absent. */
    CHECK(set_str(s, "empty", 0, NULL, 0) == 0);
    CHECK(get_str(s, "empty", 0, NULL, 0) == 0);
    CHECK(get_str(s, "empty", 0, out, sizeof out) == 0);
    CHECK(delete_str(s, "empty", 0) == 1);
    CHECK(get_str(s, "empty", 0, out, sizeof out) == -1);

    /* Keys are told apart by their bytes, not only by the caller's hash. */
    CHECK(kvs_store_set(s, "same1", 5, 42, 0, 0, "A", 1) == 0);
    CHECK(kvs_store_set(s, "same2", 5, 42, 0, 0, "B", 1) == 0);
    CHECK(kvs_store_get(s, "same1", 5, 42, 0, 0, out, sizeof out) == 1 && out[0] == 'A');
    CHECK(kvs_store_get(s, "same2", 5, 42, 0, 0, out, sizeof out) == 1 && out[0] == 'B');
    CHECK(kvs_store_delete(s, "same1", 5, 42, 0, 0) == 1);
    CHECK(kvs_store_get(s, "same2", 5, 42, 0, 0, out, sizeof out) == 1 && out[0] == 'B');

    kvs_store_stats_t st = stats_of(s);
    CHECK(st.items == 4);  /* k, long1, long2, same2 */
    CHECK(st.sets == 10 && st.set_failures == 1);
    CHECK(st.gets == 15 && st.hits == 12);
    CHECK(st.deletes == 4);
    CHECK(st.evictions == 0 && st.expired == 0);
    CHECK(st.bytes > 0 && st.bytes <= 8 * MIB);
    kvs_store_free(s);
}

static void test_expiry(void)
{
    kvs_store_t *s = kvs_store_new(8 * MIB, 64);
    CHECK(s != NULL);
    char out[16];
    CHECK(set_str(s, "forever", 0, "f", 1) == 0);
    CHECK(set_str(s, "b", 100, "b", 1) == 0);
    CHECK(set_str(s, "c", 100, "c", 1) == 0);
    CHECK(get_str(s, "forever", UINT32_MAX, out, sizeof out) == 1);
    CHECK(get_str(s, "b", 99, out, sizeof out) == 1);
    CHECK(get_str(s, "c", 99, out, sizeof out) == 1);
    CHECK(stats_of(s).expired == 0);
    CHECK(get_str(s, "b", 100, out, sizeof out) == -1);
    CHECK(stats_of(s).expired == 1);
    CHECK(get_str(s, "b", 0, out, sizeof out) == -1);  /* removed, not just hidden */
    CHECK(delete_str(s, "c", 100) == 0);
    CHECK(stats_of(s).expired == 2);
    CHECK(get_str(s, "c", 0, out, sizeof out) == -1);
    CHECK(delete_str(s, "b", 100) == 0);
    CHECK(stats_of(s).items == 1);
    CHECK(get_str(s, "forever", UINT32_MAX, out, sizeof out) == 1);
    kvs_store_free(s);

    /* Eviction reclaims expired items as such: with the clock (the latest `now` seen)
     * past their exptime, making room costs no live item. */
    s = kvs_store_new(MIB, 1024);
    CHECK(s != NULL);
    unsigned char rec[100] = {0};
    char key[32];
    unsigned n = 0;
    while (stats_of(s).evictions == 0) {
        snprintf(key, sizeof key, "e%07u", n++);
        CHECK(set_str(s, key, 50, rec, sizeof rec) == 0);
        CHECK(n < 100000);
    }
    uint64_t items = stats_of(s).items;
    CHECK(get_str(s, "clock", 60, out, sizeof out) == -1);
    for (unsigned i = 0; i < items / 2; i++) {
        snprintf(key, sizeof key, "n%07u", i);
        CHECK(set_str(s, key, 0, rec, sizeof rec) == 0);
    }
    kvs_store_stats_t st = stats_of(s);
    CHECK(st.evictions == 1);
    CHECK(st.expired == items / 2);
    CHECK(st.items == items);
    kvs_store_free(s);
}

/* Far more data than fits in 2 MiB: sets keep succeeding by evicting the oldest unread
 * items; a key read now and then survives. */
static void test_bounded(void)
{
    const size_t budget = 2 * MIB;
    const unsigned n = 50000, recent = 1000;
    kvs_store_t *s = kvs_store_new(budget, 65536);
    CHECK(s != NULL);
    unsigned char rec[100], out[100];
    char key[32];
    fill(rec, 80, 7);
    CHECK(set_str(s, "hot", 0, rec, 80) == 0);
    for (unsigned i = 0; i < n; i++) {
        snprintf(key, sizeof key, "key:%06u", i);
        size_t len = 64 + i % 37;
        fill(rec, len, i);
        CHECK(set_str(s, key, 0, rec, len) == 0);
        CHECK(stats_of(s).bytes <= budget);
        if (i % 50 == 0)
            CHECK(get_str(s, "hot", 0, out, sizeof out) == 80);
    }
    kvs_store_stats_t st = stats_of(s);
    CHECK(st.evictions > 0);
    CHECK(st.set_failures == 0);
    CHECK(st.items + st.evictions == n + 1);
    CHECK(get_str(s, "hot", 0, out, sizeof out) == 80 && filled(out, 80, 7));
    for (unsigned i = n - recent; i < n; i++) {
        snprintf(key, sizeof key, "key:%06u", i);
        CHECK(get_str(s, key, 0, out, sizeof out) == (long)(64 + i % 37));
        CHECK(filled(out, 64 + i % 37, i));
    }
    for (unsigned i = 0; i < recent; i++) {
        snprintf(key, sizeof key, "key:%06u", i);
        CHECK(get_str(s, key, 0, out, sizeof out) == -1);
    }
    kvs_store_free(s);

    /* The smallest budget still spreads over many sizes and evicts. */
    s = kvs_store_new(MIB, 4096);
    CHECK(s != NULL);
    static unsigned char big[3000];
    uint64_t seed = 12345;
    for (unsigned i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "small:%u", i);
        size_t len = 10 + rnd(&seed) % 2990;
        fill(big, len, i);
        CHECK(set_str(s, key, 0, big, len) == 0);
        CHECK(stats_of(s).bytes <= MIB);
        CHECK(get_str(s, key, 0, big, sizeof big) == (long)len && filled(big, len, i));
    }
    CHECK(stats_of(s).evictions > 0);
    kvs_store_free(s);
}

static void test_too_large(void)
{
    kvs_store_t *s = kvs_store_new(64 * MIB, 1024);  /* big enough for 1 MiB pages */
    CHECK(s != NULL);
    static unsigned char rec[2 * MIB], out[2 * MIB];
    fill(rec, sizeof rec, 3);
    CHECK(set_str(s, "big", 0, rec, 1000) == 0);
    CHECK(set_str(s, "big", 0, rec, 1000000) == 0);  /* memcached's usual 1 MB item fits */
    CHECK(get_str(s, "big", 0, out, sizeof out) == 1000000 && filled(out, 1000000, 3));
    CHECK(set_str(s, "big", 0, rec, MIB) == -1);  /* with header and key: over a page */
    CHECK(get_str(s, "big", 0, out, sizeof out) == -1);
    CHECK(set_str(s, "big2", 0, rec, 10) == 0);
    CHECK(set_str(s, "big2", 0, rec, sizeof rec) == -1);
    CHECK(get_str(s, "big2", 0, out, sizeof out) == -1);
    kvs_store_stats_t st = stats_of(s);
    CHECK(st.set_failures == 2);
    CHECK(st.items == 0);
    kvs_store_free(s);
}

/* kvs_store_take: delete, handing back the live record (its length alone when too long). */
static void test_take(void)
{
    kvs_store_t *s = kvs_store_new(8 * MIB, 64);
    CHECK(s != NULL);
    unsigned char rec[300], out[300];
    fill(rec, sizeof rec, 4);
    CHECK(kvs_store_take(s, "t", 1, fnv1a("t", 1), 0, 0, out, sizeof out) == -1);
    CHECK(set_str(s, "t", 0, rec, sizeof rec) == 0);
    memset(out, 0, sizeof out);
    CHECK(kvs_store_take(s, "t", 1, fnv1a("t", 1), 0, 0, out, sizeof out) == (long)sizeof rec);
    CHECK(filled(out, sizeof rec, 4));
    CHECK(get_str(s, "t", 0, out, sizeof out) == -1);
    CHECK(kvs_store_take(s, "t", 1, fnv1a("t", 1), 0, 0, out, sizeof out) == -1);
    CHECK(set_str(s, "t", 0, rec, sizeof rec) == 0);
    memset(out, 0xAA, sizeof out);
    CHECK(kvs_store_take(s, "t", 1, fnv1a("t", 1), 0, 0, out, 10) == (long)sizeof rec);
    CHECK(out[0] == 0xAA);                             /* too small: length only, still removed */
    CHECK(get_str(s, "t", 0, out, sizeof out) == -1);
    CHECK(set_str(s, "empty", 0, NULL, 0) == 0);
    CHECK(kvs_store_take(s, "empty", 5, fnv1a("empty", 5), 0, 0, NULL, 0) == 0);
    CHECK(set_str(s, "old", 100, rec, 8) == 0);        /* expired: absent, and removed */
    CHECK(kvs_store_take(s, "old", 3, fnv1a("old", 3), 100, 0, out, sizeof out) == -1);
    CHECK(kvs_store_take(s, "", 0, 0, 0, 0, out, sizeof out) == -1);
    kvs_store_stats_t st = stats_of(s);
    CHECK(st.deletes == 7 && st.expired == 1 && st.items == 0);
    kvs_store_free(s);
}

#define REF_KEYS 64
#define REF_MAX 2000

/* Random operations on few keys (so they overwrite), some expiring, against a model. */
static void test_random(void)
{
    static struct {
        bool present;  /* linked in the store: set and not yet removed */
        uint32_t exptime;
        size_t len;
        unsigned char data[REF_MAX];
    } ref[REF_KEYS];
    static unsigned char rec[REF_MAX], out[REF_MAX + 100];
    char keys[REF_KEYS][256];
    for (unsigned k = 0; k < REF_KEYS; k++) {
        int n = snprintf(keys[k], sizeof keys[k], "r%u-", k);
        size_t len = (size_t)n + k * 37 % 200;
        memset(keys[k] + n, 'x', len - (size_t)n);
        keys[k][len] = '\0';
    }
    kvs_store_t *s = kvs_store_new(32 * MIB, 4);  /* 4 buckets: long chains */
    CHECK(s != NULL);
    uint64_t seed = 99, hits = 0, expired = 0;
    uint32_t now = 1;
    const unsigned ops = 200000;
    for (unsigned op = 0; op < ops; op++) {
        if (op % 997 == 0)
            now++;
        unsigned k = (unsigned)(rnd(&seed) % REF_KEYS);
        bool live = ref[k].present && !(ref[k].exptime != 0 && now >= ref[k].exptime);
        unsigned what = (unsigned)(rnd(&seed) % 10);
        if (what < 4) {
            size_t cap = (size_t)(rnd(&seed) % (REF_MAX + 100));
            long got = get_str(s, keys[k], now, out, cap);
            if (live) {
                hits++;
                CHECK(got == (long)ref[k].len);
                if (ref[k].len <= cap)
                    CHECK(memcmp(out, ref[k].data, ref[k].len) == 0);
            } else {
                CHECK(got == -1);
                expired += ref[k].present;
                ref[k].present = false;
            }
        } else if (what < 8) {
            size_t len = (size_t)(rnd(&seed) % (REF_MAX + 1));
            uint32_t exptime = rnd(&seed) % 4 == 0 ? now + 1 + (uint32_t)(rnd(&seed) % 20) : 0;
            fill(rec, len, op);
            CHECK(set_str(s, keys[k], exptime, rec, len) == 0);
            ref[k].present = true;
            ref[k].exptime = exptime;
            ref[k].len = len;
            memcpy(ref[k].data, rec, len);
        } else {
            CHECK(delete_str(s, keys[k], now) == (live ? 1 : 0));
            expired += ref[k].present && !live;
            ref[k].present = false;
        }
    }
    unsigned present = 0;
    for (unsigned k = 0; k < REF_KEYS; k++)
        present += ref[k].present;
    kvs_store_stats_t st = stats_of(s);
    CHECK(st.items == present);
    CHECK(st.gets + st.sets + st.deletes == ops);
    CHECK(st.hits == hits);
    CHECK(st.expired == expired && expired > 0);
    CHECK(st.evictions == 0 && st.set_failures == 0);
    kvs_store_free(s);
}

/* ---- stress ---- */

#define THREADS 4
#define OWN_KEYS 2000
#define SHARED_KEYS 16
#define STRESS_BUDGET (4 * MIB)
#define REC_MAX 1500

static kvs_store_t *stress_store;
static uint32_t stress_clock = 1;
static uint64_t stress_ops;
static pthread_barrier_t stress_start;

struct own_header {
    uint32_t id, version, len;
};

struct shared_header {
    uint32_t seed, len;
};

static _Noreturn void stress_fail(unsigned thread, const char *key, const char *what, long got)
{
    fprintf(stderr, "thread %u, key %s: %s (get returned %ld)\n", thread, key, what, got);
    abort();
}

/* An own key's record: its id, its version and a pattern from both. */
static void check_own(unsigned t, const char *key, const unsigned char *out, long got,
                      uint32_t id, uint32_t version, size_t len)
{
    struct own_header h;
    if (got != (long)len)
        stress_fail(t, key, "wrong length", got);
    memcpy(&h, out, sizeof h);
    if (h.id != id || h.version != version || h.len != len)
        stress_fail(t, key, "wrong key or version", got);
    if (!filled(out + sizeof h, len - sizeof h, id * 65599u + version))
        stress_fail(t, key, "corrupt record", got);
}

/* A shared key's record checks itself: its header says how it must continue. */
static void check_shared(unsigned t, const char *key, const unsigned char *out, long got)
{
    struct shared_header h;
    if (got < (long)sizeof h)
        stress_fail(t, key, "record too short", got);
    memcpy(&h, out, sizeof h);
    if (h.len != (uint32_t)got || !filled(out + sizeof h, (size_t)got - sizeof h, h.seed))
        stress_fail(t, key, "torn or corrupt record", got);
}

static void *stress_thread(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    kvs_store_t *s = stress_store;
    static uint32_t version[THREADS][OWN_KEYS];
    static uint32_t length[THREADS][OWN_KEYS];
    static bool maybe[THREADS][OWN_KEYS];  /* false: certainly absent */
    unsigned char rec[REC_MAX], out[REC_MAX];
    char key[32];
    uint64_t seed = 0x1234567ULL * (t + 1), own_hits = 0;
    pthread_barrier_wait(&stress_start);
    for (uint64_t op = 0; op < stress_ops; op++) {
        if (t == 0 && op % 1000 == 999)
            __atomic_fetch_add(&stress_clock, 1, __ATOMIC_RELAXED);
        uint32_t now = __atomic_load_n(&stress_clock, __ATOMIC_RELAXED);
        uint64_t r = rnd(&seed);
        unsigned what = (unsigned)(r % 20);
        size_t len = (size_t)(r >> 8) % REC_MAX;
        if ((r >> 40) & 1) {
            uint32_t k = (uint32_t)(r >> 20) % OWN_KEYS;
            uint32_t id = t * OWN_KEYS + k;
            snprintf(key, sizeof key, "own:%u", id);
            uint32_t hash = fnv1a(key, strlen(key));
            if (what < 9) {
                long got = kvs_store_get(s, key, strlen(key), hash, now, 0, out, sizeof out);
                if (got >= 0) {
                    if (!maybe[t][k])
                        stress_fail(t, key, "present after delete or failed set", got);
                    check_own(t, key, out, got, id, version[t][k], length[t][k]);
                    own_hits++;
                }
            } else if (what < 18) {
                struct own_header h = {id, ++version[t][k], (uint32_t)len};
                if (len < sizeof h)
                    h.len = (uint32_t)(len = sizeof h);
                memcpy(rec, &h, sizeof h);
                fill(rec + sizeof h, len - sizeof h, id * 65599u + h.version);
                maybe[t][k] = kvs_store_set(s, key, strlen(key), hash, 0, 0, rec, len) == 0;
                length[t][k] = (uint32_t)len;
            } else {
                int got = kvs_store_delete(s, key, strlen(key), hash, now, 0);
                if (got != 0 && (got != 1 || !maybe[t][k]))
                    stress_fail(t, key, "delete of an absent key succeeded", got);
                maybe[t][k] = false;
            }
        } else {
            snprintf(key, sizeof key, "shared:%u", (unsigned)(r >> 20) % SHARED_KEYS);
            uint32_t hash = fnv1a(key, strlen(key));
            if (what < 10) {
                long got = kvs_store_get(s, key, strlen(key), hash, now, 0, out, sizeof out);
                if (got >= 0)
                    check_shared(t, key, out, got);
            } else if (what < 18) {
                struct shared_header h = {(uint32_t)(r >> 32), (uint32_t)len};
                if (len < sizeof h)
                    h.len = (uint32_t)(len = sizeof h);
                memcpy(rec, &h, sizeof h);
                fill(rec + sizeof h, len - sizeof h, h.seed);
                uint32_t exptime = what < 12 ? now + 1 : 0;
                kvs_store_set(s, key, strlen(key), hash, exptime, 0, rec, len);
            } else {
                kvs_store_delete(s, key, strlen(key), hash, now, 0);
            }
        }
    }
    if (own_hits == 0)
        stress_fail(t, "(all own keys)", "never found", -1);
    return NULL;
}

static void stress(double scale)
{
    stress_ops = (uint64_t)(1000000 * scale);
    stress_store = kvs_store_new(STRESS_BUDGET, 4096);
    CHECK(stress_store != NULL);
    CHECK(pthread_barrier_init(&stress_start, NULL, THREADS) == 0);
    pthread_t threads[THREADS];
    for (unsigned t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, stress_thread, (void *)(uintptr_t)t) == 0);
    for (unsigned t = 0; t < THREADS; t++)
        CHECK(pthread_join(threads[t], NULL) == 0);
    pthread_barrier_destroy(&stress_start);

    /* Every linked item is counted: find them all (a get removes an expired one). */
    kvs_store_t *s = stress_store;
    unsigned char out[REC_MAX];
    char key[32];
    uint32_t now = stress_clock;
    uint64_t found = 0;
    for (unsigned id = 0; id < THREADS * OWN_KEYS + SHARED_KEYS; id++) {
        if (id < THREADS * OWN_KEYS)
            snprintf(key, sizeof key, "own:%u", id);
        else
            snprintf(key, sizeof key, "shared:%u", id - THREADS * OWN_KEYS);
        found += get_str(s, key, now, out, sizeof out) >= 0;
    }
    kvs_store_stats_t st = stats_of(s);
    printf("stress: %u threads x %llu ops, %llu items, %llu evictions, %llu expired, "
           "%llu set failures\n", THREADS, (unsigned long long)stress_ops,
           (unsigned long long)st.items, (unsigned long long)st.evictions,
           (unsigned long long)st.expired, (unsigned long long)st.set_failures);
    CHECK(st.items == found);
    CHECK(st.bytes <= STRESS_BUDGET);
    CHECK(st.evictions > 0);
    CHECK(st.expired > 0);
    CHECK(st.sets > 0 && st.set_failures < st.sets / 100);
    kvs_store_free(s);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "unit") == 0) {
        test_arguments();
        test_basic();
        test_expiry();
        test_bounded();
        test_too_large();
        test_take();
        test_random();
        printf("ok: %lu checks\n", checks);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "stress") == 0) {
        stress(argc >= 3 ? atof(argv[2]) : 1.0);
        printf("ok\n");
        return 0;
    }
    fprintf(stderr, "usage: %s unit | stress [SCALE]\n", argv[0]);
    return 2;
}
