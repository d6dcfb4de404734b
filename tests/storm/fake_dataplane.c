/* A fake of the Storm data plane (the functions floem generates into storm.h from
 * examples/storm/storm.py), to test the workers without Floem: one process, its queues in
 * memory.
 *
 * STORM_FAKE_IDS lists the global ids of the process's local workers, in --executors order
 * ("3,0,7": worker 0 is executor 3, ...); unset, worker i is executor i, for i below
 * FAKE_WORKERS. A tuple for an executor that is not local is counted as sent to another
 * server and dropped. Each local worker has a FIFO of FAKE_CAPACITY tuples under a mutex;
 * outqueue_put waits while the receiver's is full. With -DSTORM_BYPASS each worker has a
 * second FIFO, read by bypass_get, which takes the tuples from even-numbered senders, so that
 * a worker that does not poll both queues misses tuples. The calls must come in the
 * lifecycle's order (init, run_threads, gets and puts, kill_threads, finalize); one out of
 * order aborts. STORM_FAKE_AGE_S=A makes the tweets of spout 0 A seconds older (created_ns),
 * to test the counters' window. floem_finalize prints on stderr what went through:
 *   fake data plane: put P, got G, left L, remote R
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storm.h"

#ifndef FAKE_WORKERS
#define FAKE_WORKERS 64             /* local workers without STORM_FAKE_IDS */
#endif
#define FAKE_IDS 4096               /* global ids the fake knows */
#ifndef FAKE_CAPACITY
#define FAKE_CAPACITY 512
#endif

enum fake_state { FAKE_NONE, FAKE_INITIALIZED, FAKE_RUNNING, FAKE_KILLED };

struct fake_queue {
    pthread_mutex_t lock;
    pthread_cond_t not_full;
    unsigned head, size;
    uint64_t put, got;
    struct storm_tuple slots[FAKE_CAPACITY];
};

struct fake_worker {
    struct fake_queue in;
#ifdef STORM_BYPASS
    struct fake_queue bypass;
#endif
    struct storm_tuple current;     /* the tuple last taken; only the worker's thread uses it */
};

static struct fake_worker *workers;
static int n_workers;
static int local[FAKE_IDS];         /* by global id: its local worker, or -1 */
static uint64_t remote;             /* tuples for executors of other servers */
static uint64_t age_ns;             /* STORM_FAKE_AGE_S, nanoseconds */
static int state = FAKE_NONE;

static void expect(enum fake_state want, const char *call)
{
    int now = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
    if (now != (int)want) {
        fprintf(stderr, "fake data plane: %s called in state %d, not %d\n", call, now, want);
        abort();
    }
}

static void move_to(enum fake_state from, enum fake_state to, const char *call)
{
    expect(from, call);
    __atomic_store_n(&state, to, __ATOMIC_RELEASE);
}

static void queue_init(struct fake_queue *q)
{
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_full, NULL);
}

static void queue_destroy(struct fake_queue *q)
{
    pthread_cond_destroy(&q->not_full);
    pthread_mutex_destroy(&q->lock);
}

static void queue_put(struct fake_queue *q, const struct storm_tuple *t)
{
    pthread_mutex_lock(&q->lock);
    while (q->size == FAKE_CAPACITY)
        pthread_cond_wait(&q->not_full, &q->lock);
    q->slots[(q->head + q->size) % FAKE_CAPACITY] = *t;
    q->size++;
    q->put++;
    pthread_mutex_unlock(&q->lock);
}

static int queue_get(struct fake_queue *q, struct storm_tuple *t)
{
    pthread_mutex_lock(&q->lock);
    int got = q->size > 0;
    if (got) {
        *t = q->slots[q->head];
        q->head = (q->head + 1) % FAKE_CAPACITY;
        q->size--;
        q->got++;
        pthread_cond_signal(&q->not_full);
    }
    pthread_mutex_unlock(&q->lock);
    return got;
}

static struct fake_worker *worker_of(int worker, const char *call)
{
    expect(FAKE_RUNNING, call);
    if (worker < 0 || worker >= n_workers) {
        fprintf(stderr, "fake data plane: %s: no worker %d\n", call, worker);
        abort();
    }
    return &workers[worker];
}

/* local[] and n_workers from STORM_FAKE_IDS. */
static void map_workers(void)
{
    const char *ids = getenv("STORM_FAKE_IDS");
    for (int g = 0; g < FAKE_IDS; g++)
        local[g] = ids == NULL && g < FAKE_WORKERS ? g : -1;
    n_workers = FAKE_WORKERS;
    if (ids == NULL)
        return;
    n_workers = 0;
    for (char *end; *ids != '\0'; ids = *end == ',' ? end + 1 : end) {
        long g = strtol(ids, &end, 10);
        if (end == ids || (*end != ',' && *end != '\0') || g < 0 || g >= FAKE_IDS
            || local[g] != -1) {
            fprintf(stderr, "fake data plane: bad STORM_FAKE_IDS at '%s'\n", ids);
            abort();
        }
        local[g] = n_workers++;
    }
}

void floem_init(void)
{
    expect(FAKE_NONE, "floem_init");
    map_workers();
    const char *age = getenv("STORM_FAKE_AGE_S");
    age_ns = age == NULL ? 0 : strtoull(age, NULL, 10) * 1000000000u;
    workers = calloc((size_t)n_workers + 1, sizeof *workers);
    if (workers == NULL)
        abort();
    for (int i = 0; i < n_workers; i++) {
        queue_init(&workers[i].in);
#ifdef STORM_BYPASS
        queue_init(&workers[i].bypass);
#endif
    }
    move_to(FAKE_NONE, FAKE_INITIALIZED, "floem_init");
}

void floem_run_threads(void)
{
    move_to(FAKE_INITIALIZED, FAKE_RUNNING, "floem_run_threads");
}

void floem_kill_threads(void)
{
    move_to(FAKE_RUNNING, FAKE_KILLED, "floem_kill_threads");
}

void floem_finalize(void)
{
    move_to(FAKE_KILLED, FAKE_NONE, "floem_finalize");
    uint64_t put = 0, got = 0;
    for (int i = 0; i < n_workers; i++) {
        put += workers[i].in.put;
        got += workers[i].in.got;
        queue_destroy(&workers[i].in);
#ifdef STORM_BYPASS
        put += workers[i].bypass.put;
        got += workers[i].bypass.got;
        queue_destroy(&workers[i].bypass);
#endif
    }
    free(workers);
    workers = NULL;
    fprintf(stderr, "fake data plane: put %llu, got %llu, left %llu, remote %llu\n",
            (unsigned long long)put, (unsigned long long)got, (unsigned long long)(put - got),
            (unsigned long long)__atomic_load_n(&remote, __ATOMIC_RELAXED));
}

struct storm_tuple *inqueue_get(int worker)
{
    struct fake_worker *w = worker_of(worker, "inqueue_get");
    return queue_get(&w->in, &w->current) ? &w->current : NULL;
}

#ifdef STORM_BYPASS
struct storm_tuple *bypass_get(int worker)
{
    struct fake_worker *w = worker_of(worker, "bypass_get");
    return queue_get(&w->bypass, &w->current) ? &w->current : NULL;
}
#endif

void outqueue_put(struct storm_tuple *sent)
{
    expect(FAKE_RUNNING, "outqueue_put");
    struct storm_tuple t = *sent;
    if (t.task < 0 || t.task >= FAKE_IDS) {
        fprintf(stderr, "fake data plane: outqueue_put: no executor %d\n", (int)t.task);
        abort();
    }
    if (t.kind == STORM_TWEET && t.from == 0)
        t.created_ns -= age_ns;
    if (local[t.task] == -1) {
        __atomic_fetch_add(&remote, 1, __ATOMIC_RELAXED);
        return;
    }
    struct fake_worker *w = &workers[local[t.task]];
#ifdef STORM_BYPASS
    if (t.from % 2 == 0) {
        queue_put(&w->bypass, &t);
        return;
    }
#endif
    queue_put(&w->in, &t);
}
