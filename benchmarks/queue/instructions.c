/* Instructions per entry of the Floem host queue's fast path, one thread, for callgrind.
 *
 * Usage: instructions BURST [TRACK]   (run by instructions.sh under valgrind)
 * Moves ENTRIES (1,000,000) entries through a 256-entry queue of 64-byte entries: BURST
 * reserve/copy/commit calls, then BURST acquire/copy/release calls, single producer and
 * single consumer, copying 56 bytes each way as queue_bench does. TRACK 1 turns on release
 * tracking first, as the NIC's sync layer does for a queue it produces into.
 */
#include "floem/queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ENTRIES
#define ENTRIES 1000000        /* instructions.sh --short builds it with fewer */
#endif
#define SIZE 256
#define PAYLOAD 56

/* The release call of the revision compiled (see floem_side.c). */
#ifdef FLOEM_QUEUE_COUNTED
#define RELEASE(q, p) floem_deq_release(q, false, p)
#else
#define RELEASE(q, p) floem_deq_release(q, p)
#endif

int main(int argc, char **argv)
{
    int burst = argc > 1 ? atoi(argv[1]) : 1;
    if (burst < 1 || burst > SIZE) {
        fprintf(stderr, "usage: %s BURST (1..%d) [TRACK]\n", argv[0], SIZE);
        return 2;
    }
    size_t bytes = floem_queue_bytes(SIZE, 64);
    floem_queue_t *q = aligned_alloc(64, bytes);
    if (q == NULL)
        return 1;
    memset(q, 0, bytes);
    floem_queue_init(q, SIZE, 64);
    if (argc > 2 && atoi(argv[2]) != 0)
        q->track_releases = 1;
    unsigned char buf[PAYLOAD] = {0};
    unsigned long sum = 0;
    for (int done = 0; done + burst <= ENTRIES; done += burst) {
        for (int k = 0; k < burst; k++) {
            void *p = floem_enq_reserve(q, false);
            if (p == NULL)
                abort();
            buf[0] = (unsigned char)k;
            memcpy(p, buf, PAYLOAD);
            floem_enq_commit(q, p, 0, PAYLOAD);
        }
        for (int k = 0; k < burst; k++) {
            void *p = floem_deq_acquire(q, false, NULL);
            if (p == NULL)
                abort();
            memcpy(buf, p, PAYLOAD);
            sum += buf[0];
            RELEASE(q, p);
        }
    }
    printf("%lu\n", sum);
    free(q);
    return 0;
}
