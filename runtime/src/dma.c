/* The emulated NIC's DMA engine: bounds-checked copies between host addresses and
 * NIC memory, paced by the cost model of floem/dma.h.
 *
 * Timing: the engine keeps the completion times of the last `max_outstanding`
 * requests in a ring indexed by issue number. A new request takes the ring slot of
 * the request issued `max_outstanding` before it, so it is issued once that one
 * has completed (the caller spins until then), and completes at
 *     max(issue + latency, previous completion) + bytes / bandwidth.
 * Completion times never decrease, so the request in a slot is always the oldest
 * that can still be in flight. Only that bookkeeping is under the engine's lock;
 * callers spin and copy outside it, so several NIC threads overlap their requests.
 *
 * Data: bytes move at issue, one 32-bit word at a time with atomic accesses on the
 * host side (single bytes where the host address or length is not word-aligned).
 * A request's descriptors are applied in order. A read descriptor loads its words
 * first to last with acquire ordering (an entry's status word, then its payload); a
 * write descriptor stores them last to first with release ordering (a payload, then
 * the status word in front of it). Host memory is the program's shared memory, also
 * used by host threads with ordinary accesses; the engine acts as a device, not as a
 * C thread of the program, so the instructions it executes for its caller are not the
 * caller's work: they pause the NIC performance model's count (floem_count_pause).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/dma.h"
#include "floem/runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A 32-bit word of host memory, which may hold data of any type. */
typedef uint32_t __attribute__((may_alias)) bus_word_t;

static struct {
    unsigned char *bus;         /* private mapping of host memory; NULL before floem_dma_init */
    size_t bytes;
    floem_dma_model_t model;
    int lock;                   /* spinlock over the timing state below */
    uint64_t issued;            /* requests issued so far */
    uint64_t last_complete_ns;  /* completion time of the latest request */
    uint64_t *complete_ns;      /* ring of max_outstanding completion times, by issue number */
    floem_dma_stats_t stats;    /* updated with relaxed atomics */
} engine;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spin (never sleep) until the monotonic clock reaches `t`; counts the time in wait_ns. */
static void spin_until(uint64_t t)
{
    uint64_t start = now_ns(), now = start;
    while (now < t) {
        floem_cpu_relax();
        now = now_ns();
    }
    if (now > start)
        __atomic_fetch_add(&engine.stats.wait_ns, now - start, __ATOMIC_RELAXED);
}

static void lock_engine(void)
{
    while (__atomic_exchange_n(&engine.lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&engine.lock, __ATOMIC_RELAXED))
            floem_cpu_relax();
}

static void unlock_engine(void)
{
    __atomic_store_n(&engine.lock, 0, __ATOMIC_RELEASE);
}

static void env_fail(const char *name, const char *value, const char *need)
{
    fprintf(stderr, "floem: %s=%s: need %s\n", name, value, need);
    abort();
}

/* An environment override of a positive integer, or `fallback` when unset. */
static uint64_t env_count(const char *name, uint64_t fallback, uint64_t max)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0')
        return fallback;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0' || v[0] == '-' || n > max)
        env_fail(name, v, "a non-negative integer in range");
    return n;
}

floem_dma_model_t floem_dma_model_from_env(void)
{
    floem_dma_model_t m = {.latency_ns = 1000, .bytes_per_ns = 8.0, .max_descriptors = 16,
                           .max_outstanding = 8};
    m.latency_ns = env_count("FLOEM_DMA_LATENCY_NS", m.latency_ns, UINT64_MAX / 4);
    const char *gbps = getenv("FLOEM_DMA_GBPS");
    if (gbps != NULL && gbps[0] != '\0') {
        char *end;
        errno = 0;
        m.bytes_per_ns = strtod(gbps, &end);
        if (errno != 0 || *end != '\0' || !(m.bytes_per_ns > 0.0))
            env_fail("FLOEM_DMA_GBPS", gbps, "a positive number of bytes per ns (GB/s)");
    }
    m.max_descriptors = (uint32_t)env_count("FLOEM_DMA_DESCRIPTORS", m.max_descriptors, UINT32_MAX);
    m.max_outstanding = (uint32_t)env_count("FLOEM_DMA_OUTSTANDING", m.max_outstanding, 1u << 20);
    return m;
}

void floem_dma_init(void *bus, size_t bytes, const floem_dma_model_t *model)
{
    if (bus == NULL || model->max_descriptors == 0 || model->max_outstanding == 0 ||
        model->max_outstanding > (1u << 20) || !(model->bytes_per_ns > 0.0)) {
        fprintf(stderr, "floem: bad DMA engine setup: bus %p, %u descriptors, %u outstanding, "
                "%g bytes/ns\n", bus, model->max_descriptors, model->max_outstanding,
                model->bytes_per_ns);
        abort();
    }
    uint64_t *ring = calloc(model->max_outstanding, sizeof *ring);
    if (ring == NULL) {
        fprintf(stderr, "floem: DMA engine: out of memory\n");
        abort();
    }
    free(engine.complete_ns);
    engine.bus = bus;
    engine.bytes = bytes;
    engine.model = *model;
    engine.issued = 0;
    engine.last_complete_ns = 0;
    engine.complete_ns = ring;
    memset(&engine.stats, 0, sizeof engine.stats);
}

void floem_dma_stats(floem_dma_stats_t *out)
{
    out->requests = __atomic_load_n(&engine.stats.requests, __ATOMIC_RELAXED);
    out->descriptors = __atomic_load_n(&engine.stats.descriptors, __ATOMIC_RELAXED);
    out->bytes_read = __atomic_load_n(&engine.stats.bytes_read, __ATOMIC_RELAXED);
    out->bytes_written = __atomic_load_n(&engine.stats.bytes_written, __ATOMIC_RELAXED);
    out->busy_ns = __atomic_load_n(&engine.stats.busy_ns, __ATOMIC_RELAXED);
    out->wait_ns = __atomic_load_n(&engine.stats.wait_ns, __ATOMIC_RELAXED);
}

const floem_dma_model_t *floem_dma_model(void)
{
    return &engine.model;
}

/* The engine's own pointer to a descriptor's host bytes; aborts unless all of them are host
 * memory. */
static unsigned char *bus_bytes(const floem_dma_desc_t *d)
{
    uintptr_t addr = (uintptr_t)d->host;
    uintptr_t base = (uintptr_t)FLOEM_HOST_BASE;
    if (addr < base || addr - base > engine.bytes || d->len > engine.bytes - (addr - base)) {
        fprintf(stderr, "floem: DMA %s of %u bytes at host address %p is outside host memory "
                "[%p, %p)\n", d->write ? "write" : "read", d->len, d->host, (void *)base,
                (void *)(base + engine.bytes));
        abort();
    }
    if (d->local == NULL && d->len > 0) {
        fprintf(stderr, "floem: DMA %s of %u bytes at host address %p has no NIC buffer\n",
                d->write ? "write" : "read", d->len, d->host);
        abort();
    }
    return engine.bus + (addr - base);
}

/* Host -> NIC memory. Acquire loads first to last: bytes after a status word are read
 * after it. Host threads may be writing bytes the device reads (an entry not yet published,
 * which its reader discards); that is a device access, not a race between C threads, so
 * ThreadSanitizer builds suppress reports from this function (see below). */
__attribute__((noinline)) static void floem_dma_device_read(const unsigned char *bus,
                                                            unsigned char *local, size_t len)
{
    for (; len > 0 && ((uintptr_t)bus & 3) != 0; len--)
        *local++ = __atomic_load_n(bus++, __ATOMIC_ACQUIRE);
    for (; len >= 4; len -= 4, bus += 4, local += 4) {
        uint32_t w = __atomic_load_n((const bus_word_t *)bus, __ATOMIC_ACQUIRE);
        memcpy(local, &w, 4);
    }
    for (; len > 0; len--)
        *local++ = __atomic_load_n(bus++, __ATOMIC_ACQUIRE);
}

/* NIC memory -> host. Release stores from the last byte back to the first, so a record's
 * leading status word is stored after the bytes that follow it: a host thread that sees the
 * status (with acquire) sees the record, whatever order it reaches the records in. */
static void device_write(unsigned char *bus, const unsigned char *local, size_t len)
{
    unsigned char *end = bus + len;
    const unsigned char *from = local + len;
    for (; end > bus && ((uintptr_t)end & 3) != 0; end--)
        __atomic_store_n(end - 1, *--from, __ATOMIC_RELEASE);
    for (; end - bus >= 4; end -= 4) {
        uint32_t w;
        from -= 4;
        memcpy(&w, from, 4);
        __atomic_store_n((bus_word_t *)(end - 4), w, __ATOMIC_RELEASE);
    }
    for (; end > bus; end--)
        __atomic_store_n(end - 1, *--from, __ATOMIC_RELEASE);
}

#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer reads its default suppressions from this hook: device reads of host
 * memory (see floem_dma_device_read). */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
    return "race:floem_dma_device_read\n";
}
#endif

static uint64_t apply(const floem_dma_desc_t *descs, unsigned n, uint32_t *slot);

/* Check, time and apply one request; returns its completion time. */
static uint64_t issue(const floem_dma_desc_t *descs, unsigned n, uint32_t *slot)
{
    floem_count_pause();
    uint64_t complete = apply(descs, n, slot);
    floem_count_resume();
    return complete;
}

static uint64_t apply(const floem_dma_desc_t *descs, unsigned n, uint32_t *slot)
{
    if (engine.bus == NULL) {
        fprintf(stderr, "floem: DMA before floem_dma_init\n");
        abort();
    }
    if (n == 0 || n > engine.model.max_descriptors) {
        fprintf(stderr, "floem: DMA request of %u descriptors (the engine takes 1 to %u)\n", n,
                engine.model.max_descriptors);
        abort();
    }
    uint64_t read = 0, written = 0;
    for (unsigned i = 0; i < n; i++) {
        bus_bytes(&descs[i]);
        if (descs[i].write)
            written += descs[i].len;
        else
            read += descs[i].len;
    }
    uint64_t service_ns = engine.model.latency_ns +
                          (uint64_t)((double)(read + written) / engine.model.bytes_per_ns);

    lock_engine();
    uint32_t s = (uint32_t)(engine.issued++ % engine.model.max_outstanding);
    uint64_t now = now_ns();
    uint64_t start = engine.complete_ns[s] > now ? engine.complete_ns[s] : now;
    uint64_t ready = start + engine.model.latency_ns;
    uint64_t complete = (ready > engine.last_complete_ns ? ready : engine.last_complete_ns) +
                        (service_ns - engine.model.latency_ns);
    engine.complete_ns[s] = complete;
    engine.last_complete_ns = complete;
    unlock_engine();

    spin_until(start);
    for (unsigned i = 0; i < n; i++) {
        unsigned char *bus = bus_bytes(&descs[i]);
        if (descs[i].write)
            device_write(bus, descs[i].local, descs[i].len);
        else
            floem_dma_device_read(bus, descs[i].local, descs[i].len);
    }
    __atomic_fetch_add(&engine.stats.requests, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&engine.stats.descriptors, n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&engine.stats.bytes_read, read, __ATOMIC_RELAXED);
    __atomic_fetch_add(&engine.stats.bytes_written, written, __ATOMIC_RELAXED);
    __atomic_fetch_add(&engine.stats.busy_ns, service_ns, __ATOMIC_RELAXED);
    *slot = s;
    return complete;
}

/* One descriptor; aborts on a length the descriptor cannot hold. */
static floem_dma_desc_t one(const void *host, size_t len, const void *local, bool write)
{
    if (len > UINT32_MAX) {
        fprintf(stderr, "floem: DMA of %zu bytes (at most %u per descriptor)\n", len, UINT32_MAX);
        abort();
    }
    return (floem_dma_desc_t){.host = (void *)(uintptr_t)host, .local = (void *)(uintptr_t)local,
                              .len = (uint32_t)len, .write = write};
}

void dma_submit(const floem_dma_desc_t *descs, unsigned n, floem_dma_req_t *req)
{
    req->complete_at_ns = issue(descs, n, &req->slot);
    req->pending = true;
}

bool dma_done(floem_dma_req_t *req)
{
    if (req->pending && now_ns() >= req->complete_at_ns)
        req->pending = false;
    return !req->pending;
}

void dma_wait(floem_dma_req_t *req)
{
    if (req->pending) {
        floem_count_pause();
        spin_until(req->complete_at_ns);
        floem_count_resume();
    }
    req->pending = false;
}

void dma_read_async(const void *host, size_t len, void *local, floem_dma_req_t *req)
{
    floem_dma_desc_t d = one(host, len, local, false);
    dma_submit(&d, 1, req);
}

void dma_write_async(void *host, size_t len, const void *local, floem_dma_req_t *req)
{
    floem_dma_desc_t d = one(host, len, local, true);
    dma_submit(&d, 1, req);
}

void dma_read(const void *host, size_t len, void *local)
{
    floem_dma_req_t req;
    dma_read_async(host, len, local, &req);
    dma_wait(&req);
}

void dma_write(void *host, size_t len, const void *local)
{
    floem_dma_req_t req;
    dma_write_async(host, len, local, &req);
    dma_wait(&req);
}

void *dma_buf_alloc(size_t len)
{
    size_t rounded = len == 0 ? 64 : (len + 63) & ~(size_t)63;
    void *buf = rounded < len ? NULL : aligned_alloc(64, rounded);
    if (buf == NULL) {
        fprintf(stderr, "floem: dma_buf_alloc(%zu): out of memory\n", len);
        abort();
    }
    memset(buf, 0, rounded);
    return buf;
}

void dma_free(void *buf)
{
    free(buf);
}

void floem_dma_report(FILE *out)
{
    floem_dma_stats_t s;
    floem_dma_stats(&s);
    fprintf(out, "floem: nic dma: requests %llu, descriptors %llu, bytes read %llu, "
                 "bytes written %llu, busy %llu ns, waited %llu ns\n",
            (unsigned long long)s.requests, (unsigned long long)s.descriptors,
            (unsigned long long)s.bytes_read, (unsigned long long)s.bytes_written,
            (unsigned long long)s.busy_ns, (unsigned long long)s.wait_ns);
}
