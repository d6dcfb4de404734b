/* Per-element packet counters (on by default; `floem build --no-counters` leaves them out).
 *
 * A process keeps one array of 64-bit counters, laid out by the compiler (plan_code): one
 * per output port of each element (packets sent on it), and, only where the ports' counters
 * cannot tell, an element's runs (packets in: after a queue, in a callable segment, at a
 * join) and its runs that sent nothing on (drops and ends of paths: where a run may send
 * more than one packet; otherwise they are in minus out). The compiler writes the layout as
 * text, one line per element:
 *     "NAME SEGMENT IN ENDED OUTS\n"
 * IN: "-" (a source: no input ports), "=I" (counter I) or "+I,J,..." (the sum of those
 * port counters: the ports feeding it); ENDED: "-", "=I", "~" (IN minus the sum of
 * OUTS) or "0" (every run sends exactly one packet on: an output switch with an else case
 * ends none, where in minus out, read live, would count the packets inside it); OUTS:
 * "PORT:I,..." or "-", where I is "*" for the port of an element whose every run sends
 * exactly one packet on it: it sent what came in (IN), and has no counter.
 *
 * The array lives in a memory file (memfd "floem-counters") that `floem stats` maps
 * read-only through /proc while the program runs, as a monitoring tool reads a device's
 * counter registers; it starts with a header saying whose counters they are and in which
 * byte order (floem/stats.py reads it). The same file holds the statistics of the
 * process's segment threads (floem_thread_stats_t, runtime.h: runs, packets, busy, waited
 * and idle time), one slot per thread started, which the threads keep there themselves,
 * and the connections of its stream transport (floem_connection_stats_t, runtime.h).
 * A counter one thread owns is incremented without a lock: on x86-64 one `add` to memory
 * (a single aligned 8-byte write, which a reader never sees torn; what Linux's per-CPU
 * counters do), elsewhere, and under ThreadSanitizer, a relaxed load and store. One that
 * several threads may increment at once (an element of a segment with several threads, or
 * of a callable segment) is incremented atomically.
 */
#ifndef FLOEM_COUNTERS_H
#define FLOEM_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "floem/queue.h"
#include "floem/runtime.h"

#define FLOEM_COUNTERS_MAGIC "FLOEMCNT"
#define FLOEM_COUNTERS_VERSION 4u

/* The memory file's header, followed by the layout text (NUL-terminated), at
 * `counters_offset` the counters, at `threads_offset` `thread_slots` thread statistics
 * (a slot whose segment is "" is not used) and at `connections_offset` the connection
 * statistics. The file floem_counters_keep writes also has,
 * at `queues_offset`, `queues` struct floem_counters_queue: the counters of the queue
 * instances the process counts, as they were when it ended (0 and 0 in the memory file).
 * Every field in the writer's byte order; `order` is 0x01020304 written in it. */
struct floem_counters_header {
    char magic[8];
    uint32_t order;
    uint32_t version;
    uint32_t counters;          /* how many */
    uint32_t layout_bytes;      /* layout text, its NUL included */
    uint64_t counters_offset;   /* from the start of the file, a multiple of 64 */
    int64_t pid;                /* the process */
    char process[32];           /* its name in the program */
    char run[64];               /* the run's shared memory name ($FLOEM_SHM), "" if none */
    uint64_t threads_offset;    /* from the start of the file, a multiple of 64 */
    uint32_t thread_slots;      /* FLOEM_MAX_THREADS */
    uint32_t thread_bytes;      /* sizeof(floem_thread_stats_t) */
    uint64_t queues_offset;     /* the kept file: where the queue counters are */
    uint32_t queues;            /* the kept file: how many */
    uint32_t queue_bytes;       /* sizeof(struct floem_counters_queue) */
    uint64_t connections_offset;    /* from the start of the file, a multiple of 64 */
};

/* One queue instance's counters in a kept counter file. */
struct floem_counters_queue {
    char name[48];
    uint32_t instance;
    uint32_t unused;
    floem_queue_stats_t stats;
};

/* Packets counted by the calling thread's output ports so far: an element run that ends
 * with the same value sent nothing on. */
extern _Thread_local uint64_t floem_fired;

static inline void floem_count_one(uint64_t *counter)
{
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
    /* Not a compiler barrier: the counter pointer stays in a register across increments,
     * and the add is one instruction where the relaxed load and store are three. */
    __asm__("addq $1, %0" : "+m"(*counter));
#else
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
#endif
}

static inline void floem_count_one_shared(uint64_t *counter)
{
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* One run of an element: its counters and floem_fired when it began. */
typedef struct {
    uint64_t *counters;
    uint64_t fired;
} floem_element_run_t;

static inline floem_element_run_t floem_element_begin(uint64_t *counters)
{
    floem_count_one(&counters[0]);
    return (floem_element_run_t){counters, floem_fired};
}

static inline floem_element_run_t floem_element_begin_shared(uint64_t *counters)
{
    floem_count_one_shared(&counters[0]);
    return (floem_element_run_t){counters, floem_fired};
}

static inline void floem_element_end(floem_element_run_t *run)
{
    if (floem_fired == run->fired)
        floem_count_one(&run->counters[1]);
}

static inline void floem_element_end_shared(floem_element_run_t *run)
{
    if (floem_fired == run->fired)
        floem_count_one_shared(&run->counters[1]);
}

/* Count an element's run from here to the end of the enclosing block, however the block is
 * left (the user's body may `return`): runs now, ended at the block's end. */
#define FLOEM_ELEMENT_RUN(counters)                                                          \
    floem_element_run_t floem_run_ __attribute__((unused, cleanup(floem_element_end))) =     \
        floem_element_begin(counters)
#define FLOEM_ELEMENT_RUN_SHARED(counters)                                                   \
    floem_element_run_t floem_run_                                                           \
        __attribute__((unused, cleanup(floem_element_end_shared))) =                         \
        floem_element_begin_shared(counters)

/* An output port sent a packet. */
static inline void floem_port_fired(uint64_t *counter)
{
    floem_fired++;
    floem_count_one(counter);
}

static inline void floem_port_fired_shared(uint64_t *counter)
{
    floem_fired++;
    floem_count_one_shared(counter);
}

/* The counters of process `process` (zeroed): `count` of them, laid out as `layout` says. In
 * a memory file `floem stats` can find; in ordinary memory if the system has none. */
uint64_t *floem_counters_open(const char *process, const char *layout, uint32_t count);
/* The slot in the counter file where the `i`-th thread started keeps its statistics
 * (zeroed), or NULL when the process has no counters. */
floem_thread_stats_t *floem_counters_thread(int i);
/* Queue `name`'s `count` instances are counted by this process: floem_counters_keep writes
 * their counters too. */
void floem_counters_queue(const char *name, floem_queue_t *const *instances, int count);
/* With FLOEM_COUNTERS_DIR set (`floem run --stats`), write the counter file as it is now
 * to $FLOEM_COUNTERS_DIR/PROCESS.counters (when the process ends), with the counters of
 * the queues it counts. */
void floem_counters_keep(const char *process);
/* Print the counters as a table, one line per element. */
void floem_counters_report(FILE *out, const char *process, const char *layout,
                           const uint64_t *counters);
/* The same, with `notes[i]` (when not NULL) printed under the row of layout line i: the
 * `report = True` states the element uses, e.g. its drops by reason. */
void floem_counters_report_notes(FILE *out, const char *process, const char *layout,
                                 const uint64_t *counters, const char *const *notes);

#endif
