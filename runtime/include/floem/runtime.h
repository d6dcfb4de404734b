/* Floem C runtime: segment threads, lifecycle and host memory.
 *
 * Generated programs include this header. Each segment thread runs a loop
 * `while (floem_running()) source(...)`; floem_kill_threads() clears the
 * running flag and joins every thread.
 */
#ifndef FLOEM_RUNTIME_H
#define FLOEM_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Index of the segment thread running the caller (0 on the main thread). */
extern _Thread_local int floem_core_id;
/* Sequence number of the packet the calling thread is processing (joins use it). */
extern _Thread_local uint64_t floem_packet_seq;
/* Nonzero while segment threads should keep running. */
extern volatile int floem_run_flag;

static inline bool floem_running(void)
{
    return __atomic_load_n(&floem_run_flag, __ATOMIC_RELAXED) != 0;
}

/* Start a thread running fn(index) for segment `segment`; aborts with a message on failure. */
void floem_thread_spawn(const char *segment, void *(*fn)(void *), int index);
/* Ask every segment thread to stop and wait for all of them. */
void floem_threads_stop(void);
/* Block SIGINT and SIGTERM in the caller (and threads it starts later). */
void floem_block_stop_signals(void);
/* Wait for SIGINT or SIGTERM (blocked beforehand with floem_block_stop_signals). */
void floem_wait_for_stop_signal(void);
/* Zeroed, cache-line-aligned host memory; aborts with a message when out of memory. */
void *floem_alloc(size_t size);

#endif
