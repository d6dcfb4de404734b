/* What the NIC performance model counts: instructions on packets, serial work, engine calls.
 *
 * Built with FLOEM_COUNT_INSTRUCTIONS and run under `valgrind --tool=callgrind
 * --collect-atstart=no`, a program has callgrind collect exactly the instructions its
 * segment threads execute on packets (see floem/runtime.h); otherwise nothing here
 * toggles anything, and the lock and engine calls only keep their counters.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/runtime.h"

#include <stdlib.h>
#include <string.h>

_Thread_local uint64_t floem_thread_packets;
_Thread_local uint64_t floem_thread_received, floem_thread_sent, floem_thread_dma_waits,
    floem_thread_dma_bytes, floem_thread_engine_calls, floem_thread_engine_bytes;

#ifdef FLOEM_COUNT_INSTRUCTIONS
#include <valgrind/callgrind.h>

/* Per thread: in a packet turn, locks held, pauses open, and whether callgrind collects. */
static _Thread_local struct {
    bool in_turn, collecting;
    int locks_held, paused;
} self;

/* 1: count only the work done holding a lock (FLOEM_COUNT=serial); read once. */
static int serial_mode = -1;

static bool serial(void)
{
    if (__atomic_load_n(&serial_mode, __ATOMIC_RELAXED) < 0) {
        const char *mode = getenv("FLOEM_COUNT");
        __atomic_store_n(&serial_mode, mode != NULL && strcmp(mode, "serial") == 0,
                         __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&serial_mode, __ATOMIC_RELAXED) == 1;
}

/* Make callgrind's collection match what this thread is doing now. */
static void update(void)
{
    bool counted = self.paused == 0 && (serial() ? self.locks_held > 0 : self.in_turn);
    if (counted != self.collecting) {
        self.collecting = counted;
        CALLGRIND_TOGGLE_COLLECT;
    }
}

void floem_count_packet(void)
{
    if (!self.in_turn) {
        self.in_turn = true;
        update();
    }
}

void floem_count_turn_end(void)
{
    if (self.in_turn) {
        self.in_turn = false;
        update();
    }
}

bool floem_count_call(bool takes)
{
    if (takes) {
        floem_count_turn_end();
        return false;
    }
    return !self.in_turn;
}

void floem_count_return(bool end_turn)
{
    if (end_turn)
        floem_count_turn_end();
}

void floem_count_pause(void)
{
    if (self.paused++ == 0)
        update();
}

void floem_count_resume(void)
{
    if (--self.paused == 0)
        update();
}

/* The calling thread takes (+1) or drops (-1) a lock. */
static void held(int change)
{
    self.locks_held += change;
    if (self.locks_held == (change > 0 ? 1 : 0))
        update();
}
#else
static void held(int change)
{
    (void)change;
}
#endif

static uint64_t lock_acquisitions;

void floem_lock(int *lock)
{
    if (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) {
        floem_count_pause();                    /* spinning is waiting, not work */
        do {
            while (__atomic_load_n(lock, __ATOMIC_RELAXED))
                floem_cpu_relax();
        } while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE));
        floem_count_resume();
    }
    __atomic_fetch_add(&lock_acquisitions, 1, __ATOMIC_RELAXED);
    held(+1);
}

void floem_unlock(int *lock)
{
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
    held(-1);
}

static const char *const engine_names[FLOEM_ENGINES] = {"crypto"};
static uint64_t engine_calls[FLOEM_ENGINES], engine_bytes[FLOEM_ENGINES];

void floem_engine_begin(void)
{
    floem_count_pause();
}

void floem_engine_end(int engine, size_t bytes)
{
    floem_count_resume();
    if (engine < 0 || engine >= FLOEM_ENGINES) {
        fprintf(stderr, "floem: floem_engine_end: no engine %d (0 to %d)\n", engine,
                FLOEM_ENGINES - 1);
        abort();
    }
    __atomic_fetch_add(&engine_calls[engine], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&engine_bytes[engine], (uint64_t)bytes, __ATOMIC_RELAXED);
    floem_thread_engine_calls++;
    floem_thread_engine_bytes += bytes;
}

void floem_count_report(FILE *out, const char *process)
{
    for (int e = 0; e < FLOEM_ENGINES; e++) {
        uint64_t calls = __atomic_load_n(&engine_calls[e], __ATOMIC_RELAXED);
        if (calls != 0)
            fprintf(out, "floem: engine %s (process %s): calls %llu, bytes %llu\n",
                    engine_names[e], process, (unsigned long long)calls,
                    (unsigned long long)__atomic_load_n(&engine_bytes[e], __ATOMIC_RELAXED));
    }
    uint64_t locks = __atomic_load_n(&lock_acquisitions, __ATOMIC_RELAXED);
    if (locks != 0)
        fprintf(out, "floem: locks (process %s): acquisitions %llu\n", process,
                (unsigned long long)locks);
}
