/* Floem emulated NIC: the DMA engine, the NIC's only way to host memory.
 *
 * The NIC process does not map host memory where its code can reach it.
 * Host memory is named by *host (bus) addresses*: FLOEM_HOST_BASE + offset
 * into the memory every process of the program shares. Those addresses are
 * non-canonical on x86-64 and outside the user address space of the NIC
 * platforms, so dereferencing one faults, as it would on a real SmartNIC.
 * Only the engine, which holds a private mapping of the shared memory (the
 * "PCIe bus"), moves bytes between host addresses and NIC memory.
 *
 * The engine enforces a cost model by busy time (spinning on a monotonic
 * clock, never sleeping): a request of one or more descriptors completes
 *     max(issue + latency, previous completion) + bytes / bandwidth
 * after its issue, at most `max_outstanding` requests are in flight (issuing
 * more waits for the oldest), and a request holds at most `max_descriptors`
 * descriptors. Requests, descriptors, bytes and busy time are counted.
 *
 * Bytes move 32-bit words at a time where the host address allows, with atomic
 * accesses to host memory: a read descriptor loads first to last with acquire
 * ordering (the bytes after a status word are read after it), a write descriptor
 * stores last to first with release ordering (a status word in front of a record
 * is stored after the record). Code meant for real hardware should rely only on
 * the order between descriptors, as the sync layer does. Reading host memory that
 * a host thread is writing (prefetching an entry not yet published) is a device
 * access; ThreadSanitizer builds of the engine suppress reports of it (the engine
 * defines __tsan_default_suppressions). The engine is thread-safe; floem_dma_init
 * must come before any transfer and may be called again only while none is in
 * flight.
 */
#ifndef FLOEM_DMA_H
#define FLOEM_DMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* First host (bus) address; host address of shared-memory offset `o` is FLOEM_HOST_BASE + o.
 * Host addresses are passed around as pointers (so a NIC body can hold `Tracker *t` for a
 * host-resident state), but only the engine may turn them into bytes. */
#define FLOEM_HOST_BASE 0xf100000000000000ull

typedef struct {
    uint64_t latency_ns;        /* per request (a PCIe round trip); default 1000 */
    double bytes_per_ns;        /* bandwidth; default 8.0 (8 GB/s, PCIe Gen3 x8) */
    uint32_t max_descriptors;   /* per request; default 16 */
    uint32_t max_outstanding;   /* requests in flight; default 8 */
} floem_dma_model_t;

typedef struct {
    uint64_t requests, descriptors, bytes_read, bytes_written;
    uint64_t busy_ns;           /* modelled service time: latency + bytes / bandwidth per request */
    uint64_t wait_ns;           /* time callers spun: issuing behind the outstanding limit, dma_wait */
} floem_dma_stats_t;

/* One transfer of a request: `len` bytes between host address `host` and NIC memory `local`. */
typedef struct {
    void *host;
    void *local;
    uint32_t len;
    bool write;                 /* true: NIC memory -> host; false: host -> NIC memory */
} floem_dma_desc_t;

/* An asynchronous request; owned by the caller until dma_done() returns true or dma_wait() returns.
 * A zero-filled request counts as done. */
typedef struct {
    uint64_t complete_at_ns;    /* CLOCK_MONOTONIC time at which the model completes it */
    uint32_t slot;              /* its place in the engine's ring of in-flight requests */
    bool pending;
} floem_dma_req_t;

/* The model: defaults, overridden by FLOEM_DMA_LATENCY_NS, FLOEM_DMA_GBPS (bytes/ns),
 * FLOEM_DMA_DESCRIPTORS and FLOEM_DMA_OUTSTANDING when set. */
floem_dma_model_t floem_dma_model_from_env(void);
/* Start the engine over `bytes` of host memory mapped (privately, by the runtime) at `bus`,
 * with zeroed counters. Every descriptor must lie inside [FLOEM_HOST_BASE, FLOEM_HOST_BASE +
 * bytes); the engine aborts with a message on one that does not, or on a request of zero or
 * more than max_descriptors descriptors. */
void floem_dma_init(void *bus, size_t bytes, const floem_dma_model_t *model);
void floem_dma_stats(floem_dma_stats_t *out);
/* One line of the engine's counters: "floem: nic dma: requests ..., ...". */
void floem_dma_report(FILE *out);
const floem_dma_model_t *floem_dma_model(void);

/* Blocking transfers: return when the bytes have arrived. */
void dma_read(const void *host, size_t len, void *local);
void dma_write(void *host, size_t len, const void *local);
/* Asynchronous transfers (one descriptor, or `n` <= max_descriptors in one request). The
 * data movement happens at issue; the request completes when the model says so. Descriptors
 * of one request are applied in order, with release ordering between them, so a status word
 * written by the last descriptor becomes visible after the payload written before it. */
void dma_read_async(const void *host, size_t len, void *local, floem_dma_req_t *req);
void dma_write_async(void *host, size_t len, const void *local, floem_dma_req_t *req);
void dma_submit(const floem_dma_desc_t *descs, unsigned n, floem_dma_req_t *req);
bool dma_done(floem_dma_req_t *req);
void dma_wait(floem_dma_req_t *req);
/* NIC memory usable as DMA buffers (64-byte aligned, zeroed; aborts when out of memory). */
void *dma_buf_alloc(size_t len);
void dma_free(void *buf);

/* Byte order of data crossing host <-> NIC: the wire order is the host's (little-endian). */
static inline uint16_t floem_wire16(uint16_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap16(v);
#else
    return v;
#endif
}
static inline uint32_t floem_wire32(uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap32(v);
#else
    return v;
#endif
}
static inline uint64_t floem_wire64(uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(v);
#else
    return v;
#endif
}

#endif
