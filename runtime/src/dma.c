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
 * Data: bytes move at issue (with fault injection off), one 32-bit word at a time with
 * atomic accesses on the host side (single bytes where the host address or length is not
 * word-aligned).
 * A request's descriptors are applied in order. A read descriptor loads its words
 * first to last with acquire ordering (an entry's status word, then its payload); a
 * write descriptor stores them last to first with release ordering (a payload, then
 * the status word in front of it). Host memory is the program's shared memory, also
 * used by host threads with ordinary accesses; the engine acts as a device, not as a
 * C thread of the program, so the instructions it executes for its caller are not the
 * caller's work: they pause the NIC performance model's count (floem_count_pause).
 *
 * Fault injection (FLOEM_FAULTS, read by floem_dma_init; floem/dma.h lists the orderings
 * kept): the engine is *deferred*. An issue reserves the request's ring slot as above
 * (waiting until the device has finished the slot's previous request), draws its faults from
 * the engine's generator (under the lock, so in issue order), copies its descriptors into
 * the slot and publishes it. A device thread picks, among the requests not done yet, the one
 * due first that no earlier unfinished write holds back, waits for its due time (the model's
 * completion, plus a random delay when delayed), moves its data and marks it done; dma_done
 * reads that mark. Stalls are pauses (nanosleep) of the calling thread at fault points, drawn
 * from a generator of its own.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/dma.h"
#include "floem/runtime.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A 32-bit word of host memory, which may hold data of any type. */
typedef uint32_t __attribute__((may_alias)) bus_word_t;

/* What FLOEM_FAULTS asks for: probabilities, and the longest delay and stall. */
typedef struct {
    uint64_t seed;
    double dma_delay, dma_tear, stall;
    uint64_t dma_delay_ns, stall_ns;
} faults_t;

static const faults_t NO_FAULTS = {.seed = 1, .dma_delay_ns = 20000, .stall_ns = 200000};

/* A request of the deferred engine, in its ring slot. The issuer fills it while `published`
 * is not its id + 1, then publishes it; the device moves its data, then sets `done` to its
 * id + 1. The slot is filled again (by the request max_outstanding later) only after that. */
struct deferred {
    uint64_t published, done;
    uint64_t due_ns;
    unsigned n;
    bool writes;                /* holds a write descriptor: later requests wait for it */
    bool tear;
    floem_dma_desc_t *descs;    /* max_descriptors of them */
};

static struct {
    unsigned char *bus;         /* private mapping of host memory; NULL before floem_dma_init */
    size_t bytes;
    floem_dma_model_t model;
    int lock;                   /* spinlock over the timing state below */
    uint64_t issued;            /* requests issued so far (atomic: the device reads it) */
    uint64_t last_complete_ns;  /* completion time of the latest request */
    uint64_t *complete_ns;      /* ring of max_outstanding completion times, by issue number */
    floem_dma_stats_t stats;    /* updated with relaxed atomics */
    /* Fault injection. */
    faults_t faults;
    bool deferred;              /* requests move their data at completion, by the device */
    uint64_t random;            /* the issue generator (under the lock) */
    struct deferred *slots;     /* max_outstanding of them, when deferred */
    floem_dma_desc_t *slot_descs;
    pthread_t device;
    bool device_started;
    int device_stop, device_sleeping;
    pthread_mutex_t device_mutex;
    pthread_cond_t device_wake;
} engine = {.device_mutex = PTHREAD_MUTEX_INITIALIZER, .device_wake = PTHREAD_COND_INITIALIZER};

int floem_fault_stalls;
/* Stall generators: handed out one per thread, afresh after each floem_dma_init (generation). */
static uint64_t stall_streams, stall_generation;

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

/* splitmix64: the next number of the stream in *state. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* True with probability p. */
static bool happens(uint64_t *state, double p)
{
    return (double)(next_random(state) >> 11) * 0x1.0p-53 < p;
}

/* 1 to max, uniformly. */
static uint64_t up_to(uint64_t *state, uint64_t max)
{
    return 1 + next_random(state) % max;
}

/* The first number of the generator stream `stream` of the faults' seed. */
static uint64_t stream_start(uint64_t stream)
{
    uint64_t state = engine.faults.seed ^ (stream * 0xd1b54a32d192ed03ull);
    return next_random(&state);
}

static _Noreturn void faults_fail(const char *spec, const char *item, const char *need)
{
    fprintf(stderr, "floem: FLOEM_FAULTS=%s: %s: %s\n", spec, item, need);
    abort();
}

/* The value of `item` (name=value) as an integer in [min, max]. */
static uint64_t fault_count(const char *spec, const char *item, const char *value, uint64_t min,
                            uint64_t max, const char *need)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(value, &end, 10);
    if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 || n < min || n > max)
        faults_fail(spec, item, need);
    return n;
}

static double fault_probability(const char *spec, const char *item, const char *value)
{
    char *end;
    errno = 0;
    double p = strtod(value, &end);
    if (value[0] == '\0' || *end != '\0' || errno != 0 || !(p >= 0.0 && p <= 1.0))
        faults_fail(spec, item, "need a probability from 0 to 1");
    return p;
}

/* FLOEM_FAULTS: comma-separated name=value items (docs/nic.md, "Fault injection"). */
static faults_t faults_from_env(void)
{
    faults_t f = NO_FAULTS;
    const char *spec = getenv("FLOEM_FAULTS");
    if (spec == NULL || spec[0] == '\0')
        return f;
    char copy[512];
    if (strlen(spec) >= sizeof copy)
        faults_fail(spec, "the value", "too long");
    strcpy(copy, spec);
    for (char *save = NULL, *item = strtok_r(copy, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (eq == NULL)
            faults_fail(spec, item, "need name=value");
        *eq = '\0';
        const char *value = eq + 1;
        *eq = '=';
        size_t name = (size_t)(eq - item);
#define IS(key) (name == sizeof key - 1 && strncmp(item, key, name) == 0)
        if (IS("seed"))
            f.seed = fault_count(spec, item, value, 0, UINT64_MAX, "need a non-negative integer");
        else if (IS("dma_delay"))
            f.dma_delay = fault_probability(spec, item, value);
        else if (IS("dma_delay_ns"))
            f.dma_delay_ns = fault_count(spec, item, value, 1, 10000000000ull,
                                         "need nanoseconds from 1 to 10^10");
        else if (IS("dma_tear"))
            f.dma_tear = fault_probability(spec, item, value);
        else if (IS("stall"))
            f.stall = fault_probability(spec, item, value);
        else if (IS("stall_ns"))
            f.stall_ns = fault_count(spec, item, value, 1, 10000000000ull,
                                     "need nanoseconds from 1 to 10^10");
        else
            faults_fail(spec, item, "unknown fault (known: seed, dma_delay, dma_delay_ns, "
                                    "dma_tear, stall, stall_ns)");
#undef IS
    }
    return f;
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

static void start_device(void);
static void stop_device(void);

static void out_of_memory(void)
{
    fprintf(stderr, "floem: DMA engine: out of memory\n");
    abort();
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
    faults_t faults = faults_from_env();
    stop_device();
    uint64_t *ring = calloc(model->max_outstanding, sizeof *ring);
    if (ring == NULL)
        out_of_memory();
    free(engine.complete_ns);
    free(engine.slots);
    free(engine.slot_descs);
    engine.slots = NULL;
    engine.slot_descs = NULL;
    engine.bus = bus;
    engine.bytes = bytes;
    engine.model = *model;
    __atomic_store_n(&engine.issued, 0, __ATOMIC_RELAXED);
    engine.last_complete_ns = 0;
    engine.complete_ns = ring;
    memset(&engine.stats, 0, sizeof engine.stats);
    engine.faults = faults;
    engine.random = stream_start(0);
    engine.deferred = faults.dma_delay > 0.0 || faults.dma_tear > 0.0;
    __atomic_store_n(&floem_fault_stalls, faults.stall > 0.0, __ATOMIC_RELAXED);
    __atomic_store_n(&stall_streams, 0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&stall_generation, 1, __ATOMIC_RELAXED);
    if (engine.deferred) {
        size_t descs;
        if (__builtin_mul_overflow((size_t)model->max_outstanding, (size_t)model->max_descriptors,
                                   &descs))
            out_of_memory();
        engine.slots = calloc(model->max_outstanding, sizeof *engine.slots);
        engine.slot_descs = calloc(descs, sizeof *engine.slot_descs);
        if (engine.slots == NULL || engine.slot_descs == NULL)
            out_of_memory();
        for (uint32_t i = 0; i < model->max_outstanding; i++)
            engine.slots[i].descs = engine.slot_descs + (size_t)i * model->max_descriptors;
        start_device();
    }
    if (engine.deferred || faults.stall > 0.0)
        fprintf(stderr, "floem: nic: injecting faults: seed %llu, dma_delay %g (up to %llu ns), "
                "dma_tear %g, stall %g (up to %llu ns)\n", (unsigned long long)faults.seed,
                faults.dma_delay, (unsigned long long)faults.dma_delay_ns, faults.dma_tear,
                faults.stall, (unsigned long long)faults.stall_ns);
}

void floem_dma_stats(floem_dma_stats_t *out)
{
    out->requests = __atomic_load_n(&engine.stats.requests, __ATOMIC_RELAXED);
    out->descriptors = __atomic_load_n(&engine.stats.descriptors, __ATOMIC_RELAXED);
    out->bytes_read = __atomic_load_n(&engine.stats.bytes_read, __ATOMIC_RELAXED);
    out->bytes_written = __atomic_load_n(&engine.stats.bytes_written, __ATOMIC_RELAXED);
    out->busy_ns = __atomic_load_n(&engine.stats.busy_ns, __ATOMIC_RELAXED);
    out->wait_ns = __atomic_load_n(&engine.stats.wait_ns, __ATOMIC_RELAXED);
    out->delayed = __atomic_load_n(&engine.stats.delayed, __ATOMIC_RELAXED);
    out->torn = __atomic_load_n(&engine.stats.torn, __ATOMIC_RELAXED);
    out->stalls = __atomic_load_n(&engine.stats.stalls, __ATOMIC_RELAXED);
    out->stalled_ns = __atomic_load_n(&engine.stats.stalled_ns, __ATOMIC_RELAXED);
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

/* One unit of a torn read: a 4-byte word, or a byte at an unaligned edge; a device access
 * like floem_dma_device_read's, suppressed the same way. */
__attribute__((noinline)) static void floem_dma_device_read_unit(const unsigned char *bus,
                                                                 unsigned char *local,
                                                                 unsigned size)
{
    if (size == 4) {
        uint32_t w = __atomic_load_n((const bus_word_t *)bus, __ATOMIC_ACQUIRE);
        memcpy(local, &w, 4);
    } else {
        *local = __atomic_load_n(bus, __ATOMIC_ACQUIRE);
    }
}

static void device_write_unit(unsigned char *bus, const unsigned char *local, unsigned size)
{
    if (size == 4) {
        uint32_t w;
        memcpy(&w, local, 4);
        __atomic_store_n((bus_word_t *)bus, w, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(bus, *local, __ATOMIC_RELEASE);
    }
}

#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer reads its default suppressions from this hook: device reads of host
 * memory (see floem_dma_device_read). */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
    return "race:floem_dma_device_read\n"
           "race:floem_dma_device_read_unit\n";
}
#endif

/* Move a request's data as the engine does without faults: descriptors in order, reads
 * first to last, writes last to first. */
static void move_in_order(const floem_dma_desc_t *descs, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        unsigned char *bus = bus_bytes(&descs[i]);
        if (descs[i].write)
            device_write(bus, descs[i].local, descs[i].len);
        else
            floem_dma_device_read(bus, descs[i].local, descs[i].len);
    }
}

/* A descriptor's units: the bytes before its first 4-byte-aligned host address (`lead`), its
 * aligned words, and the bytes after them; `units` in all. */
typedef struct {
    uint64_t lead, words, units;
} units_t;

static units_t units_of(const unsigned char *bus, uint32_t len)
{
    uint64_t lead = (4 - ((uintptr_t)bus & 3)) & 3;
    if (lead > len)
        lead = len;
    uint64_t words = (len - lead) / 4;
    return (units_t){lead, words, len - 3 * words};
}

/* Byte offset and size (1 or 4) of unit k. */
static uint64_t unit_at(const units_t *u, uint64_t k, unsigned *size)
{
    *size = k >= u->lead && k < u->lead + u->words ? 4 : 1;
    return k < u->lead ? k : k < u->lead + u->words ? u->lead + 4 * (k - u->lead) : k + 3 * u->words;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* One descriptor of a torn request: a read loads its units in a random order (unit k is
 * unit (a k + b) mod units, a coprime with units), a write stores them first to last; the
 * device yields the core halfway through, so host threads may change memory meanwhile. */
static void move_torn(const floem_dma_desc_t *d, uint64_t *random)
{
    unsigned char *bus = bus_bytes(d);
    unsigned char *local = d->local;
    units_t u = units_of(bus, d->len);
    uint64_t a = 1, b = 0;
    if (!d->write && u.units > 1) {
        uint64_t range = u.units - 1 < (1u << 31) ? u.units - 1 : (1u << 31);
        do
            a = up_to(random, range);
        while (gcd(a, u.units) != 1);
        b = next_random(random) % u.units;
    }
    for (uint64_t k = 0; k < u.units; k++) {
        if (k == u.units / 2)
            sched_yield();
        unsigned size;
        uint64_t at = unit_at(&u, d->write ? k : (a * k + b) % u.units, &size);
        if (d->write)
            device_write_unit(bus + at, local + at, size);
        else
            floem_dma_device_read_unit(bus + at, local + at, size);
    }
}

/* The device moves a deferred request's data (torn: a request of reads only takes its
 * descriptors in a random order too; nothing orders the reads of one request). */
static void move_deferred(struct deferred *r, uint64_t *random)
{
    if (!r->tear) {
        move_in_order(r->descs, r->n);
        return;
    }
    if (!r->writes)
        for (unsigned i = r->n; i > 1; i--) {
            unsigned j = (unsigned)(next_random(random) % i);
            floem_dma_desc_t t = r->descs[i - 1];
            r->descs[i - 1] = r->descs[j];
            r->descs[j] = t;
        }
    for (unsigned i = 0; i < r->n; i++)
        move_torn(&r->descs[i], random);
}

/* Whether the deferred request `id` in slot `r` is done (its slot may hold a later one). */
static bool deferred_done(const struct deferred *r, uint64_t id)
{
    return __atomic_load_n(&r->done, __ATOMIC_ACQUIRE) > id;
}

/* Sleep until a request is issued after the first `head` ones, or the device must stop. An
 * issuer stores `issued` and then loads `device_sleeping`, the device stores the latter and
 * then loads the former, all sequentially consistent: one of them sees the other's store, so
 * either the device sees the request or the issuer wakes it (under the mutex it waits with). */
static void device_sleep(uint64_t head)
{
    pthread_mutex_lock(&engine.device_mutex);
    __atomic_store_n(&engine.device_sleeping, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&engine.device_stop, __ATOMIC_SEQ_CST) &&
           __atomic_load_n(&engine.issued, __ATOMIC_SEQ_CST) == head)
        pthread_cond_wait(&engine.device_wake, &engine.device_mutex);
    __atomic_store_n(&engine.device_sleeping, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&engine.device_mutex);
}

static void wake_device(void)
{
    pthread_mutex_lock(&engine.device_mutex);
    pthread_cond_broadcast(&engine.device_wake);
    pthread_mutex_unlock(&engine.device_mutex);
}

/* The device: completes deferred requests one at a time. Of the requests not done yet, in
 * issue order up to and including the first one holding a write (nothing passes an earlier
 * write), it takes the one due first, once its time has come. */
static void *device_main(void *arg)
{
    (void)arg;
    uint64_t random = stream_start(1);
    uint32_t cap = engine.model.max_outstanding;
    uint64_t head = 0;          /* every request before it is done */
    unsigned spins = 0;
    while (!__atomic_load_n(&engine.device_stop, __ATOMIC_ACQUIRE)) {
        uint64_t issued = __atomic_load_n(&engine.issued, __ATOMIC_SEQ_CST);
        while (head < issued && deferred_done(&engine.slots[head % cap], head))
            head++;
        if (head == issued) {
            device_sleep(head);
            continue;
        }
        struct deferred *next = NULL;
        uint64_t next_id = 0;
        for (uint64_t id = head; id < issued; id++) {
            struct deferred *r = &engine.slots[id % cap];
            if (deferred_done(r, id))
                continue;
            if (__atomic_load_n(&r->published, __ATOMIC_ACQUIRE) != id + 1)
                break;          /* still being issued: it may hold a write */
            if (next == NULL || r->due_ns < next->due_ns) {
                next = r;
                next_id = id;
            }
            if (r->writes)
                break;
        }
        if (next != NULL && now_ns() >= next->due_ns) {
            move_deferred(next, &random);
            __atomic_store_n(&next->done, next_id + 1, __ATOMIC_RELEASE);
            spins = 0;
        } else if (++spins % 64 == 0) {
            sched_yield();
        } else {
            floem_cpu_relax();
        }
    }
    return NULL;
}

static void start_device(void)
{
    __atomic_store_n(&engine.device_stop, 0, __ATOMIC_RELAXED);
    int err = pthread_create(&engine.device, NULL, device_main, NULL);
    if (err != 0) {
        fprintf(stderr, "floem: DMA engine: cannot start the device thread: %s\n", strerror(err));
        abort();
    }
    engine.device_started = true;
}

static void stop_device(void)
{
    if (!engine.device_started)
        return;
    __atomic_store_n(&engine.device_stop, 1, __ATOMIC_SEQ_CST);
    wake_device();
    pthread_join(engine.device, NULL);
    engine.device_started = false;
}

/* Wait (yielding the core: the device thread needs one) until deferred request `id` in slot
 * `r` is done; counts the time in wait_ns. */
static void wait_deferred(const struct deferred *r, uint64_t id)
{
    if (deferred_done(r, id))
        return;
    uint64_t start = now_ns();
    for (unsigned spins = 1; !deferred_done(r, id); spins++) {
        if (spins % 64 == 0)
            sched_yield();
        else
            floem_cpu_relax();
    }
    __atomic_fetch_add(&engine.stats.wait_ns, now_ns() - start, __ATOMIC_RELAXED);
}

/* Check a request; sets the bytes it reads and writes and whether it holds a write. */
static void check_request(const floem_dma_desc_t *descs, unsigned n, uint64_t *read,
                          uint64_t *written, bool *writes)
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
    *read = *written = 0;
    *writes = false;
    for (unsigned i = 0; i < n; i++) {
        bus_bytes(&descs[i]);
        if (descs[i].write) {
            *written += descs[i].len;
            *writes = true;
        } else {
            *read += descs[i].len;
        }
    }
}

/* Check, time and start one request: without faults its data moves now; deferred, the
 * device moves it when it completes. */
static void issue(const floem_dma_desc_t *descs, unsigned n, floem_dma_req_t *req)
{
    uint64_t read, written;
    bool writes;
    check_request(descs, n, &read, &written, &writes);
    uint64_t service_ns = engine.model.latency_ns +
                          (uint64_t)((double)(read + written) / engine.model.bytes_per_ns);

    lock_engine();
    uint64_t id = engine.issued;
    if (engine.deferred)        /* sequentially consistent: see device_sleep */
        __atomic_store_n(&engine.issued, id + 1, __ATOMIC_SEQ_CST);
    else
        __atomic_store_n(&engine.issued, id + 1, __ATOMIC_RELAXED);
    uint32_t s = (uint32_t)(id % engine.model.max_outstanding);
    uint64_t now = now_ns();
    uint64_t start = engine.complete_ns[s] > now ? engine.complete_ns[s] : now;
    uint64_t ready = start + engine.model.latency_ns;
    uint64_t complete = (ready > engine.last_complete_ns ? ready : engine.last_complete_ns) +
                        (service_ns - engine.model.latency_ns);
    engine.complete_ns[s] = complete;
    engine.last_complete_ns = complete;
    uint64_t delay = 0;
    bool tear = false;
    if (engine.deferred) {
        if (happens(&engine.random, engine.faults.dma_delay))
            delay = up_to(&engine.random, engine.faults.dma_delay_ns);
        tear = happens(&engine.random, engine.faults.dma_tear);
    }
    unlock_engine();

    __atomic_fetch_add(&engine.stats.requests, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&engine.stats.descriptors, n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&engine.stats.bytes_read, read, __ATOMIC_RELAXED);
    __atomic_fetch_add(&engine.stats.bytes_written, written, __ATOMIC_RELAXED);
    __atomic_fetch_add(&engine.stats.busy_ns, service_ns, __ATOMIC_RELAXED);
    *req = (floem_dma_req_t){.complete_at_ns = complete + delay, .id = id,
                             .bytes = read + written, .slot = s, .pending = true};
    if (!engine.deferred) {
        spin_until(start);
        move_in_order(descs, n);
        return;
    }
    struct deferred *r = &engine.slots[s];
    if (id >= engine.model.max_outstanding)
        wait_deferred(r, id - engine.model.max_outstanding);
    r->due_ns = complete + delay;
    r->n = n;
    r->writes = writes;
    r->tear = tear;
    memcpy(r->descs, descs, n * sizeof *descs);
    __atomic_store_n(&r->published, id + 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&engine.device_sleeping, __ATOMIC_SEQ_CST))
        wake_device();
    if (delay > 0)
        __atomic_fetch_add(&engine.stats.delayed, 1, __ATOMIC_RELAXED);
    if (tear)
        __atomic_fetch_add(&engine.stats.torn, 1, __ATOMIC_RELAXED);
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
    floem_count_pause();
    floem_fault_point();
    issue(descs, n, req);
    floem_count_resume();
}

bool dma_done(floem_dma_req_t *req)
{
    floem_count_pause();                /* polling the engine: the count stays exact */
    if (req->pending && (engine.deferred ? deferred_done(&engine.slots[req->slot], req->id)
                                         : now_ns() >= req->complete_at_ns))
        req->pending = false;
    floem_count_resume();
    return !req->pending;
}

void dma_wait(floem_dma_req_t *req)
{
    if (req->pending) {
        floem_thread_dma_waits++;       /* a round trip the calling core waits for */
        floem_thread_dma_bytes += req->bytes;
        floem_count_pause();
        if (engine.deferred)
            wait_deferred(&engine.slots[req->slot], req->id);
        else
            spin_until(req->complete_at_ns);
        floem_count_resume();
    }
    req->pending = false;
}

/* A fault point that stalls: pause for 1 to stall_ns ns with probability `stall`, drawn from
 * the calling thread's own generator (a stream per thread, in the order threads first get
 * here, started again by each floem_dma_init). */
void floem_fault_stall(void)
{
    static _Thread_local uint64_t random, generation;
    uint64_t g = __atomic_load_n(&stall_generation, __ATOMIC_RELAXED);
    if (generation != g) {
        random = stream_start(2 + __atomic_fetch_add(&stall_streams, 1, __ATOMIC_RELAXED));
        generation = g;
    }
    if (!happens(&random, engine.faults.stall))
        return;
    uint64_t ns = up_to(&random, engine.faults.stall_ns);
    struct timespec t = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        continue;
    __atomic_fetch_add(&engine.stats.stalls, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&engine.stats.stalled_ns, ns, __ATOMIC_RELAXED);
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
    if (engine.deferred || engine.faults.stall > 0.0)
        fprintf(out, "floem: nic faults: seed %llu, delayed %llu, torn %llu, stalls %llu, "
                     "stalled %llu ns\n", (unsigned long long)engine.faults.seed,
                (unsigned long long)s.delayed, (unsigned long long)s.torn,
                (unsigned long long)s.stalls, (unsigned long long)s.stalled_ns);
}
