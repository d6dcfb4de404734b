/* The NIC's DMA counters over a window of the run, for the benchmark apps.
 *
 * Linked into every process of the app (floem.depend), called by NIC code only:
 * dma_window_begin() when the measured work starts, dma_window_mark() just before
 * each poll of the host's "done" flag, dma_window_print() when a poll has seen it.
 * The polls before the one that saw "done" (one request, one descriptor and
 * `poll_bytes` read each) are taken out, so the counts are the queue's alone.
 */
#include <stdint.h>
#include <stdio.h>

#include "floem/dma.h"

#include "dma_window.h"

static floem_dma_stats_t window_start, window_end;

void dma_window_begin(void)
{
    floem_dma_stats(&window_start);
}

void dma_window_mark(void)
{
    floem_dma_stats(&window_end);
}

void dma_window_print(uint64_t polls, uint64_t poll_bytes)
{
    fprintf(stderr, "bench: nic dma window: requests %llu, descriptors %llu, "
                    "bytes read %llu, bytes written %llu\n",
            (unsigned long long)(window_end.requests - window_start.requests - polls),
            (unsigned long long)(window_end.descriptors - window_start.descriptors - polls),
            (unsigned long long)(window_end.bytes_read - window_start.bytes_read - polls * poll_bytes),
            (unsigned long long)(window_end.bytes_written - window_start.bytes_written));
}
