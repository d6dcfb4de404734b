/* Unit tests of the packet-trace runtime (floem/trace.h, src/trace.c): ids and the packet
 * limit, events with values, packets pending their filter (kept aside, then kept or
 * dropped, also around a callable's packet), threads recording at once, the bounded buffer
 * counting what does not fit, and the trace file. Usage: test_trace DIR (where the trace
 * file is written). */
#define _GNU_SOURCE
#include "floem/trace.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define THREADS 4
#define LIMIT 40u

static const char sites[] = "admit Src port=out ports=1 to=A fields=x:signed\n"
                            "enter A\n"
                            "send A port=out ports=1 to=B fields=x:signed,y:real\n";

/* Each thread: packets admitted and recorded (3 events each), some pending and dropped. */
static void *traffic(void *arg)
{
    uintptr_t me = (uintptr_t)arg;
    for (int i = 0; i < 8; i++) {
        floem_trace_begin();
        floem_trace_packet = FLOEM_TRACE_PENDING;
        uint64_t x = me * 100 + (uint64_t)i;
        floem_trace_record(floem_trace_packet, 0, &x, 1);
        floem_trace_enter(1);
        floem_trace_decide(i % 2 == 0);     /* the filter keeps even packets */
        if (floem_trace_packet) {
            const uint64_t values[] = {x, floem_trace_real(i / 2.0)};
            floem_trace_record(floem_trace_packet, 2, values, 2);
        }
    }
    return NULL;
}

static size_t lines_starting(const char *text, const char *prefix)
{
    size_t n = 0;
    for (const char *line = text; *line != '\0';) {
        n += strncmp(line, prefix, strlen(prefix)) == 0;
        const char *end = strchr(line, '\n');
        line = end != NULL ? end + 1 : line + strlen(line);
    }
    return n;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    setenv("FLOEM_TRACE", "40", 1);
    setenv("FLOEM_TRACE_DIR", argv[1], 1);
    floem_trace_open(3, sites);
    CHECK(floem_trace_limit == LIMIT && floem_trace_wanted());

    /* a callable's packet inside a pending one: the caller's events stay aside */
    floem_trace_begin();
    floem_trace_packet = FLOEM_TRACE_PENDING;
    floem_trace_enter(1);
    CHECK(floem_trace_carried() == 0);          /* a pending packet crosses no queue traced */
    floem_trace_caller_t caller = floem_trace_call();
    CHECK(floem_trace_packet == 0 && !floem_trace_decided);
    floem_trace_packet = FLOEM_TRACE_PENDING;
    floem_trace_enter(1);
    floem_trace_decide(false);                  /* the callee's packet: not selected */
    floem_trace_return(caller);
    CHECK(floem_trace_packet == FLOEM_TRACE_PENDING);
    floem_trace_decide(true);                   /* the caller's: kept, its one event with it */
    CHECK(floem_trace_packet == (3u << 24 | 1u) && floem_trace_carried() == floem_trace_packet);

    pthread_t threads[THREADS];
    for (uintptr_t t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, traffic, (void *)t) == 0);
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_join(threads[t], NULL) == 0);
    CHECK(floem_trace_admitted == 1 + THREADS * 4);

    /* admitted up to the limit, then no more ids */
    uint32_t last = 0;
    while (floem_trace_wanted())
        last = floem_trace_admit();
    CHECK(last == (3u << 24 | LIMIT));
    CHECK(floem_trace_admit() == 0 && !floem_trace_wanted());

    /* fill the buffer (512 words per packet): what does not fit is counted */
    const uint64_t many[255] = {0};
    for (unsigned i = 0; i < 100; i++)
        floem_trace_record(last, 2, many, 255);
    floem_trace_keep("proc");

    char path[4096];
    snprintf(path, sizeof path, "%s/proc.trace", argv[1]);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    static char text[1 << 22];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    CHECK(strncmp(text, "floem-trace 1\nprocess proc\nnumber 3\nlimit 40\nadmitted 40\nlost ",
                  58) == 0);
    unsigned long lost = strtoul(strstr(text, "\nlost ") + 6, NULL, 10);
    CHECK(lost > 0 && lost < 100);
    CHECK(strstr(text, "\nsites 3\nadmit Src port=out") != NULL);
    CHECK(strstr(text, "\nevent 50331649 1 ") != NULL);       /* the caller's, kept */
    /* per thread 4 kept packets of 3 events, the caller's 1, then the full records */
    CHECK(lines_starting(text, "event ") == 1 + THREADS * 4 * 3 + (100 - lost));
    CHECK(lines_starting(text, "event 50331649 0 ") == 0);   /* its pending callee's, dropped */
    printf("ok: %lu checks\n", checks);
    return 0;
}
