/* This machine's figures for the performance model's "this" platform (calibrate_this.py).
 *
 *   calibrate work N       N packets of flow classification on frames and a table in the
 *                          caches (check, hash, look up, count, stamp): prints the
 *                          nanoseconds it took. The same program under callgrind gives
 *                          its instructions: with the clock, cycles per instruction.
 *   calibrate dram         a dependent load per step through 256 MiB in a random cycle:
 *                          nanoseconds per load (the last-level miss)
 *   calibrate cache        the same through 128 KiB: a first-level miss that the next
 *                          level serves
 *   calibrate atomic       an atomic add on a line the core holds: nanoseconds each
 *   calibrate transfer     two threads on CPUs 0 and 1 taking turns on one line: the
 *                          nanoseconds one turn takes (a line moving between cores)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* --- packet work, in the caches ------------------------------------------------- */

enum { FRAMES = 256, FRAME = 64, KEY = 13, BUCKETS = 4096, FLOWS = 8192 };

struct flow {
    struct flow *next;
    uint8_t key[KEY];
    uint64_t packets, bytes;
};

/* Bob Jenkins's one-at-a-time hash: a serial chain, as packet hashing is. */
static uint32_t hash(const uint8_t *key, size_t n)
{
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++) {
        h += key[i];
        h += h << 10;
        h ^= h >> 6;
    }
    h += h << 3;
    h ^= h >> 11;
    return h + (h << 15);
}

static int same(const uint8_t *a, const uint8_t *b)
{
    for (int i = 0; i < KEY; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

/* `rounds` packets of flow classification: check a header, hash the flow's key, find its
 * entry in a chained table, count, stamp the count into the frame. */
static uint64_t work(uint64_t rounds)
{
    static uint8_t frames[FRAMES][FRAME];
    static struct flow flows[FLOWS], *buckets[BUCKETS];
    uint64_t seed = 88172645463325252ull, result = 0;
    for (int f = 0; f < FLOWS; f++) {
        for (int i = 0; i < KEY; i++)
            flows[f].key[i] = (uint8_t)next_random(&seed);
        struct flow **b = &buckets[hash(flows[f].key, KEY) % BUCKETS];
        flows[f].next = *b;
        *b = &flows[f];
    }
    for (int i = 0; i < FRAMES; i++) {
        for (int j = 0; j < FRAME; j++)
            frames[i][j] = (uint8_t)next_random(&seed);
        frames[i][0] = (uint8_t)(next_random(&seed) % 16 ? 0x45 : 0x60);
        memcpy(&frames[i][8], flows[next_random(&seed) % FLOWS].key, KEY);
    }
    for (uint64_t r = 0; r < rounds; r++) {
        uint8_t *frame = frames[r % FRAMES];
        if (frame[0] != 0x45) {                 /* not IPv4 without options: dropped */
            result++;
            continue;
        }
        struct flow *f = buckets[hash(&frame[8], KEY) % BUCKETS];
        while (f != NULL && !same(f->key, &frame[8]))
            f = f->next;
        if (f == NULL)
            continue;
        f->packets++;
        f->bytes += FRAME;
        memcpy(&frame[24], &f->packets, sizeof f->packets);
        result += f->bytes;
    }
    return result;
}

/* --- memory ------------------------------------------------------------------------ */

/* Nanoseconds per dependent load through `bytes` of memory in one random cycle of its
 * 64-byte lines. */
static double chase(size_t bytes, int steps)
{
    size_t lines = bytes / 64;
    size_t *next = aligned_alloc(64, lines * 64);
    uint32_t *order = malloc(sizeof *order * lines);
    if (next == NULL || order == NULL)
        return -1;
    uint64_t seed = 2463534242ull;
    for (uint32_t i = 0; i < lines; i++)
        order[i] = i;
    for (uint32_t i = (uint32_t)lines - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(next_random(&seed) % (i + 1));
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < lines; i++)     /* one cycle through every line, in random order */
        next[(size_t)order[i] * 8] = (size_t)order[(i + 1) % lines] * 8;
    free(order);
    size_t at = 0;
    for (int i = 0; i < steps / 10; i++)
        at = next[at];
    uint64_t start = now_ns();
    for (int i = 0; i < steps; i++)
        at = next[at];
    double ns = (double)(now_ns() - start) / steps;
    if (at == (size_t)-1)
        puts("");
    free(next);
    return ns;
}

static double atomic(void)
{
    enum { OPS = 50000000 };
    static uint64_t counter;
    uint64_t start = now_ns();
    for (int i = 0; i < OPS; i++)
        __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
    return (double)(now_ns() - start) / OPS;
}

enum { TURNS = 2000000 };
static _Alignas(64) uint64_t turn;

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *other(void *arg)
{
    (void)arg;
    pin(1);
    for (uint64_t t = 1; t < 2 * TURNS; t += 2) {
        while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != t)
            ;
        __atomic_fetch_add(&turn, 1, __ATOMIC_ACQ_REL);
    }
    return NULL;
}

static double transfer(void)
{
    pthread_t thread;
    pin(0);
    if (pthread_create(&thread, NULL, other, NULL) != 0)
        return -1;
    uint64_t start = now_ns();
    for (uint64_t t = 0; t < 2 * TURNS; t += 2) {
        while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != t)
            ;
        __atomic_fetch_add(&turn, 1, __ATOMIC_ACQ_REL);
    }
    while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 2 * TURNS)
        ;
    double ns = (double)(now_ns() - start) / (2 * TURNS);
    pthread_join(thread, NULL);
    return ns;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "work") == 0) {
        uint64_t start = now_ns();
        uint64_t result = work(strtoull(argv[2], NULL, 10));
        printf("%llu ns (%llu)\n", (unsigned long long)(now_ns() - start),
               (unsigned long long)result);
    } else if (argc == 2 && strcmp(argv[1], "dram") == 0) {
        printf("%.2f ns\n", chase(256u << 20, 20000000));
    } else if (argc == 2 && strcmp(argv[1], "cache") == 0) {
        printf("%.2f ns\n", chase(128u << 10, 50000000));
    } else if (argc == 2 && strcmp(argv[1], "atomic") == 0) {
        printf("%.2f ns\n", atomic());
    } else if (argc == 2 && strcmp(argv[1], "transfer") == 0) {
        printf("%.2f ns\n", transfer());
    } else {
        fprintf(stderr, "usage: calibrate work N | dram | cache | atomic | transfer\n");
        return 2;
    }
    return 0;
}
