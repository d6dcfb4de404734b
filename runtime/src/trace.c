/* Packet tracing: the event buffer and the trace file (floem/trace.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

_Thread_local uint32_t floem_trace_packet;
_Thread_local bool floem_trace_decided;
_Thread_local uint64_t floem_trace_sent;
_Thread_local uint32_t floem_trace_aside_start;
_Thread_local uint32_t floem_trace_aside_end;
uint32_t floem_trace_limit;
uint32_t floem_trace_admitted;

/* Ids are (number << FLOEM_TRACE_SHIFT) | n: at most this many packets per process. */
#define FLOEM_TRACE_SHIFT 24
#define FLOEM_TRACE_MAX_PACKETS ((1u << FLOEM_TRACE_SHIFT) - 1)
/* Buffer words per traced packet, and in all (the buffer is reserved, not touched, until
 * events fill it). */
#define FLOEM_TRACE_WORDS_PER_PACKET 512u
#define FLOEM_TRACE_MAX_WORDS ((size_t)1 << 24)
/* Words of events a thread keeps aside for pending packets. */
#define FLOEM_TRACE_ASIDE_WORDS 2048u

/* Events, one after the other: a header word (packet << 32 | site << 8 | count), the time
 * in ns, then `count` values. A zero header ends them (ids are never 0). */
static uint64_t *events;
static size_t capacity;         /* words */
static size_t used;             /* words reserved so far (may pass capacity) */
static uint64_t lost;           /* events that did not fit */
static uint32_t number;
static const char *site_table;
/* The calling thread's events of pending packets, laid out as in `events` (mapped when the
 * thread first needs it: a program traces on few threads, and builds without tracing never
 * do; unmapped when the process ends). */
static _Thread_local uint64_t *aside;

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* An event with its time into the buffer (or counted as lost). */
static void keep(uint64_t head, uint64_t time, const uint64_t *values, unsigned count)
{
    size_t words = 2 + (size_t)count;
    size_t at = __atomic_fetch_add(&used, words, __ATOMIC_RELAXED);
    if (at + words > capacity) {
        __atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
        return;
    }
    events[at + 1] = time;
    for (unsigned i = 0; i < count; i++)
        events[at + 2 + i] = values[i];
    __atomic_store_n(&events[at], head, __ATOMIC_RELEASE);
}

void floem_trace_open(unsigned process_number, const char *sites)
{
    number = process_number;
    site_table = sites;
    const char *limit = getenv("FLOEM_TRACE");
    unsigned long n = limit != NULL ? strtoul(limit, NULL, 10) : 0;
    floem_trace_limit = n > FLOEM_TRACE_MAX_PACKETS ? FLOEM_TRACE_MAX_PACKETS : (uint32_t)n;
    if (floem_trace_limit == 0)
        return;
    size_t words = (size_t)floem_trace_limit * FLOEM_TRACE_WORDS_PER_PACKET;
    capacity = words < FLOEM_TRACE_MAX_WORDS ? words : FLOEM_TRACE_MAX_WORDS;
    void *p = mmap(NULL, capacity * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "floem: no memory for the packet trace; tracing nothing\n");
        floem_trace_limit = 0;
        capacity = 0;
        return;
    }
    events = p;
}

uint32_t floem_trace_admit(void)
{
    uint32_t n = __atomic_add_fetch(&floem_trace_admitted, 1, __ATOMIC_RELAXED);
    if (n > floem_trace_limit)
        return 0;
    return (number << FLOEM_TRACE_SHIFT) | n;
}

void floem_trace_record(uint32_t packet, uint32_t site, const uint64_t *values, unsigned count)
{
    uint64_t head = (uint64_t)site << 8 | count;
    if (packet != FLOEM_TRACE_PENDING) {
        keep((uint64_t)packet << 32 | head, now_ns(), values, count);
        return;
    }
    if (aside == NULL) {
        void *p = mmap(NULL, FLOEM_TRACE_ASIDE_WORDS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        aside = p == MAP_FAILED ? NULL : p;
    }
    uint32_t at = floem_trace_aside_end;
    if (aside == NULL || at + 2 + count > FLOEM_TRACE_ASIDE_WORDS) {
        __atomic_fetch_add(&lost, 1, __ATOMIC_RELAXED);
        return;
    }
    aside[at] = head;
    aside[at + 1] = now_ns();
    for (unsigned i = 0; i < count; i++)
        aside[at + 2 + i] = values[i];
    floem_trace_aside_end = at + 2 + count;
}

void floem_trace_decide(bool selected)
{
    uint32_t packet = selected ? floem_trace_admit() : 0;
    for (uint32_t at = floem_trace_aside_start; packet && at < floem_trace_aside_end;) {
        unsigned count = (unsigned)(aside[at] & 0xff);
        keep((uint64_t)packet << 32 | aside[at], aside[at + 1], &aside[at + 2], count);
        at += 2 + count;
    }
    floem_trace_aside_end = floem_trace_aside_start;
    floem_trace_packet = packet;
}

void floem_trace_keep(const char *process)
{
    const char *dir = getenv("FLOEM_TRACE_DIR");
    if (dir == NULL || site_table == NULL)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.trace", dir, process);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "floem: cannot write the packet trace to %s\n", path);
        return;
    }
    uint32_t admitted = __atomic_load_n(&floem_trace_admitted, __ATOMIC_RELAXED);
    size_t sites = 0;
    for (const char *p = site_table; *p != '\0'; p++)
        sites += *p == '\n';
    fprintf(f, "floem-trace %u\nprocess %s\nnumber %u\nlimit %u\nadmitted %u\nlost %llu\n"
            "sites %zu\n%s", FLOEM_TRACE_VERSION, process, number, floem_trace_limit,
            admitted < floem_trace_limit ? admitted : floem_trace_limit,
            (unsigned long long)__atomic_load_n(&lost, __ATOMIC_RELAXED), sites, site_table);
    size_t end = used < capacity ? used : capacity;
    for (size_t at = 0; at + 2 <= end;) {
        uint64_t head = __atomic_load_n(&events[at], __ATOMIC_ACQUIRE);
        if (head == 0)
            break;          /* reserved by a thread that was stopped before it wrote */
        unsigned count = (unsigned)(head & 0xff);
        fprintf(f, "event %u %u %llu", (unsigned)(head >> 32), (unsigned)(head >> 8 & 0xffffff),
                (unsigned long long)events[at + 1]);
        for (unsigned i = 0; i < count; i++)
            fprintf(f, " %llu", (unsigned long long)events[at + 2 + i]);
        fputc('\n', f);
        at += 2 + count;
    }
    if (fclose(f) != 0)
        fprintf(stderr, "floem: cannot write the packet trace to %s\n", path);
}
