/* What the NIC performance model counts: instructions on packets, serial work, engine calls.
 *
 * Built with FLOEM_COUNT_INSTRUCTIONS, a program says when each thread's work is to be
 * counted (see floem/runtime.h) to the counting plugin of qemu-user it runs under
 * (floem/explore/count_plugin.c), by calling marker functions it recognises by name,
 * and, in a build for this machine, to callgrind (`valgrind --tool=callgrind
 * --collect-atstart=no`, which `floem place` counts each element's function with) by its
 * client request. Otherwise nothing here marks anything, and the lock and engine calls
 * only keep their counters.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/runtime.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

_Thread_local uint64_t floem_thread_packets;
_Thread_local uint64_t floem_thread_received, floem_thread_sent, floem_thread_dma_waits,
    floem_thread_dma_bytes, floem_thread_engine_calls, floem_thread_engine_bytes;

#ifdef FLOEM_COUNT_INSTRUCTIONS
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define TOGGLE_CALLGRIND() CALLGRIND_TOGGLE_COLLECT
#else                           /* a cross compiler: no callgrind for this ISA */
#define TOGGLE_CALLGRIND() ((void)0)
#endif

/* The markers: they do nothing, the plugin sees them called. gcc's noipa keeps every
 * call and keeps the functions apart (no identical code folding); clang folds none. */
#ifdef __clang__
#define MARKER __attribute__((noinline))
#else
#define MARKER __attribute__((noipa))
#endif

MARKER void floem_count_on(void)
{
    __asm__ volatile("");
}

MARKER void floem_count_off(void)
{
    __asm__ volatile("");
}

MARKER void floem_count_idle(void)
{
    __asm__ volatile("");
}

MARKER void floem_count_round(void)
{
    __asm__ volatile("");
}

MARKER void *floem_count_thread(void *(*fn)(void *), void *arg)
{
    return fn(arg);
}

/* A program of the user's starts its threads itself: a counting build links with
 * --wrap=pthread_create, which sends each through floem_count_thread, so that the plugin
 * names it by its start routine. */
int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*fn)(void *), void *arg);

struct start {
    void *(*fn)(void *);
    void *arg;
};

static void *start_named(void *arg)
{
    struct start start = *(struct start *)arg;
    free(arg);
    return floem_count_thread(start.fn, start.arg);
}

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                          void *(*fn)(void *), void *arg)
{
    struct start *start = malloc(sizeof *start);
    if (start == NULL)
        return EAGAIN;
    *start = (struct start){fn, arg};
    int err = __real_pthread_create(thread, attr, start_named, start);
    if (err != 0)
        free(start);
    return err;
}

/* Per thread: in a packet turn, in a sync-layer round (a manager's: counted while no pause
 * is open beyond those open when it began), locks held, pauses open, and whether it is
 * counted now. */
static _Thread_local struct {
    bool in_turn, in_round, collecting, manager;
    int locks_held, paused, round_paused;
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

/* Count this thread, or stop, as what it is doing now asks. The plugin's window lies
 * inside callgrind's: neither counts the other's mark (callgrind counts no manager). */
static void update(void)
{
    bool counted = self.in_round ? self.paused == self.round_paused
                                 : self.paused == 0 && (serial() ? self.locks_held > 0
                                                                 : self.in_turn);
    if (counted == self.collecting)
        return;
    self.collecting = counted;
    if (counted) {
        if (!self.in_round)
            TOGGLE_CALLGRIND();
        floem_count_on();
    } else {
        floem_count_off();
        if (!self.in_round)
            TOGGLE_CALLGRIND();
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

void floem_count_manager(void)
{
    self.manager = true;
}

/* A manager's round is counted from here; the pauses inside it (the DMA engine's work)
 * are not. */
bool floem_count_sync_begin(void)
{
    if (!self.manager || serial())
        return false;
    self.in_round = self.collecting = true;
    self.round_paused = self.paused;
    floem_count_round();
    return true;
}

void floem_count_sync_end(bool counting, bool moved)
{
    if (!counting)
        return;
    if (moved)
        floem_count_off();
    else
        floem_count_idle();
    self.in_round = self.collecting = false;
}

void floem_count_pause(void)
{
    self.paused++;
    update();
}

void floem_count_resume(void)
{
    self.paused--;
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
    floem_spin_lock(lock);
    __atomic_fetch_add(&lock_acquisitions, 1, __ATOMIC_RELAXED);
    held(+1);
}

void floem_unlock(int *lock)
{
    floem_spin_unlock(lock);
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
