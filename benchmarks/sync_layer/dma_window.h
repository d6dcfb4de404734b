/* The NIC's DMA counters over a window of the run (dma_window.c). */
#ifndef BENCH_DMA_WINDOW_H
#define BENCH_DMA_WINDOW_H
#include <stdint.h>
void dma_window_begin(void);
void dma_window_mark(void);
void dma_window_print(uint64_t polls, uint64_t poll_bytes);
#endif
