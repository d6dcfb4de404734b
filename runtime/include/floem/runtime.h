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
#include <stdio.h>

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

/* Start a thread running fn(index) for segment `segment`, on CPU `cpu` (-1: wherever the
 * OS schedules it; a number beyond the CPUs this process may use wraps around them: CPU
 * c runs on the (c mod n)-th of the n allowed). Aborts with a message on failure. */
void floem_thread_spawn(const char *segment, void *(*fn)(void *), int index, int cpu);
/* Ask every segment thread to stop and wait for all of them. */
void floem_threads_stop(void);
/* Block SIGINT, SIGTERM and SIGUSR1 in the caller (and threads it starts later). */
void floem_block_stop_signals(void);
/* Wait for SIGINT or SIGTERM (blocked beforehand with floem_block_stop_signals); each
 * SIGUSR1 meanwhile calls `report` (the process prints its counters and goes on). */
void floem_wait_for_stop_signal(void (*report)(void));
/* SIGUSR1 asks a program to report; one that does not wait for it must not die of it. */
void floem_ignore_report_signal(void);
/* Mark segment threads as running (floem_run_threads calls it even with no threads). */
void floem_threads_begin(void);
/* Nonzero for the thread's current turn when its source found nothing to do: the generated
 * loop sets it when the source handed no packet on; a source may set it itself. */
extern _Thread_local int floem_idle;
/* Set in a thread once it calls floem_sync_manage: it moves a sync layer's entries between
 * its turns, so its packet source should not block it for long (net_tcp.c polls first). */
extern _Thread_local int floem_thread_manages;
/* Back off after an idle packet, or while waiting for something: the first FLOEM_IDLE_SPINS
 * calls since the thread last did work spin (a pause each), then for FLOEM_IDLE_YIELD_NS each
 * call yields the core, and after that each call sleeps, FLOEM_IDLE_SLEEP_MIN_NS first and
 * twice as long each time after, up to FLOEM_IDLE_SLEEP_MAX_NS (counted as slept). Sleeping,
 * not only sched_yield, lets the other threads of a small machine run: a thread that only
 * yields stays runnable, and on a 2-core host NIC threads that yielded kept host threads off
 * the cores (docs/benchmarks.md). */
void floem_idle_wait(void);
/* The thread did work: its next idle waits spin again (floem_iteration_end calls it after a
 * busy turn, floem_sync_manage after a round that moved entries). */
void floem_idle_reset(void);
#define FLOEM_IDLE_SPINS 64
#define FLOEM_IDLE_YIELD_NS 50000
#define FLOEM_IDLE_SLEEP_MIN_NS 2000
#define FLOEM_IDLE_SLEEP_MAX_NS 128000

/* What a segment thread did, measured as it ran (cheap enough to be always on).
 *
 * Each turn of a thread's loop either found work (a *run*: busy time) or did not
 * (idle time, back-off included), timed with the monotonic clock. A run of busy turns
 * reads the clock once every FLOEM_CLOCKED_TURNS turns, not after each (a read costs as
 * much as forwarding a packet); an idle turn reads it, and counts the poll it made
 * right after busy ones as busy. `waited_ns` is the
 * part of the busy time spent waiting for room in a full queue (back-pressure: the
 * work itself is busy - waited). `slept_ns` is the
 * time the thread spent blocked (not runnable): sleeping in floem_idle_wait's back-off
 * (idle, or waiting for room), in poll() in the udp backend. The thread's CPU time and
 * lifetime are read once, at its end.
 * When threads share cores, busy time includes moments the thread was preempted;
 * scaled by the share of its runnable time it was on a core, it estimates the CPU
 * time the runs took: (busy_ns - waited_ns) * cpu_ns / (wall_ns - slept_ns).
 *
 * What the performance model of `floem explore` charges besides instructions is counted
 * too: the frames the thread received and sent (packet I/O), the DMA transfers it
 * waited for (a blocking dma_read or dma_write, or a dma_wait that found its request
 * pending: a round trip over PCIe on the issuing core) with their bytes, and its calls
 * to an engine (floem_engine_end) with their bytes. Waits in idle turns (a poll that
 * found nothing) are not kept: they are no packet's.
 */
/* Busy turns in a row between two reads of the clock (the statistics lag by that much). */
#define FLOEM_CLOCKED_TURNS 16
/* Threads a process starts at most (floem_thread_spawn). */
#define FLOEM_MAX_THREADS 256

typedef struct {
    char segment[48];
    int index;
    uint64_t runs, packets, busy_ns, waited_ns, idle_ns, slept_ns, cpu_ns, wall_ns;
    uint64_t received, sent, dma_waits, dma_bytes, engine_calls, engine_bytes;
} floem_thread_stats_t;

/* Where the i-th thread started keeps its statistics, zeroed (NULL: in the runtime's own
 * memory); floem_counters_open sets it, so that they are in the counter file `floem stats`
 * reads. */
extern floem_thread_stats_t *(*floem_thread_stats_slot)(int i);

/* The connections of a stream transport (--net tcp) and the bytes of their streams, counted
 * by it; open = accepted - closed. */
typedef struct {
    uint64_t accepted, closed, bytes_in, bytes_out;
} floem_connection_stats_t;
/* Where the transport keeps them (NULL: in its own memory); floem_counters_open sets it, so
 * that they are in the counter file `floem stats` reads. */
extern floem_connection_stats_t *floem_connection_stats_slot;

/* End of one turn of a segment thread's loop: account it as busy or idle (floem_idle),
 * and back off when idle. */
void floem_iteration_end(void);
/* Back off while waiting for room in a full queue (counted as waited). */
void floem_full_wait(void);
/* A backend blocked the calling thread for `ns` nanoseconds (counted as slept). */
void floem_thread_slept(uint64_t ns);
/* Statistics of the i-th thread started (false past the last): so far while it runs, final
 * once it has ended. */
bool floem_thread_stats(int i, floem_thread_stats_t *out);
/* Print every thread's statistics, one line each, naming `process`. */
void floem_threads_report(FILE *out, const char *process);
/* The monotonic clock, in nanoseconds. */
uint64_t floem_now_ns(void);

/* What the NIC performance model counts (`floem explore`, docs/exploration.md).
 *
 * A program built with FLOEM_COUNT_INSTRUCTIONS and run under qemu-user with Floem's
 * counting plugin (or, built for this machine, under `valgrind --tool=callgrind
 * --collect-atstart=no`) has it count what its segment threads execute on packets: from
 * the moment a segment's source hands a packet on (floem_packet_begin) to the end of the
 * turn, less the pauses: waiting (for a DMA to complete, for room in a full queue, for a
 * lock), the emulated DMA engine and packet I/O (hardware on a NIC), and work handed to
 * an engine. With FLOEM_COUNT=serial in the environment it counts instead the
 * instructions executed holding a floem_lock: work no two cores do at once.
 * Without FLOEM_COUNT_INSTRUCTIONS the calls only keep the counters below.
 */
extern _Thread_local uint64_t floem_thread_packets;
/* The calling thread's frames received and sent, DMA waits and engine calls and their
 * bytes, so far (its statistics keep them at the end of each turn). */
extern _Thread_local uint64_t floem_thread_received, floem_thread_sent, floem_thread_dma_waits,
    floem_thread_dma_bytes, floem_thread_engine_calls, floem_thread_engine_bytes;
/* A call of a callable segment has the turns of its caller's thread (a program of the
 * user's, which has no loop of Floem's): a callable that takes packets from a queue ends
 * the caller's turn on entry (the previous packet's work, the caller's own included) and
 * leaves the turn its packet starts open after it returns, so what the caller does with
 * that packet is counted; one that gives packets counts only its own work when the
 * caller is in no turn. floem_count_call returns what floem_count_return needs. */
#ifdef FLOEM_COUNT_INSTRUCTIONS
/* Call fn(arg) as the calling thread's start: counting names the thread by fn. */
void *floem_count_thread(void *(*fn)(void *), void *arg);
/* The calling thread is one of the NIC's manager cores: the sync layer's rounds it runs
 * are counted, those that move entries as its work (floem explore charges them to the
 * managers), those that find nothing to move apart (their cost a round: the fixed part of
 * every round). floem_count_sync_begin starts counting a round, and says whether it did;
 * floem_count_sync_end ends it, as work or as idle. */
void floem_count_manager(void);
bool floem_count_sync_begin(void);
void floem_count_sync_end(bool counting, bool moved);
void floem_count_packet(void);
void floem_count_turn_end(void);
void floem_count_pause(void);
void floem_count_resume(void);
bool floem_count_call(bool takes);
void floem_count_return(bool end_turn);
#else
static inline void *floem_count_thread(void *(*fn)(void *), void *arg)
{
    return fn(arg);
}
static inline void floem_count_manager(void) {}
static inline bool floem_count_sync_begin(void)
{
    return false;
}
static inline void floem_count_sync_end(bool counting, bool moved)
{
    (void)counting;
    (void)moved;
}
static inline void floem_count_turn_end(void) {}
static inline void floem_count_pause(void) {}
static inline void floem_count_resume(void) {}
static inline bool floem_count_call(bool takes)
{
    (void)takes;
    return false;
}
static inline void floem_count_return(bool end_turn)
{
    (void)end_turn;
}
#endif

/* The segment's source hands a packet on (generated code calls it). */
static inline void floem_packet_begin(void)
{
    floem_thread_packets++;
#ifdef FLOEM_COUNT_INSTRUCTIONS
    floem_count_packet();
#endif
}

/* Add `n` to a statistics counter of a persistent state (drops by reason, say), which
 * other threads and processes may read at any time: an atomic add, or a plain one in an
 * element the compiler found to be the only writer of its states (one thread runs it and
 * nothing else names them: "its states' only writer" in `--dump-after plan_code`), which
 * declares floem_alone 1 in its function. A locked add costs several nanoseconds a packet. */
enum { floem_alone = 0 };
#define floem_add(counter, n)                                                                \
    do {                                                                                     \
        __typeof__(counter) floem_add_at_ = (counter);                                       \
        if (floem_alone && FLOEM_ADD_IN_PLACE && sizeof *floem_add_at_ == 8)                \
            floem_add_in_place((uint64_t *)floem_add_at_, (uint64_t)(n));                    \
        else if (floem_alone)                                                                \
            __atomic_store_n(floem_add_at_,                                                  \
                             __atomic_load_n(floem_add_at_, __ATOMIC_RELAXED) + (n),         \
                             __ATOMIC_RELAXED);                                              \
        else                                                                                 \
            (void)__atomic_fetch_add(floem_add_at_, (n), __ATOMIC_RELAXED);                  \
    } while (0)
/* The only writer's add to a 64-bit counter: one instruction where a relaxed load and store
 * are three (a reader sees the old or the new value, as with the store; as floem_count_one). */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define FLOEM_ADD_IN_PLACE 1
static inline void floem_add_in_place(uint64_t *counter, uint64_t n)
{
    __asm__("addq %1, %0" : "+m"(*counter) : "er"(n));
}
#else
#define FLOEM_ADD_IN_PLACE 0
static inline void floem_add_in_place(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
#endif

/* A hint to the core that the caller spins, waiting for another thread. */
static inline void floem_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Take the spin lock `*lock` (0: free). The exchange that takes it is counted (an atomic);
 * spinning while another thread holds it is waiting, which the model never counts. */
static inline void floem_spin_lock(int *lock)
{
    if (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) {
        floem_count_pause();
        do {
            while (__atomic_load_n(lock, __ATOMIC_RELAXED))
                floem_cpu_relax();
        } while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE));
        floem_count_resume();
    }
}

static inline void floem_spin_unlock(int *lock)
{
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

/* A spin lock (`*lock` starts at 0) whose holder's work the model counts as serial. */
void floem_lock(int *lock);
void floem_unlock(int *lock);

/* Work handed to one of the NIC platform's engines: between floem_engine_begin() and
 * floem_engine_end(engine, bytes) the caller does the engine's work (the emulated NIC has
 * none), which the model charges by the engine's throughput instead of instructions.
 * An engine number out of range aborts with a message. */
enum { FLOEM_ENGINE_CRYPTO, FLOEM_ENGINES };
void floem_engine_begin(void);
void floem_engine_end(int engine, size_t bytes);
/* Engine calls and bytes, and lock acquisitions, one line each (nothing when none). */
void floem_count_report(FILE *out, const char *process);

/* The memory every process of a program shares (queues, persistent state, regions).
 *
 * With FLOEM_SHM set (floem run sets it), it is the POSIX shared memory object of
 * that name, created by the first process to attach; otherwise it is private
 * anonymous memory. `*creator` tells whether the caller must initialise the
 * contents and then call floem_shared_ready(); the others wait inside
 * floem_shared_attach until it has. Aborts with a message on failure.
 */
void *floem_shared_attach(size_t bytes, bool *creator);
void floem_shared_ready(void *base);
/* The NIC's view of the host's shared memory: waits until a host process has created and
 * initialised it, and maps it for the DMA engine only (the NIC code never sees this address). */
void *floem_shared_map_for_dma(size_t bytes);
void floem_shared_detach(void *base, size_t bytes);
/* Bytes at the start of the shared memory reserved for the runtime. */
#define FLOEM_SHARED_HEADER 64

#endif
