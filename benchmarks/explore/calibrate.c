/* This machine's figures for the performance model's "this" platform (calibrate_this.py).
 *
 *   calibrate work N       N rounds of integer work in the caches, CoreMark's kind (a
 *                          linked list, small matrices, a state machine, a CRC): prints
 *                          the nanoseconds it took. The same program under callgrind
 *                          gives its instructions: with the clock, cycles per instruction.
 *   calibrate chase BYTES  a dependent load per step through BYTES of memory in a random
 *                          cycle: nanoseconds per load (through 256 MiB the last-level
 *                          miss; through a size a level holds and the one above it does
 *                          not, that level's hit)
 *   calibrate atomic       an atomic add on a line the core holds: nanoseconds each
 *   calibrate transfer     two threads on CPUs 0 and 1 taking turns on one line: the
 *                          nanoseconds one turn takes (a line moving between cores)
 *   calibrate copy-atomics BYTES ATOMICS
 *                          a round copies BYTES into the next of 8,192 buffers of 2 KiB
 *                          (16 MiB, as a port's pool of frames) and then makes ATOMICS
 *                          atomic adds, each on a line of its own: nanoseconds a round
 *                          (not a figure of the model: against the copy and the atomics
 *                          apart it shows what an atomic after a frame's copy costs more)
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

/* --- integer work, in the caches --------------------------------------------------- */

/* CoreMark's kind of work, written here: each round reverses and searches a linked list,
 * multiplies small integer matrices, runs a state machine over a string of numbers, and
 * folds everything into a CRC-16; all of it fits in the first-level caches, so its cycles
 * per instruction are the core's on integer code, as CoreMark's published scores give
 * them for the other platforms. */
enum { NODES = 64, N = 8, TEXT = 96 };

struct node {
    struct node *next;
    uint16_t key, value;
};

static uint16_t crc16(uint16_t crc, uint16_t data)
{
    for (int i = 0; i < 16; i++) {
        int carry = (crc ^ (data >> i)) & 1;
        crc >>= 1;
        if (carry)
            crc ^= 0xa001;
    }
    return crc;
}

/* Reverse the list and fold in the value of every key below `bound`: a pointer chase with
 * branches. */
static uint16_t list_round(struct node **head, uint16_t bound, uint16_t crc)
{
    struct node *reversed = NULL, *n = *head;
    while (n != NULL) {
        struct node *next = n->next;
        n->next = reversed;
        reversed = n;
        n = next;
    }
    *head = reversed;
    for (n = reversed; n != NULL; n = n->next)
        if (n->key < bound)
            crc = crc16(crc, n->value);
    return crc;
}

static uint16_t matrix_round(int16_t a[N][N], int16_t b[N][N], int32_t c[N][N], uint16_t crc)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            int32_t sum = 0;
            for (int k = 0; k < N; k++)
                sum += a[i][k] * b[k][j];
            c[i][j] = sum;
        }
    for (int i = 0; i < N; i++)
        crc = crc16(crc, (uint16_t)(c[i][i] ^ c[i][N - 1 - i]));
    return crc;
}

/* Classify the comma-separated words of `text` as integers, decimals, exponents or
 * invalid. */
static uint16_t state_round(const char *text, uint16_t crc)
{
    enum { START, INT, DOT, FRACTION, EXP, EXP_DIGIT, INVALID } state = START;
    uint16_t counts[INVALID + 1] = {0};
    for (const char *c = text;; c++) {
        if (*c == ',' || *c == '\0') {
            counts[state]++;
            state = START;
            if (*c == '\0')
                break;
            continue;
        }
        int digit = *c >= '0' && *c <= '9';
        switch (state) {
        case START: state = digit || *c == '-' ? INT : INVALID; break;
        case INT: state = digit ? INT : *c == '.' ? DOT : *c == 'e' ? EXP : INVALID; break;
        case DOT: case FRACTION: state = digit ? FRACTION : *c == 'e' ? EXP : INVALID; break;
        case EXP: case EXP_DIGIT: state = digit ? EXP_DIGIT : INVALID; break;
        case INVALID: break;
        }
    }
    for (int i = 0; i <= INVALID; i++)
        crc = crc16(crc, counts[i]);
    return crc;
}

static uint64_t work(uint64_t rounds)
{
    static struct node nodes[NODES];
    static int16_t a[N][N], b[N][N];
    static int32_t c[N][N];
    static char text[TEXT + 1];
    static const char *const words[] = {"5012", "1.23", "-874", "2e7", "x.9", "0.1e3",
                                        "77", "9-1"};
    uint64_t seed = 88172645463325252ull;
    struct node *head = NULL;
    for (int i = 0; i < NODES; i++) {
        nodes[i] = (struct node){head, (uint16_t)next_random(&seed),
                                 (uint16_t)next_random(&seed)};
        head = &nodes[i];
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            a[i][j] = (int16_t)(next_random(&seed) % 256);
            b[i][j] = (int16_t)(next_random(&seed) % 256);
        }
    size_t used = 0;
    while (used + 8 < TEXT) {
        const char *w = words[next_random(&seed) % 8];
        used += (size_t)snprintf(text + used, TEXT + 1 - used, "%s,", w);
    }
    text[used - 1] = '\0';
    uint16_t crc = 0;
    for (uint64_t r = 0; r < rounds; r++) {
        crc = list_round(&head, (uint16_t)(crc | 0x8000), crc);
        a[r % N][(r / N) % N] = (int16_t)crc;
        crc = matrix_round(a, b, c, crc);
        crc = state_round(text, crc);
    }
    return crc;
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

static double copy_atomics(size_t bytes, int atomics)
{
    enum { ROUNDS = 2000000, BUFFERS = 8192, BUFFER = 2048, LINES = 16 };
    static _Alignas(64) uint64_t lines[LINES][8];
    static char source[BUFFER];
    if (bytes > BUFFER || atomics < 0 || atomics > LINES)
        return -1;
    char *pool = aligned_alloc(64, (size_t)BUFFERS * BUFFER);
    if (pool == NULL)
        return -1;
    memset(pool, 1, (size_t)BUFFERS * BUFFER);
    memset(source, 2, sizeof source);
    uint64_t start = now_ns();
    for (int r = 0; r < ROUNDS; r++) {
        memcpy(pool + (size_t)(r % BUFFERS) * BUFFER, source, bytes);
        for (int a = 0; a < atomics; a++)
            __atomic_fetch_add(&lines[a][0], 1, __ATOMIC_SEQ_CST);
        __asm__ volatile("" ::: "memory");      /* each round's copy is made */
    }
    double ns = (double)(now_ns() - start) / ROUNDS;
    free(pool);
    return ns;
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
    } else if (argc == 3 && strcmp(argv[1], "chase") == 0) {
        size_t bytes = strtoull(argv[2], NULL, 10);
        printf("%.2f ns\n", chase(bytes, bytes > (64u << 20) ? 20000000 : 50000000));
    } else if (argc == 2 && strcmp(argv[1], "atomic") == 0) {
        printf("%.2f ns\n", atomic());
    } else if (argc == 2 && strcmp(argv[1], "transfer") == 0) {
        printf("%.2f ns\n", transfer());
    } else if (argc == 4 && strcmp(argv[1], "copy-atomics") == 0) {
        printf("%.2f ns\n", copy_atomics(strtoull(argv[2], NULL, 10), atoi(argv[3])));
    } else {
        fprintf(stderr, "usage: calibrate work N | chase BYTES | atomic | transfer | "
                "copy-atomics BYTES ATOMICS\n");
        return 2;
    }
    return 0;
}
