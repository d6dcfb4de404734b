/* Tests of the split-pointer design's item log (examples/kvs/itemlog.h).
 *
 * Usage: itemlog_test unit       the log's arithmetic and the item format, single-threaded
 *        itemlog_test stress     4 threads reserving at once: no two items overlap
 *        itemlog_test race       writers going round a small log while readers read items
 *                                from it: what the checks let through is never torn
 * Build: cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread -Iexamples/kvs -Ilibrary/c
 *        -Iruntime/tests tests/kvs/itemlog_test.c -o itemlog_test
 * Prints "ok: N checks" (unit), "ok" (stress) or counts and "ok" (race); any failed check
 * names itself and aborts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "itemlog.h"

#include "check.h"

#include <pthread.h>
#include <stdlib.h>

#define LOG 4096u

/* An item of key `key` and a record of `reclen` bytes made at `pos` into `item`. */
static uint32_t make(uint8_t *item, uint64_t pos, const char *key, uint32_t reclen)
{
    uint16_t keylen = (uint16_t)strlen(key);
    memset(kvs_item_record(item, keylen), 0x5a, reclen);
    return kvs_item_make(item, pos, (const uint8_t *)key, keylen, reclen);
}

static void test_format(void)
{
    static uint8_t item[KVS_ITEM_MAX];
    CHECK(KVS_ITEM_MAX % 8 == 0 && KVS_ITEM_MAX >= KVS_ITEM_HEADER + KVS_KEY_MAX
                                                   + KVS_RECORD_HEADER + KVS_VALUE_LIMIT);
    CHECK(kvs_item_size(1, 0) == 24 && kvs_item_size(3, 5) == 24 && kvs_item_size(3, 6) == 32);
    uint64_t pos = (UINT64_C(7) << 32) + 1234;
    uint32_t len = make(item, pos, "key", 20);
    CHECK(len == kvs_item_size(3, 20));
    /* Big-endian header: the same bytes on every device. */
    static const uint8_t header[KVS_ITEM_HEADER] = {0, 0, 0, 7, 0, 0, 0x04, 0xd2,
                                                    0, 0, 0, 20, 0, 3, 0, 0};
    CHECK(memcmp(item, header, sizeof header) == 0);
    CHECK(memcmp(item + KVS_ITEM_HEADER, "key", 3) == 0);
    uint32_t reclen = 0;
    uint8_t *rec = kvs_item_find(item, len, pos, (const uint8_t *)"key", 3, &reclen);
    CHECK(rec == kvs_item_record(item, 3) && reclen == 20 && rec[0] == 0x5a && rec[19] == 0x5a);
    /* Not the item asked for: another position (an older or newer version), another key,
     * another length, a length too short for a header. */
    CHECK(kvs_item_find(item, len, pos + LOG, (const uint8_t *)"key", 3, &reclen) == NULL);
    CHECK(kvs_item_find(item, len, pos, (const uint8_t *)"kez", 3, &reclen) == NULL);
    CHECK(kvs_item_find(item, len, pos, (const uint8_t *)"ke", 2, &reclen) == NULL);
    CHECK(kvs_item_find(item, len + 8, pos, (const uint8_t *)"key", 3, &reclen) == NULL);
    CHECK(kvs_item_find(item, KVS_ITEM_HEADER - 1, pos, (const uint8_t *)"key", 3, &reclen)
          == NULL);
}

static void test_log(void)
{
    uint64_t head = 0;
    CHECK(kvs_log_reserve(&head, LOG, 1000) == 0 && head == 1000);
    CHECK(kvs_log_reserve(&head, LOG, 3000) == 1000 && head == 4000);
    /* 200 bytes do not fit in the lap's last 96: the item starts the next lap. */
    CHECK(kvs_log_reserve(&head, LOG, 200) == LOG && head == LOG + 200);
    CHECK(kvs_log_reserve(&head, LOG, LOG - 200) == LOG + 200 && head == 2 * LOG);
    CHECK(kvs_log_reserve(&head, LOG, LOG) == 2 * LOG && head == 3 * LOG);

    /* Intact while nothing was reserved over it on a later lap. */
    head = 1000;
    CHECK(kvs_log_intact(&head, LOG, 0));
    head = LOG;
    CHECK(kvs_log_intact(&head, LOG, 0));
    head = LOG + 8;
    CHECK(!kvs_log_intact(&head, LOG, 0));
    CHECK(kvs_log_intact(&head, LOG, 8));

    /* The host's bound: certainly overwritten only what the NIC finds overwritten. */
    uint64_t newest = 0;
    kvs_log_saw(&newest, 1000);
    kvs_log_saw(&newest, 500);
    CHECK(newest == 1000);
    CHECK(!kvs_log_overwritten(&newest, LOG, 0));
    kvs_log_saw(&newest, LOG + 8);
    CHECK(newest == LOG + 8);
    CHECK(kvs_log_overwritten(&newest, LOG, 0) && !kvs_log_overwritten(&newest, LOG, 8));
    for (uint64_t pos = 0; pos <= newest; pos += 8) {
        head = newest + pos % 24;                   /* the NIC's head is never behind */
        CHECK(!kvs_log_overwritten(&newest, LOG, pos) || !kvs_log_intact(&head, LOG, pos));
    }
}

#define THREADS 4
#define RESERVES 100000
#define STRESS_LOG 65536u

static uint64_t stress_head;
static uint64_t stress_pos[THREADS][RESERVES];
static uint32_t stress_len[THREADS][RESERVES];

static void *reserve_many(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    uint64_t x = t + 1;
    for (unsigned i = 0; i < RESERVES; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        uint32_t len = kvs_item_size((uint16_t)(1 + (x >> 40) % KVS_KEY_MAX), (x >> 20) % 2000);
        stress_len[t][i] = len;
        stress_pos[t][i] = kvs_log_reserve(&stress_head, STRESS_LOG, len);
    }
    return NULL;
}

static int by_pos(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Threads reserving at once get disjoint items, none straddling the log's end. */
static void stress(void)
{
    pthread_t threads[THREADS];
    for (unsigned t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, reserve_many, (void *)(uintptr_t)t) == 0);
    for (unsigned t = 0; t < THREADS; t++)
        CHECK(pthread_join(threads[t], NULL) == 0);
    static uint64_t all[THREADS * RESERVES][2];
    size_t n = 0;
    for (unsigned t = 0; t < THREADS; t++)
        for (unsigned i = 0; i < RESERVES; i++) {
            all[n][0] = stress_pos[t][i];
            all[n][1] = stress_len[t][i];
            CHECK(stress_pos[t][i] % STRESS_LOG + stress_len[t][i] <= STRESS_LOG);
            n++;
        }
    qsort(all, n, sizeof all[0], by_pos);
    for (size_t i = 1; i < n; i++)
        CHECK(all[i - 1][0] + all[i - 1][1] <= all[i][0]);
    CHECK(all[n - 1][0] + all[n - 1][1] == stress_head);
}

#define RACE_LOG 4096u
#define RACE_WRITES 200000
#define RACE_READS 400000
#define SLOTS 8

/* The log in host memory, as the DMA engine moves it: 32-bit words, release stores and
 * acquire loads; a write stores in either order, as a torn DMA write may. */
static uint32_t race_log[RACE_LOG / 4];
static uint64_t race_head;
static uint32_t race_writing;
static uint64_t race_published[SLOTS];      /* position << 16 | key number: items to read */
static unsigned long race_served, race_caught;

static uint8_t race_byte(uint64_t pos, uint32_t j)
{
    return (uint8_t)((pos * 2654435761u + j * 40503u) >> 13);
}

static void *race_writer(void *arg)
{
    unsigned w = (unsigned)(uintptr_t)arg;
    static _Thread_local uint8_t item[512] __attribute__((aligned(8)));
    for (unsigned i = 0; i < RACE_WRITES; i++) {
        uint16_t k = (uint16_t)(i % 1000 + 1000 * w);
        char key[8];
        int keylen = snprintf(key, sizeof key, "k%u", (unsigned)k);
        uint32_t reclen = 8 + (i * 37u) % 300;
        uint32_t len = kvs_item_size((uint16_t)keylen, reclen);
        kvs_log_lock(&race_writing);
        uint64_t pos = kvs_log_reserve(&race_head, RACE_LOG, len);
        uint8_t *rec = kvs_item_record(item, (uint16_t)keylen);
        for (uint32_t j = 0; j < reclen; j++)
            rec[j] = race_byte(pos, j);
        kvs_item_make(item, pos, (const uint8_t *)key, (uint16_t)keylen, reclen);
        uint32_t *words = &race_log[pos % RACE_LOG / 4];
        uint32_t n = len / 4, word;
        for (uint32_t x = 0; x < n; x++) {
            uint32_t at = i % 2 ? x : n - 1 - x;
            memcpy(&word, item + 4 * at, 4);
            __atomic_store_n(&words[at], word, __ATOMIC_RELEASE);
        }
        kvs_log_unlock(&race_writing);
        __atomic_store_n(&race_published[i % SLOTS], pos << 16 | k, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void *race_reader(void *arg)
{
    unsigned r = (unsigned)(uintptr_t)arg;
    static _Thread_local uint8_t item[512] __attribute__((aligned(8)));
    for (unsigned i = 0; i < RACE_READS; i++) {
        uint64_t published = __atomic_load_n(&race_published[(i + r) % SLOTS], __ATOMIC_ACQUIRE);
        if (published == 0)
            continue;
        uint64_t pos = published >> 16;
        char key[8];
        int keylen = snprintf(key, sizeof key, "k%u", (unsigned)(published & 0xffff));
        uint32_t len = sizeof item;
        if (pos % RACE_LOG + len > RACE_LOG)
            len = (uint32_t)(RACE_LOG - pos % RACE_LOG);
        const uint32_t *words = &race_log[pos % RACE_LOG / 4];
        for (uint32_t x = 0; x < len / 4; x++) {
            uint32_t word = __atomic_load_n(&words[x], __ATOMIC_ACQUIRE);
            memcpy(item + 4 * x, &word, 4);
        }
        uint32_t reclen = 0;
        uint32_t size = kvs_item_size((uint16_t)keylen, floem_get32(item + 8));
        uint8_t *rec = size <= len ? kvs_item_find(item, size, pos, (const uint8_t *)key,
                                                   (uint16_t)keylen, &reclen) : NULL;
        if (rec == NULL)
            continue;
        bool whole = true;
        for (uint32_t j = 0; j < reclen; j++)
            whole = whole && rec[j] == race_byte(pos, j);
        if (kvs_log_intact(&race_head, RACE_LOG, pos)) {
            CHECK(whole);
            __atomic_fetch_add(&race_served, 1, __ATOMIC_RELAXED);
        } else if (!whole) {
            __atomic_fetch_add(&race_caught, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

/* Two writers and two readers: an item the checks let through is the item whole. */
static void race(void)
{
    pthread_t threads[4];
    for (unsigned t = 0; t < 4; t++)
        CHECK(pthread_create(&threads[t], NULL, t < 2 ? race_writer : race_reader,
                             (void *)(uintptr_t)(t % 2)) == 0);
    for (unsigned t = 0; t < 4; t++)
        CHECK(pthread_join(threads[t], NULL) == 0);
    printf("served %lu, torn but caught by the head %lu\n", race_served, race_caught);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "unit") == 0) {
        test_format();
        test_log();
        printf("ok: %lu checks\n", checks);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "stress") == 0) {
        stress();
        printf("ok\n");
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "race") == 0) {
        race();
        printf("ok\n");
        return 0;
    }
    fprintf(stderr, "usage: %s unit | stress | race\n", argv[0]);
    return 2;
}
