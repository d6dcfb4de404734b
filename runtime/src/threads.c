/* Segment threads and process lifecycle for generated Floem programs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/runtime.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>


_Thread_local int floem_core_id;
_Thread_local uint64_t floem_packet_seq;
volatile int floem_run_flag;

/* A started thread: what it runs, when it started, and its statistics (the counters are
 * written only by the thread itself, with relaxed atomic stores, so others may read them). */
struct thread {
    pthread_t id;
    void *(*fn)(void *);
    uint64_t start_ns, start_cpu_ns;
    bool ended;
    floem_thread_stats_t *stats;    /* in the counter file (floem stats reads it), or `own` */
    floem_thread_stats_t own;
};

static struct thread threads[FLOEM_MAX_THREADS];
floem_thread_stats_t *(*floem_thread_stats_slot)(int i);
floem_connection_stats_t *floem_connection_stats_slot;
static int n_threads, n_reported;
static _Thread_local floem_thread_stats_t *self;
static _Thread_local uint64_t turn_start;     /* the clock when it was last read */
static _Thread_local unsigned unclocked;        /* busy turns since then */

/* Clock `clock` (monotonic, or a thread's CPU time) in nanoseconds; 0 when unreadable. */
static uint64_t clock_ns(clockid_t clock)
{
    struct timespec t;
    if (clock_gettime(clock, &t) != 0)
        return 0;
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t floem_now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

static void add(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED);
}

/* Count the time since the clock was last read as busy, if busy turns came since. */
static void clock_busy_turns(void)
{
    if (unclocked == 0)
        return;
    uint64_t now = floem_now_ns();
    add(&self->busy_ns, now - turn_start);
    turn_start = now;
    unclocked = 0;
}

static void *run_thread(void *arg)
{
    struct thread *t = arg;
    self = t->stats;
    __atomic_store_n(&t->start_cpu_ns, clock_ns(CLOCK_THREAD_CPUTIME_ID), __ATOMIC_RELAXED);
    turn_start = floem_now_ns();
    __atomic_store_n(&t->start_ns, turn_start, __ATOMIC_RELEASE);
    void *result = floem_count_thread(t->fn, (void *)(intptr_t)self->index);
    clock_busy_turns();
    __atomic_store_n(&self->cpu_ns, clock_ns(CLOCK_THREAD_CPUTIME_ID) - t->start_cpu_ns,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&self->wall_ns, floem_now_ns() - t->start_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&t->ended, true, __ATOMIC_RELEASE);
    return result;
}

/* Attributes that pin a thread to the (cpu mod n)-th of the n CPUs this process may use. */
static void pin(pthread_attr_t *attr, int cpu)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) == 0)
        return;
    int k = cpu % CPU_COUNT(&allowed);
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed) && k-- == 0) {
            CPU_SET(c, &one);
            break;
        }
    pthread_attr_setaffinity_np(attr, sizeof one, &one);
}

void floem_thread_spawn(const char *segment, void *(*fn)(void *), int index, int cpu)
{
    if (n_threads == FLOEM_MAX_THREADS) {
        fprintf(stderr, "floem: segment %s: more than %d threads\n", segment, FLOEM_MAX_THREADS);
        abort();
    }
    if (n_threads == 0)
        n_reported = 0;             /* a new set of threads: forget the last set's statistics */
    struct thread *t = &threads[n_threads];
    memset(t, 0, sizeof *t);
    t->fn = fn;
    t->stats = floem_thread_stats_slot != NULL ? floem_thread_stats_slot(n_threads) : NULL;
    if (t->stats == NULL)
        t->stats = &t->own;
    snprintf(t->stats->segment, sizeof t->stats->segment, "%s", segment);
    t->stats->index = index;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (cpu >= 0)
        pin(&attr, cpu);
    int err = pthread_create(&t->id, &attr, run_thread, t);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        fprintf(stderr, "floem: segment %s: cannot start thread: %s\n", segment, strerror(err));
        abort();
    }
    n_threads++;
    n_reported = n_threads;
}

/* The calling thread's back-off (floem_idle_wait): idle waits since it last did work, when
 * its yielding phase started, and its next sleep. */
static _Thread_local unsigned idle_waits;
static _Thread_local uint64_t idle_yield_start_ns, idle_sleep_ns;
static _Thread_local bool idle_slack_set;

void floem_idle_reset(void)
{
    idle_waits = 0;
    idle_sleep_ns = 0;
}

void floem_idle_wait(void)
{
    if (++idle_waits <= FLOEM_IDLE_SPINS) {
        floem_cpu_relax();
        return;
    }
    uint64_t now = floem_now_ns();
    if (idle_waits == FLOEM_IDLE_SPINS + 1)
        idle_yield_start_ns = now;
    if (now - idle_yield_start_ns < FLOEM_IDLE_YIELD_NS) {
        sched_yield();
        return;
    }
    if (!idle_slack_set) {
        /* Sleep about as long as asked: the default timer slack (50 us) would stretch every
         * short sleep to about the bound. */
        (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
        idle_slack_set = true;
    }
    idle_sleep_ns = idle_sleep_ns == 0 ? FLOEM_IDLE_SLEEP_MIN_NS : 2 * idle_sleep_ns;
    if (idle_sleep_ns > FLOEM_IDLE_SLEEP_MAX_NS)
        idle_sleep_ns = FLOEM_IDLE_SLEEP_MAX_NS;
    struct timespec t = {0, (long)idle_sleep_ns};
    nanosleep(&t, NULL);
    floem_thread_slept(floem_now_ns() - now);
}

void floem_iteration_end(void)
{
    floem_count_turn_end();
    if (self == NULL) {             /* not a thread floem_thread_spawn started */
        if (floem_idle)
            floem_idle_wait();
        else
            floem_idle_reset();
        return;
    }
    __atomic_store_n(&self->received, floem_thread_received, __ATOMIC_RELAXED);
    __atomic_store_n(&self->sent, floem_thread_sent, __ATOMIC_RELAXED);
    if (!floem_idle) {
        floem_idle_reset();
        add(&self->runs, 1);
        __atomic_store_n(&self->packets, floem_thread_packets, __ATOMIC_RELAXED);
        __atomic_store_n(&self->dma_waits, floem_thread_dma_waits, __ATOMIC_RELAXED);
        __atomic_store_n(&self->dma_bytes, floem_thread_dma_bytes, __ATOMIC_RELAXED);
        __atomic_store_n(&self->engine_calls, floem_thread_engine_calls, __ATOMIC_RELAXED);
        __atomic_store_n(&self->engine_bytes, floem_thread_engine_bytes, __ATOMIC_RELAXED);
        if (++unclocked == FLOEM_CLOCKED_TURNS)
            clock_busy_turns();
        return;
    }
    floem_thread_dma_waits = self->dma_waits;       /* an idle turn's waits are no packet's */
    floem_thread_dma_bytes = self->dma_bytes;
    clock_busy_turns();
    floem_idle_wait();
    uint64_t after = floem_now_ns();
    add(&self->idle_ns, after - turn_start);
    turn_start = after;
}

void floem_full_wait(void)
{
    uint64_t start = floem_now_ns();
    floem_count_pause();
    floem_idle_wait();
    floem_count_resume();
    if (self != NULL)
        add(&self->waited_ns, floem_now_ns() - start);
}

void floem_thread_slept(uint64_t ns)
{
    if (self != NULL)
        add(&self->slept_ns, ns);
}

bool floem_thread_stats(int i, floem_thread_stats_t *out)
{
    if (i < 0 || i >= n_reported)
        return false;
    struct thread *t = &threads[i];
    floem_thread_stats_t *s = t->stats;
    memcpy(out->segment, s->segment, sizeof out->segment);
    out->index = s->index;
    out->runs = __atomic_load_n(&s->runs, __ATOMIC_RELAXED);
    out->packets = __atomic_load_n(&s->packets, __ATOMIC_RELAXED);
    out->busy_ns = __atomic_load_n(&s->busy_ns, __ATOMIC_RELAXED);
    out->waited_ns = __atomic_load_n(&s->waited_ns, __ATOMIC_RELAXED);
    out->idle_ns = __atomic_load_n(&s->idle_ns, __ATOMIC_RELAXED);
    out->slept_ns = __atomic_load_n(&s->slept_ns, __ATOMIC_RELAXED);
    out->received = __atomic_load_n(&s->received, __ATOMIC_RELAXED);
    out->sent = __atomic_load_n(&s->sent, __ATOMIC_RELAXED);
    out->dma_waits = __atomic_load_n(&s->dma_waits, __ATOMIC_RELAXED);
    out->dma_bytes = __atomic_load_n(&s->dma_bytes, __ATOMIC_RELAXED);
    out->engine_calls = __atomic_load_n(&s->engine_calls, __ATOMIC_RELAXED);
    out->engine_bytes = __atomic_load_n(&s->engine_bytes, __ATOMIC_RELAXED);
    if (__atomic_load_n(&t->ended, __ATOMIC_ACQUIRE)) {
        out->cpu_ns = s->cpu_ns;
        out->wall_ns = s->wall_ns;
    } else if (__atomic_load_n(&t->start_ns, __ATOMIC_ACQUIRE) == 0) {
        out->cpu_ns = out->wall_ns = 0;             /* not started yet */
    } else {                                        /* still running: its clocks so far */
        clockid_t clock;
        out->cpu_ns = pthread_getcpuclockid(t->id, &clock) == 0
                      ? clock_ns(clock) - __atomic_load_n(&t->start_cpu_ns, __ATOMIC_RELAXED) : 0;
        out->wall_ns = floem_now_ns() - __atomic_load_n(&t->start_ns, __ATOMIC_RELAXED);
    }
    return true;
}

void floem_threads_report(FILE *out, const char *process)
{
    floem_thread_stats_t s;
    for (int i = 0; floem_thread_stats(i, &s); i++)
        fprintf(out, "floem: thread %s[%d] (process %s): runs %llu, packets %llu, busy %llu ns, "
                     "waited %llu ns, idle %llu ns, slept %llu ns, cpu %llu ns, wall %llu ns, "
                     "received %llu, sent %llu, dma waits %llu, dma bytes %llu, engine calls %llu, "
                     "engine bytes %llu\n",
                s.segment, s.index, process, (unsigned long long)s.runs,
                (unsigned long long)s.packets, (unsigned long long)s.busy_ns,
                (unsigned long long)s.waited_ns, (unsigned long long)s.idle_ns,
                (unsigned long long)s.slept_ns,
                (unsigned long long)s.cpu_ns, (unsigned long long)s.wall_ns,
                (unsigned long long)s.received, (unsigned long long)s.sent,
                (unsigned long long)s.dma_waits, (unsigned long long)s.dma_bytes,
                (unsigned long long)s.engine_calls, (unsigned long long)s.engine_bytes);
}

void floem_threads_begin(void)
{
    __atomic_store_n(&floem_run_flag, 1, __ATOMIC_RELEASE);
}

void floem_threads_stop(void)
{
    __atomic_store_n(&floem_run_flag, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < n_threads; i++)
        pthread_join(threads[i].id, NULL);
    n_threads = 0;
}

static sigset_t control_signals(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    return set;
}

void floem_block_stop_signals(void)
{
    sigset_t set = control_signals();
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    /* A parent may have left SIGUSR1 ignored (`floem run` does, and exec keeps that):
     * blocked, the default action never runs, and sigwait takes it. */
    struct sigaction deliver = {.sa_handler = SIG_DFL};
    sigemptyset(&deliver.sa_mask);
    sigaction(SIGUSR1, &deliver, NULL);
}

void floem_wait_for_stop_signal(void (*report)(void))
{
    sigset_t set = control_signals();
    int sig;
    while (sigwait(&set, &sig) == 0 && sig == SIGUSR1)
        report();
}

void floem_ignore_report_signal(void)
{
    struct sigaction ignore = {.sa_handler = SIG_IGN};
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGUSR1, &ignore, NULL);
}

/* The processes of a run share one stderr: each writes its messages a whole line at a time
 * (line buffering), so that lines of two processes never interleave mid-line, as a report
 * row printed in pieces could with stderr unbuffered. Runs before main. */
__attribute__((constructor)) static void whole_lines_on_stderr(void)
{
    setvbuf(stderr, NULL, _IOLBF, BUFSIZ);
}

/* Started by a launcher that put its pid in FLOEM_PARENT (`floem run`, a build's `run`
 * script), the process dies with the launcher however the launcher ends, SIGKILL included:
 * a parent-death signal, and SIGKILL at once if the launcher died before this ran (the
 * process then has another parent). Runs before main; under qemu-user and valgrind too
 * (both pass prctl on, and getppid() is the emulator's parent). The variable is removed:
 * this process's own children have another parent. */
__attribute__((constructor)) static void die_with_launcher(void)
{
    const char *value = getenv("FLOEM_PARENT");
    if (value == NULL)
        return;
    char *end;
    long launcher = strtol(value, &end, 10);
    if (value[0] == '\0' || *end != '\0' || launcher <= 0) {
        fprintf(stderr, "floem: FLOEM_PARENT=%s: not a process id\n", value);
        abort();
    }
    unsetenv("FLOEM_PARENT");
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
        fprintf(stderr, "floem: cannot ask to die with the launcher: prctl: %s\n", strerror(errno));
        return;
    }
    if (getppid() != (pid_t)launcher)
        raise(SIGKILL);
}
