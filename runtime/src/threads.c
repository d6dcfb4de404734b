/* Segment threads and process lifecycle for generated Floem programs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/runtime.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLOEM_MAX_THREADS 256

_Thread_local int floem_core_id;
_Thread_local uint64_t floem_packet_seq;
volatile int floem_run_flag;

static pthread_t threads[FLOEM_MAX_THREADS];
static int n_threads;

void floem_thread_spawn(const char *segment, void *(*fn)(void *), int index)
{
    if (n_threads == FLOEM_MAX_THREADS) {
        fprintf(stderr, "floem: segment %s: more than %d threads\n", segment, FLOEM_MAX_THREADS);
        abort();
    }
    int err = pthread_create(&threads[n_threads], NULL, fn, (void *)(intptr_t)index);
    if (err != 0) {
        fprintf(stderr, "floem: segment %s: cannot start thread: %s\n", segment, strerror(err));
        abort();
    }
    n_threads++;
}

void floem_threads_begin(void)
{
    __atomic_store_n(&floem_run_flag, 1, __ATOMIC_RELEASE);
}

void floem_threads_stop(void)
{
    __atomic_store_n(&floem_run_flag, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < n_threads; i++)
        pthread_join(threads[i], NULL);
    n_threads = 0;
}

static sigset_t stop_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

void floem_block_stop_signals(void)
{
    sigset_t set = stop_signals();
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

void floem_wait_for_stop_signal(void)
{
    sigset_t set = stop_signals();
    int sig;
    sigwait(&set, &sig);
}
