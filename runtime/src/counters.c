/* Per-element packet counters in a memory file `floem stats` can map (floem/counters.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/counters.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

_Thread_local uint64_t floem_fired;

/* The process's counter file: header, layout, counters (floem_counters_keep writes it). */
static char *counters_file;
static size_t counters_file_bytes;
/* The queue instances the process counts (floem_counters_queue). */
#define FLOEM_COUNTED_QUEUES 256
struct counted_queue {
    const char *name;
    floem_queue_t *instance;
    uint32_t index;
};
static struct counted_queue counted_queues[FLOEM_COUNTED_QUEUES];
static int n_counted_queues;

static void out_of_memory(void)
{
    fprintf(stderr, "floem: no memory for the element counters\n");
    abort();
}

/* Shared zeroed memory of `bytes` in a memory file, or private memory when there is none. */
static void *counter_memory(size_t bytes)
{
    int fd = memfd_create("floem-counters", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, (off_t)bytes) == 0) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED)
            return p;           /* the descriptor stays open: /proc/PID/fd is how readers find it */
    }
    if (fd >= 0)
        close(fd);
    void *p = calloc(1, bytes);
    if (p == NULL)
        out_of_memory();
    return p;
}

uint64_t *floem_counters_open(const char *process, const char *layout, uint32_t count)
{
    size_t layout_bytes = strlen(layout) + 1;
    size_t offset = (sizeof(struct floem_counters_header) + layout_bytes + 63) & ~(size_t)63;
    size_t threads = (offset + (size_t)count * sizeof(uint64_t) + 63) & ~(size_t)63;
    size_t connections = (threads + FLOEM_MAX_THREADS * sizeof(floem_thread_stats_t) + 63) &
                         ~(size_t)63;
    size_t bytes = connections + sizeof(floem_connection_stats_t);
    char *base = counter_memory(bytes);
    struct floem_counters_header *h = (struct floem_counters_header *)base;
    memcpy(h->magic, FLOEM_COUNTERS_MAGIC, sizeof h->magic);
    h->order = 0x01020304u;
    h->version = FLOEM_COUNTERS_VERSION;
    h->counters = count;
    h->layout_bytes = (uint32_t)layout_bytes;
    h->counters_offset = offset;
    h->threads_offset = threads;
    h->thread_slots = FLOEM_MAX_THREADS;
    h->thread_bytes = (uint32_t)sizeof(floem_thread_stats_t);
    h->connections_offset = connections;
    h->pid = (int64_t)getpid();
    snprintf(h->process, sizeof h->process, "%s", process);
    const char *run = getenv("FLOEM_SHM");
    snprintf(h->run, sizeof h->run, "%s", run ? run : "");
    memcpy(base + sizeof *h, layout, layout_bytes);
    counters_file = base;
    counters_file_bytes = bytes;
    floem_thread_stats_slot = floem_counters_thread;
    floem_connection_stats_slot = (floem_connection_stats_t *)(base + connections);
    return (uint64_t *)(base + offset);
}

floem_thread_stats_t *floem_counters_thread(int i)
{
    if (counters_file == NULL || i < 0 || i >= FLOEM_MAX_THREADS)
        return NULL;
    const struct floem_counters_header *h = (const struct floem_counters_header *)counters_file;
    floem_thread_stats_t *slot = (floem_thread_stats_t *)(counters_file + h->threads_offset) + i;
    memset(slot, 0, sizeof *slot);
    return slot;
}

void floem_counters_queue(const char *name, floem_queue_t *const *instances, int count)
{
    for (int i = 0; i < count && n_counted_queues < FLOEM_COUNTED_QUEUES; i++)
        counted_queues[n_counted_queues++] = (struct counted_queue){name, instances[i],
                                                                   (uint32_t)i};
}

void floem_counters_keep(const char *process)
{
    const char *dir = getenv("FLOEM_COUNTERS_DIR");
    if (dir == NULL || counters_file == NULL)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.counters", dir, process);
    struct floem_counters_header head;
    memcpy(&head, counters_file, sizeof head);
    head.queues_offset = counters_file_bytes;
    head.queues = (uint32_t)n_counted_queues;
    head.queue_bytes = (uint32_t)sizeof(struct floem_counters_queue);
    FILE *f = fopen(path, "wb");
    bool ok = f != NULL && fwrite(&head, sizeof head, 1, f) == 1 &&
              fwrite(counters_file + sizeof head, 1, counters_file_bytes - sizeof head, f) ==
                  counters_file_bytes - sizeof head;
    for (int i = 0; ok && i < n_counted_queues; i++) {
        struct floem_counters_queue q = {.instance = counted_queues[i].index};
        snprintf(q.name, sizeof q.name, "%s", counted_queues[i].name);
        floem_queue_stats(counted_queues[i].instance, &q.stats);
        ok = fwrite(&q, sizeof q, 1, f) == 1;
    }
    if (!ok)
        fprintf(stderr, "floem: cannot write the element counters to %s\n", path);
    if (f != NULL)
        fclose(f);
}

/* The next space-separated word of a layout line, copied into `word` (at most `size` bytes). */
static const char *next_word(const char *p, char *word, size_t size)
{
    size_t n = strcspn(p, " \n");
    snprintf(word, size, "%.*s", (int)n, p);
    return p[n] == ' ' ? p + n + 1 : p + n;
}

/* The value of an IN or ENDED field: "=I" (counter I), "+I,J,..." (their sum). */
static uint64_t field_value(const char *field, const uint64_t *counters)
{
    uint64_t sum = 0;
    for (const char *p = field + 1; *p != '\0';) {
        char *end;
        sum += counters[strtoul(p, &end, 10)];
        p = end + (*end == ',');
    }
    return sum;
}

void floem_counters_report(FILE *out, const char *process, const char *layout,
                           const uint64_t *counters)
{
    floem_counters_report_notes(out, process, layout, counters, NULL);
}

void floem_counters_report_notes(FILE *out, const char *process, const char *layout,
                                 const uint64_t *counters, const char *const *notes)
{
    size_t row = 0;
    fprintf(out, "floem: elements of process %s (packets):\n", process);
    fprintf(out, "floem:   %-28s %-20s %12s %12s  %s\n", "element", "segment", "in", "ended",
            "out");
    for (const char *p = layout; *p != '\0';) {
        char name[128], segment[128], in[512], ended[24], outs[512];
        p = next_word(p, name, sizeof name);
        p = next_word(p, segment, sizeof segment);
        p = next_word(p, in, sizeof in);
        p = next_word(p, ended, sizeof ended);
        p = next_word(p, outs, sizeof outs);
        p += *p == '\n';
        uint64_t sent = 0, packets = in[0] == '-' ? 0 : field_value(in, counters);
        char ports[1024] = "-";
        size_t used = 0;
        for (const char *o = outs; strcmp(outs, "-") != 0 && *o != '\0';) {
            size_t n = strcspn(o, ":");
            const char *next = o + n + 2;       /* "*": the port sends what comes in */
            uint64_t v = packets;
            if (o[n + 1] != '*') {
                char *end;
                v = counters[strtoul(o + n + 1, &end, 10)];
                next = end;
            }
            sent += v;
            used += (size_t)snprintf(ports + used, sizeof ports - used, "%s%.*s %llu",
                                     used ? ", " : "", (int)n, o, (unsigned long long)v);
            if (used >= sizeof ports)       /* cut short: stay inside the buffer */
                used = sizeof ports - 1;
            o = next + (*next == ',');
        }
        fprintf(out, "floem:   %-28s %-20s ", name, segment);
        if (in[0] == '-') {
            fprintf(out, "%12s %12s", "-", "-");
        } else {
            uint64_t none = ended[0] == '=' ? field_value(ended, counters)
                            : ended[0] == '~' && packets > sent ? packets - sent : 0;
            fprintf(out, "%12llu %12llu", (unsigned long long)packets, (unsigned long long)none);
        }
        fprintf(out, "  %s\n", ports);
        if (notes != NULL && notes[row] != NULL)
            fprintf(out, "floem:     %s\n", notes[row]);
        row++;
    }
}
