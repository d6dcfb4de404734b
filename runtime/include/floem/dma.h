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
 *
 * Fault injection (docs/nic.md, "Fault injection"): with FLOEM_FAULTS set when
 * floem_dma_init runs, requests may complete late and out of order, a request's words may
 * move in another order, and NIC threads may pause at fault points, all drawn from a seeded
 * generator, within what PCIe allows. Then a device thread moves each request's data when
 * the request completes (not at issue); the orderings it keeps are:
 *   - posted writes in issue order: a request holding a write completes after every earlier
 *     request holding a write, and its write descriptors apply in order;
 *   - a read does not pass an earlier write: a request completes after every earlier
 *     request holding a write;
 *   - nothing else: reads complete in any order among themselves, and writes may pass reads.
 * Within a request ("dma_tear"), a read's 4-byte words are loaded in any order (its
 * descriptors too), which a single PCIe read allows against concurrent host updates; a
 * write descriptor stores first to last (increasing addresses, as PCIe orders the data of a
 * write without relaxed ordering) instead of the engine's last to first. Off (FLOEM_FAULTS
 * unset or empty), the engine is the one described above and the fault points cost a load
 * and a branch.
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
    /* Fault injection (all 0 when it is off): requests held back, requests whose words moved
     * in another order, pauses of NIC threads at fault points and their total length. */
    uint64_t delayed, torn, stalls, stalled_ns;
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
    uint64_t id;                /* its issue number */
    uint64_t bytes;             /* read and written */
    uint32_t slot;              /* its place in the engine's ring of in-flight requests */
    bool pending;
} floem_dma_req_t;

/* The model: defaults, overridden by FLOEM_DMA_LATENCY_NS, FLOEM_DMA_GBPS (bytes/ns),
 * FLOEM_DMA_DESCRIPTORS and FLOEM_DMA_OUTSTANDING when set. */
floem_dma_model_t floem_dma_model_from_env(void);
/* Start the engine over `bytes` of host memory mapped (privately, by the runtime) at `bus`,
 * with zeroed counters, and with the faults FLOEM_FAULTS asks for (aborts with a message
 * naming the variable on a malformed value). Every descriptor must lie inside
 * [FLOEM_HOST_BASE, FLOEM_HOST_BASE + bytes); the engine aborts with a message on one that
 * does not, or on a request of zero or more than max_descriptors descriptors. */
void floem_dma_init(void *bus, size_t bytes, const floem_dma_model_t *model);
void floem_dma_stats(floem_dma_stats_t *out);
/* One line of the engine's counters: "floem: nic dma: requests ..., ..."; with fault injection
 * on, a second one: "floem: nic faults: ...". */
void floem_dma_report(FILE *out);
const floem_dma_model_t *floem_dma_model(void);

/* Blocking transfers: return when the bytes have arrived. */
void dma_read(const void *host, size_t len, void *local);
void dma_write(void *host, size_t len, const void *local);
/* Asynchronous transfers (one descriptor, or `n` <= max_descriptors in one request). The
 * data movement happens at issue (with fault injection: when the request completes); the
 * request completes when the model says so. Descriptors of one request are applied in order,
 * with release ordering between them, so a status word written by the last descriptor
 * becomes visible after the payload written before it. The caller's NIC buffers belong to
 * the request until it is done. */
void dma_read_async(const void *host, size_t len, void *local, floem_dma_req_t *req);
void dma_write_async(void *host, size_t len, const void *local, floem_dma_req_t *req);
void dma_submit(const floem_dma_desc_t *descs, unsigned n, floem_dma_req_t *req);
bool dma_done(floem_dma_req_t *req);
void dma_wait(floem_dma_req_t *req);
/* NIC memory usable as DMA buffers (64-byte aligned, zeroed; aborts when out of memory). */
void *dma_buf_alloc(size_t len);
void dma_free(void *buf);

/* Fault points: a NIC thread may pause here when FLOEM_FAULTS has `stall` (the sync layer's
 * worker and manager routines and every DMA issue call it); a load and a branch otherwise. */
extern int floem_fault_stalls;
void floem_fault_stall(void);
static inline void floem_fault_point(void)
{
    if (__builtin_expect(__atomic_load_n(&floem_fault_stalls, __ATOMIC_RELAXED) != 0, 0))
        floem_fault_stall();
}

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
