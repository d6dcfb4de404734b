/* Fuzz target: the Storm executors that take tuples from the network
 * (examples/storm/workers/counter.c, ranker.c and table.c): a counter, an intermediate
 * ranker or the total ranker, given tuples as the data plane hands them over.
 *
 * The workers' storm.h is the fake data plane's (tests/storm/fake/storm.h); this file
 * provides what it declares and what main.c would: inqueue_get serves the input's tuples,
 * outqueue_put checks what the executor sends, and storm_serve calls the executor's emit
 * every EMIT_EVERY tuples (instead of every --emit-ms) so that runs are repeatable.
 *
 * The input: one byte choosing the executor (counter, ranker or total), four bytes of
 * topology (spouts, counters, rankers, top N, each 1-4 or 1-8) and the window (0-3 s),
 * then tuples of 64 bytes (struct storm_tuple, any bytes). Checks: nothing is read past a
 * tuple or an executor's tables; every tuple sent goes to an executor of the next kind,
 * with a NUL-terminated user name, and a ranking never has more than N entries.
 */
#include "fuzz.h"
#include "workers.h"

#define EMIT_EVERY 8

static struct fuzz_input input;
static struct storm_config config;
static struct storm_tuple arrived;
static int rank_run;                /* STORM_RANK tuples since the last STORM_RANK_DONE */

struct storm_tuple *inqueue_get(int worker)
{
    (void)worker;
    if (input.left < sizeof arrived)
        return NULL;
    size_t got;
    memcpy(&arrived, fuzz_bytes(&input, sizeof arrived, &got), sizeof arrived);
    return &arrived;
}

void outqueue_put(struct storm_tuple *t)
{
    FUZZ_CHECK(memchr(t->user, '\0', sizeof t->user) != NULL);
    int total = storm_total_id(&config);
    switch (t->kind) {
    case STORM_COUNT:
        FUZZ_CHECK(t->task >= storm_ranker_id(&config, 0) && t->task < total);
        FUZZ_CHECK(t->user[0] != '\0');
        break;
    case STORM_RANK:
        FUZZ_CHECK(t->task == total && t->count > 0 && t->user[0] != '\0');
        FUZZ_CHECK(++rank_run <= config.top);
        break;
    case STORM_RANK_DONE:
        FUZZ_CHECK(t->task == total);
        rank_run = 0;
        break;
    case STORM_END:
        FUZZ_CHECK(t->task >= storm_ranker_id(&config, 0) && t->task <= total);
        break;
    default:
        FUZZ_CHECK(!"a kind no executor sends");
    }
}

int storm_serve(struct storm_executor *e, void *self,
                int (*handle)(void *self, const struct storm_tuple *t), void (*emit)(void *self))
{
    unsigned handled = 0;
    struct storm_tuple *t;
    while ((t = storm_receive(e)) != NULL) {
        if (handle(self, t))
            return 1;
        if (emit != NULL && ++handled % EMIT_EVERY == 0)
            emit(self);
    }
    return 0;
}

int storm_stopping(const struct storm_executor *e)
{
    (void)e;
    return 0;
}

void storm_finish(void)
{
}

void storm_fail(void)
{
    FUZZ_CHECK(!"an executor failed");
}

void *storm_alloc(size_t size)
{
    void *p = calloc(1, size == 0 ? 1 : size);
    FUZZ_CHECK(p != NULL);
    return p;
}

void *storm_realloc(void *p, size_t size)
{
    void *q = realloc(p, size == 0 ? 1 : size);
    FUZZ_CHECK(q != NULL);
    return q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input = (struct fuzz_input){data, size};
    enum storm_role role = STORM_ROLE_COUNTER + fuzz_u8(&input) % 3;
    config = (struct storm_config){
        .spouts = 1 + fuzz_u8(&input) % 4,
        .counters = 1 + fuzz_u8(&input) % 4,
        .rankers = 1 + fuzz_u8(&input) % 4,
        .top = 1 + fuzz_u8(&input) % 8,
        .window_s = fuzz_u8(&input) % 4,
        .emit_ms = 100,
    };
    rank_run = 0;
    struct storm_executor e = {.role = role, .config = &config};
    switch (role) {
    case STORM_ROLE_COUNTER:
        e.id = storm_counter_id(&config, 0);
        storm_counter(&e);
        break;
    case STORM_ROLE_RANKER:
        e.id = storm_ranker_id(&config, 0);
        storm_ranker(&e);
        break;
    default:
        e.id = storm_total_id(&config);
        storm_total(&e);
        break;
    }
    FUZZ_CHECK(e.in <= size / sizeof arrived);
    return 0;
}
