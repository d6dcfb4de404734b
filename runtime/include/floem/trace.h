/* Packet tracing: `floem run --trace N` (a program built without --trace has none of this).
 *
 * Each thread knows the packet it works on: floem_trace_packet, its trace id, 0 when the
 * packet is not traced. A packet gets an id where it enters the program (a thread segment's
 * source, a callable segment's arguments), if fewer than FLOEM_TRACE packets have entered
 * this process traced and the --trace-filter expression (compiled in) selects it. Ids are
 * (process number << 24) | n, n = 1, 2, ...: unique in the run. Across a queue the id
 * travels in the entry, as a hidden per-packet field; the save on the other side makes it
 * the thread's packet again.
 *
 * A filter reading per-packet fields that the entering element does not write is decided
 * further on, where the segment has written them: until then the packet is traced pending
 * (FLOEM_TRACE_PENDING), its events kept aside by the thread; floem_trace_decide then gives
 * it an id and keeps them, or drops them. A pending packet is not traced past a queue.
 *
 * Every element a traced packet passes records events at its sites: the compiler numbers
 * them per process and writes what each is as a line of text, "KIND ELEMENT key=value ..."
 * (admit: it entered here; enter: the element ran; send: it went on through a port, with
 * the values of the per-packet fields the element writes; end: the element sent nothing on;
 * enq: it went into a queue; restore: it came out of one). An event is the packet's id, the
 * site, the time (CLOCK_MONOTONIC, shared by the processes of a run, also under qemu) and
 * the values, kept in a bounded buffer of the process; events that do not fit are counted
 * as lost. When the process ends, with FLOEM_TRACE_DIR set, floem_trace_keep writes the
 * site table and the events as text to $FLOEM_TRACE_DIR/PROCESS.trace; `floem run` merges
 * the files of a run and prints each packet's path (floem/trace.py).
 */
#ifndef FLOEM_TRACE_H
#define FLOEM_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define FLOEM_TRACE_VERSION 1u
/* Values an event holds at most. */
#define FLOEM_TRACE_VALUES 255u
/* The packet's filter is not decided yet (an id is never this). */
#define FLOEM_TRACE_PENDING UINT32_MAX

/* The packet the calling thread works on (0: not traced), and whether its entry has
 * decided that (a source sending one packet on several ports decides once). */
extern _Thread_local uint32_t floem_trace_packet;
extern _Thread_local bool floem_trace_decided;
/* Traced packets the calling thread's ports have sent on so far: an element run that
 * ends with the same count sent nothing on. */
extern _Thread_local uint64_t floem_trace_sent;
/* Packets this process traces (FLOEM_TRACE), and how many it has given an id. */
extern uint32_t floem_trace_limit;
extern uint32_t floem_trace_admitted;

/* Start tracing this process, number `number` of the program, whose sites are the lines
 * of `sites`: FLOEM_TRACE says how many packets (default 0: none). */
void floem_trace_open(unsigned number, const char *sites);
/* A new packet id, or 0 once FLOEM_TRACE packets have one. */
uint32_t floem_trace_admit(void);
/* Record an event of `packet` at `site` with `count` values (at most FLOEM_TRACE_VALUES);
 * for a pending packet, aside until its filter is decided. */
void floem_trace_record(uint32_t packet, uint32_t site, const uint64_t *values, unsigned count);
/* The filter of the thread's pending packet is `selected`: trace it (if it may still have
 * an id) with the events kept aside, or not at all. */
void floem_trace_decide(bool selected);
/* Where the thread's events of pending packets begin, and end (floem_trace_call). */
extern _Thread_local uint32_t floem_trace_aside_start;
extern _Thread_local uint32_t floem_trace_aside_end;
/* With FLOEM_TRACE_DIR set, write the sites and the events to $FLOEM_TRACE_DIR/PROCESS.trace
 * (when the process ends, its threads stopped). */
void floem_trace_keep(const char *process);

/* Whether a packet entering now may still get an id (the filter is evaluated only then). */
static inline bool floem_trace_wanted(void)
{
    return __atomic_load_n(&floem_trace_admitted, __ATOMIC_RELAXED) < floem_trace_limit;
}

/* A real number's bits, as an event holds it. */
static inline uint64_t floem_trace_real(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits;
}

/* A thread's loop turns to the next packet: none yet (a pending one is dropped). */
static inline void floem_trace_begin(void)
{
    floem_trace_packet = 0;
    floem_trace_decided = false;
    floem_trace_aside_end = floem_trace_aside_start;
}

/* The thread's packet id as a queue entry carries it: a pending packet goes untraced. */
static inline uint32_t floem_trace_carried(void)
{
    return floem_trace_packet == FLOEM_TRACE_PENDING ? 0 : floem_trace_packet;
}

/* An element runs (or a packet comes out of a queue) at `site`. */
static inline void floem_trace_enter(uint32_t site)
{
    if (floem_trace_packet)
        floem_trace_record(floem_trace_packet, site, NULL, 0);
}

/* A call of a callable segment is a packet of its own: the caller's is put aside. */
typedef struct {
    uint32_t packet;
    bool decided;
    uint32_t aside_start;
} floem_trace_caller_t;

static inline floem_trace_caller_t floem_trace_call(void)
{
    floem_trace_caller_t caller = {floem_trace_packet, floem_trace_decided,
                                   floem_trace_aside_start};
    floem_trace_aside_start = floem_trace_aside_end;       /* after the caller's */
    floem_trace_begin();
    return caller;
}

static inline void floem_trace_return(floem_trace_caller_t caller)
{
    floem_trace_aside_end = floem_trace_aside_start;       /* the callee's are done */
    floem_trace_aside_start = caller.aside_start;
    floem_trace_packet = caller.packet;
    floem_trace_decided = caller.decided;
}

/* One run of an element that may send nothing on: the count of sends when it began. */
typedef struct {
    uint32_t site;
    uint64_t sent;
} floem_trace_run_t;

static inline floem_trace_run_t floem_trace_run_begin(uint32_t site)
{
    return (floem_trace_run_t){site, floem_trace_sent};
}

static inline void floem_trace_run_end(floem_trace_run_t *run)
{
    if (floem_trace_packet && floem_trace_sent == run->sent)
        floem_trace_record(floem_trace_packet, run->site, NULL, 0);
}

/* Record site `site` at the end of the enclosing block (however it is left: a body may
 * `return`) if the element sent the packet nowhere. */
#define FLOEM_TRACE_RUN(site)                                                                \
    floem_trace_run_t floem_trace_run_ __attribute__((unused, cleanup(floem_trace_run_end))) = \
        floem_trace_run_begin(site)

#endif
