/* Fuzz target: Batcher and Debatcher (library/batch.py), whose C is the elements' bodies:
 * fuzz/apps/elements.py compiles them into batch_push (Batcher into a queue whose entries
 * carry the batch as a variable-size field), batch_pull (one entry, split by the
 * Debatcher) and batch_direct (Batcher straight into Debatcher, values on ports).
 *
 * The input is a list of commands, each a byte then its arguments:
 *   0  push an item (2 bytes)          1  pull from instance -1, 0 or 1 (1 byte)
 *   2  an item to batch_direct (2 bytes)
 * A model says what must come out: the items of each whole batch, in order, once, from
 * instance 0 only (the queue has one); the direct path's items every third call. At most
 * MAX_QUEUED batches wait in the queue (it has room for more), so nothing is dropped.
 * Each input starts from an empty queue and empty Batchers: the harness completes the
 * batches the previous input left open and drains the queue first.
 */
#include "elements.h"
#include "fuzz.h"
#include "floem_app.h"

#define BATCH 5                     /* fuzz/apps/elements.py */
#define DIRECT_BATCH 3
#define MAX_QUEUED 4

static uint64_t queued[MAX_QUEUED * BATCH];     /* items of the batches in the queue */
static unsigned n_queued;                       /* batches in it */
static uint64_t pending[BATCH];                 /* items in the Batcher's open batch */
static unsigned n_pending;
static unsigned out_at;                         /* items of the head batch pulled so far */
static uint64_t next_item = 1;

static int direct_pending[DIRECT_BATCH];
static unsigned n_direct, direct_at;

void fuzz_batch_item(uint64_t item)
{
    FUZZ_CHECK(n_queued > 0 && out_at < BATCH);
    FUZZ_CHECK(item == queued[out_at++]);
}

void fuzz_direct_item(int item)
{
    FUZZ_CHECK(n_direct == DIRECT_BATCH && direct_at < DIRECT_BATCH);
    FUZZ_CHECK(item == direct_pending[direct_at++]);
}

static void pull(int qid)
{
    out_at = 0;
    batch_pull(qid);
    if (qid != 0 || n_queued == 0) {
        FUZZ_CHECK(out_at == 0);
        return;
    }
    FUZZ_CHECK(out_at == BATCH);
    n_queued--;
    memmove(queued, queued + BATCH, (size_t)n_queued * BATCH * sizeof queued[0]);
}

static void push(uint64_t item)
{
    if (n_pending == BATCH - 1 && n_queued == MAX_QUEUED)
        pull(0);                    /* make room for the batch this item completes */
    pending[n_pending++] = item;
    if (n_pending == BATCH) {
        memcpy(queued + (size_t)n_queued * BATCH, pending, sizeof pending);
        n_queued++;
        n_pending = 0;
    }
    batch_push(item);
}

static void direct(int item)
{
    if (n_direct == DIRECT_BATCH)
        n_direct = 0;
    direct_pending[n_direct++] = item;
    direct_at = 0;
    batch_direct(item);
    FUZZ_CHECK(direct_at == (n_direct == DIRECT_BATCH ? DIRECT_BATCH : 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    while (n_pending != 0)
        push(next_item++);
    while (n_queued != 0)
        pull(0);
    while (n_direct != 0 && n_direct != DIRECT_BATCH)
        direct(0);
    n_direct = 0;
    struct fuzz_input in = {data, size};
    while (in.left > 0) {
        switch (fuzz_u8(&in) % 3) {
        case 0:
            push(next_item++ << 16 | fuzz_u16(&in));
            break;
        case 1:
            pull(fuzz_u8(&in) % 3 - 1);
            break;
        default:
            direct((int16_t)fuzz_u16(&in));
            break;
        }
    }
    return 0;
}
