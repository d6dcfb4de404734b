/* Default definitions of what fuzz/apps/elements.py declares for its harness: weak, so that
 * the harness that uses a hook (memcached.c, batch.c) replaces it and the others link. A
 * default hook that runs means an element fired where the harness did not expect it. */
#include <stdlib.h>

#include "elements.h"

__attribute__((weak)) struct fuzz_mc_request fuzz_mc;

__attribute__((weak)) void fuzz_batch_item(uint64_t item)
{
    (void)item;
    abort();
}

__attribute__((weak)) void fuzz_direct_item(int item)
{
    (void)item;
    abort();
}
