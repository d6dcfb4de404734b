/* Tests of the emulated NIC's DMA engine (floem/dma.h).
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -pthread -Iruntime/include
 *        runtime/tests/test_dma.c runtime/src/dma.c runtime/src/count.c -o test_dma
 * Bounds and request-shape errors, the environment model and host-address
 * faults run in child processes. Timing checks use lower bounds only (the
 * model must hold the caller at least that long), plus exact counters.
 * Fault injection (FLOEM_FAULTS, set by the cases that use it): malformed
 * values, the orderings the deferred engine keeps whatever the delays, every
 * byte moved by torn requests, reproducible decisions, and threads under
 * every fault at once.
 * Prints "ok: N checks" and exits 0, or names the failed check and aborts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/dma.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* Host memory of the tests: the engine's "bus" mapping of it. */
#define HOST_BYTES (1u << 20)
static unsigned char *host_mem;

/* The host address of byte `offset` of host memory. */
static void *host(size_t offset)
{
    return (void *)(uintptr_t)(FLOEM_HOST_BASE + offset);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* (Re)start the engine over zeroed host memory with the given model. */
static void start(uint64_t latency_ns, double bytes_per_ns, uint32_t descriptors,
                  uint32_t outstanding)
{
    memset(host_mem, 0, HOST_BYTES);
    floem_dma_model_t m = {latency_ns, bytes_per_ns, descriptors, outstanding};
    floem_dma_init(host_mem, HOST_BYTES, &m);
}

static void transfer_before_init(void)
{
    char b[4];
    dma_read(host(0), 4, b);
}

static void read_below_base(void)
{
    char b[8];
    dma_read((void *)(uintptr_t)(FLOEM_HOST_BASE - 8), 8, b);
}

static void write_past_end(void)
{
    char b[8] = {0};
    dma_write(host(HOST_BYTES), 1, b);
}

static void read_straddling_end(void)
{
    char b[16];
    dma_read(host(HOST_BYTES - 8), 16, b);
}

static void read_host_pointer(void)
{
    char b[8];
    dma_read(host_mem, 8, b);
}

/* A request whose second descriptor is out of bounds: nothing of it may be applied. */
static void bad_second_descriptor(void)
{
    char b[4] = "abc";
    floem_dma_desc_t d[2] = {{host(0), b, 4, true}, {host(HOST_BYTES - 2), b, 4, true}};
    floem_dma_req_t req;
    dma_submit(d, 2, &req);
}

static void too_many_descriptors(void)
{
    char b[64];
    floem_dma_desc_t d[5];
    for (int i = 0; i < 5; i++)
        d[i] = (floem_dma_desc_t){host((size_t)i * 8), b + i * 8, 8, false};
    floem_dma_req_t req;
    dma_submit(d, 5, &req);
}

static void empty_request(void)
{
    floem_dma_req_t req;
    dma_submit(NULL, 0, &req);
}

static void dereference_host_address(void)
{
    volatile unsigned char *p = host(64);
    CHECK(*p == 0);
}

/* Before floem_dma_init (run first of all). */
static void test_uninitialised(void)
{
    expect_abort(transfer_before_init, "DMA before floem_dma_init");
}

static void test_bounds(void)
{
    start(0, 1e9, 4, 8);
    expect_abort(read_below_base, "outside host memory");
    expect_abort(write_past_end, "DMA write of 1 bytes");
    expect_abort(read_straddling_end, "DMA read of 16 bytes");
    expect_abort(read_host_pointer, "outside host memory");
    expect_abort(bad_second_descriptor, "outside host memory");
    expect_abort(too_many_descriptors, "request of 5 descriptors");
    expect_abort(empty_request, "request of 0 descriptors");
    /* The last byte and a zero-length transfer at the end are inside. */
    char b[2] = {7, 0};
    dma_write(host(HOST_BYTES - 1), 1, b);
    CHECK(host_mem[HOST_BYTES - 1] == 7);
    dma_read(host(HOST_BYTES), 0, b);
    /* Refused requests moved nothing. */
    CHECK(host_mem[0] == 0);
}

/* A host address is not a pointer the NIC can use: dereferencing one must fail. */
static void test_host_address_faults(void)
{
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(open("/dev/null", O_WRONLY), 2);
        dereference_host_address();
        _exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

static void test_buffers(void)
{
    const size_t sizes[] = {0, 1, 63, 64, 65, 1000, 4096, 100000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *b = dma_buf_alloc(sizes[i]);
        CHECK(((uintptr_t)b & 63) == 0);
        for (size_t j = 0; j < sizes[i]; j++)
            CHECK(b[j] == 0);
        memset(b, 0xab, sizes[i]);
        dma_free(b);
    }
}

/* Blocking transfers at every alignment and length up to 70 bytes, both directions. */
static void test_round_trips(void)
{
    start(0, 1e9, 16, 8);
    unsigned char out[128], in[128];
    for (size_t offset = 0; offset < 8; offset++)
        for (size_t len = 0; len <= 70; len++) {
            size_t at = 4096 + offset * 256;
            for (size_t k = 0; k < len; k++)
                out[k] = (unsigned char)(offset * 31 + len * 7 + k);
            memset(host_mem + at - 8, 0xee, len + 16);
            dma_write(host(at), len, out);
            CHECK(memcmp(host_mem + at, out, len) == 0);
            CHECK(host_mem[at - 1] == 0xee && host_mem[at + len] == 0xee);
            memset(in, 0x55, sizeof in);
            dma_read(host(at), len, in + offset);
            CHECK(memcmp(in + offset, out, len) == 0);
            CHECK(in[offset + len] == 0x55);
        }
    uint64_t word = 0x0102030405060708ull;
    dma_write(host(64), sizeof word, &word);
    uint64_t back = 0;
    dma_read(host(64), sizeof back, &back);
    CHECK(back == word);
}

/* Data moves at issue; the request completes when the model says so. */
static void test_async(void)
{
    start(100000000, 8.0, 16, 8);
    floem_dma_req_t idle = {0};
    CHECK(dma_done(&idle));
    dma_wait(&idle);
    uint32_t v = 0xdeadbeef;
    floem_dma_req_t w;
    uint64_t t0 = now_ns();
    dma_write_async(host(128), 4, &v, &w);
    CHECK(memcmp(host_mem + 128, &v, 4) == 0);
    CHECK(!dma_done(&w));
    uint32_t r = 0;
    floem_dma_req_t rq;
    dma_read_async(host(128), 4, &r, &rq);
    CHECK(r == v);
    dma_wait(&w);
    CHECK(now_ns() - t0 >= 100000000);
    CHECK(dma_done(&w));
    while (!dma_done(&rq))
        continue;
    CHECK(now_ns() - t0 >= 100000000);
    dma_wait(&rq);
}

/* Descriptors of one request apply in order: a later one sees and overrides earlier ones. */
static void test_descriptor_order(void)
{
    start(0, 1e9, 4, 8);
    uint32_t a = 0x11111111, b = 0x22222222, seen = 0;
    char payload[20] = "payload-then-status";
    uint32_t status = 3, status_seen = 0;
    floem_dma_desc_t d[4] = {
        {host(256), &a, 4, true},
        {host(256), &b, 4, true},
        {host(256), &seen, 4, false},
        {host(260), payload, sizeof payload, true},
    };
    floem_dma_req_t req;
    dma_submit(d, 4, &req);
    dma_wait(&req);
    CHECK(seen == b);
    CHECK(memcmp(host_mem + 256, &b, 4) == 0);
    CHECK(memcmp(host_mem + 260, payload, sizeof payload) == 0);
    floem_dma_desc_t e[2] = {{host(512), &status, 4, true}, {host(512), &status_seen, 4, false}};
    dma_submit(e, 2, &req);
    dma_wait(&req);
    CHECK(status_seen == 3);
}

/* N blocking requests take at least N latencies, spent spinning in the caller. */
static void test_latency(void)
{
    const unsigned n = 20;
    start(200000, 8.0, 16, 8);
    char b[64];
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < n; i++)
        dma_read(host(0), sizeof b, b);
    uint64_t elapsed = now_ns() - t0;
    floem_dma_stats_t st;
    floem_dma_stats(&st);
    CHECK(elapsed >= n * 200000ull);
    CHECK(st.requests == n && st.descriptors == n);
    CHECK(st.bytes_read == n * sizeof b && st.bytes_written == 0);
    CHECK(st.busy_ns == n * (200000ull + 8));
    CHECK(st.wait_ns >= n * 50000ull && st.wait_ns <= elapsed);
}

/* Bandwidth: a large transfer takes bytes / bandwidth, and requests share the bandwidth. */
static void test_bandwidth(void)
{
    start(0, 0.0625, 16, 8);            /* 62.5 MB/s: 16 ns per byte */
    static unsigned char big[64000];
    uint64_t t0 = now_ns();
    dma_write(host(0), sizeof big, big);
    CHECK(now_ns() - t0 >= 1024000);
    floem_dma_req_t r1, r2;
    t0 = now_ns();
    dma_read_async(host(0), sizeof big, big, &r1);
    dma_read_async(host(0), sizeof big, big, &r2);
    dma_wait(&r2);
    CHECK(dma_done(&r1));
    CHECK(now_ns() - t0 >= 2048000);
    floem_dma_stats_t st;
    floem_dma_stats(&st);
    CHECK(st.busy_ns == 3 * 1024000ull);
    CHECK(st.bytes_written == sizeof big && st.bytes_read == 2 * sizeof big);
}

/* At most max_outstanding requests are in flight: issuing more waits for the oldest. */
static void test_outstanding(void)
{
    uint32_t v = 0;
    floem_dma_req_t req[6];
    start(200000, 8.0, 16, 8);
    for (int i = 0; i < 6; i++)
        dma_read_async(host(0), 4, &v, &req[i]);
    floem_dma_stats_t st;
    floem_dma_stats(&st);
    CHECK(st.wait_ns == 0);
    for (int i = 0; i < 6; i++)
        dma_wait(&req[i]);

    start(200000, 8.0, 16, 2);
    uint64_t t0 = now_ns();
    for (int i = 0; i < 6; i++)
        dma_read_async(host(0), 4, &v, &req[i]);
    uint64_t issuing = now_ns() - t0;
    floem_dma_stats(&st);
    CHECK(issuing >= 400000);
    CHECK(st.wait_ns >= 100000 && st.wait_ns <= issuing);
    CHECK(dma_done(&req[0]) && dma_done(&req[1]));
    dma_wait(&req[5]);
    CHECK(now_ns() - t0 >= 600000);
    for (int i = 0; i < 6; i++)
        CHECK(dma_done(&req[i]));
}

/* Every counter adds up over a mix of requests. */
static void test_stats(void)
{
    start(100, 4.0, 8, 8);
    floem_dma_stats_t st;
    floem_dma_stats(&st);
    CHECK(st.requests == 0 && st.descriptors == 0 && st.bytes_read == 0 && st.bytes_written == 0 &&
          st.busy_ns == 0 && st.wait_ns == 0);
    char buf[1024] = {0};
    uint64_t busy = 0, rd = 0, wr = 0, descs = 0;
    for (unsigned i = 1; i <= 8; i++) {
        floem_dma_desc_t d[8];
        uint64_t bytes = 0;
        for (unsigned k = 0; k < i; k++) {
            d[k] = (floem_dma_desc_t){host(k * 128), buf + k * 128, 16 * (k + 1), (k & 1) != 0};
            bytes += d[k].len;
            if (d[k].write)
                wr += d[k].len;
            else
                rd += d[k].len;
        }
        floem_dma_req_t req;
        dma_submit(d, i, &req);
        dma_wait(&req);
        busy += 100 + bytes / 4;
        descs += i;
    }
    floem_dma_stats(&st);
    CHECK(st.requests == 8 && st.descriptors == descs);
    CHECK(st.bytes_read == rd && st.bytes_written == wr);
    CHECK(st.busy_ns == busy);
    CHECK(floem_dma_model()->latency_ns == 100 && floem_dma_model()->max_descriptors == 8);
}

static void bad_latency_env(void)
{
    setenv("FLOEM_DMA_LATENCY_NS", "12us", 1);
    floem_dma_model_from_env();
}

static void bad_gbps_env(void)
{
    setenv("FLOEM_DMA_GBPS", "0", 1);
    floem_dma_model_from_env();
}

static void bad_outstanding_env(void)
{
    setenv("FLOEM_DMA_OUTSTANDING", "-1", 1);
    floem_dma_model_from_env();
}

static void bad_model(void)
{
    floem_dma_model_t m = {1000, 8.0, 0, 8};
    floem_dma_init(host_mem, HOST_BYTES, &m);
}

static void test_env(void)
{
    const char *vars[] = {"FLOEM_DMA_LATENCY_NS", "FLOEM_DMA_GBPS", "FLOEM_DMA_DESCRIPTORS",
                          "FLOEM_DMA_OUTSTANDING"};
    for (int i = 0; i < 4; i++)
        unsetenv(vars[i]);
    floem_dma_model_t m = floem_dma_model_from_env();
    CHECK(m.latency_ns == 1000 && m.bytes_per_ns == 8.0);
    CHECK(m.max_descriptors == 16 && m.max_outstanding == 8);
    setenv("FLOEM_DMA_LATENCY_NS", "250", 1);
    setenv("FLOEM_DMA_GBPS", "2.5", 1);
    setenv("FLOEM_DMA_DESCRIPTORS", "4", 1);
    setenv("FLOEM_DMA_OUTSTANDING", "3", 1);
    m = floem_dma_model_from_env();
    CHECK(m.latency_ns == 250 && m.bytes_per_ns == 2.5);
    CHECK(m.max_descriptors == 4 && m.max_outstanding == 3);
    setenv("FLOEM_DMA_LATENCY_NS", "", 1);
    CHECK(floem_dma_model_from_env().latency_ns == 1000);
    for (int i = 0; i < 4; i++)
        unsetenv(vars[i]);
    expect_abort(bad_latency_env, "FLOEM_DMA_LATENCY_NS=12us");
    expect_abort(bad_gbps_env, "FLOEM_DMA_GBPS=0");
    expect_abort(bad_outstanding_env, "FLOEM_DMA_OUTSTANDING=-1");
    expect_abort(bad_model, "bad DMA engine setup");
}

/* Several NIC threads issue DMA at once: every byte and every request is accounted for. */
#define THREADS 4
static uint64_t rounds;

static void *dma_thread(void *arg)
{
    size_t id = (size_t)(uintptr_t)arg;
    size_t base = 65536 + id * 4096;
    uint64_t out[8], in[8];
    for (uint64_t r = 0; r < rounds; r++) {
        for (int k = 0; k < 8; k++)
            out[k] = (id << 56) | (r << 8) | (uint64_t)k;
        size_t at = base + (r % 32) * 64;
        if (r % 2 == 0) {
            dma_write(host(at), sizeof out, out);
        } else {
            floem_dma_desc_t d[2] = {{host(at), out, sizeof out, true},
                                     {host(at), in, sizeof in, false}};
            floem_dma_req_t req;
            dma_submit(d, 2, &req);
            dma_wait(&req);
            CHECK(memcmp(in, out, sizeof in) == 0);
        }
        dma_read(host(at), sizeof in, in);
        CHECK(memcmp(in, out, sizeof in) == 0);
    }
    return NULL;
}

/* THREADS threads of `n` rounds each (an even number) on the engine as started. */
static void run_threads(uint64_t n)
{
    rounds = n;
    pthread_t t[THREADS];
    for (size_t i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, dma_thread, (void *)(uintptr_t)i) == 0);
    for (size_t i = 0; i < THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    floem_dma_stats_t st;
    floem_dma_stats(&st);
    CHECK(st.requests == THREADS * n * 2);
    CHECK(st.descriptors == THREADS * n * 5 / 2);
    CHECK(st.bytes_written == THREADS * n * 64);
    CHECK(st.bytes_read == THREADS * n * 64 * 3 / 2);
}

static void test_threads(void)
{
    start(100, 8.0, 16, 4);
    run_threads(5000);
}

/* ---- Fault injection ------------------------------------------------------------ */

static void faults(const char *spec)
{
    setenv("FLOEM_FAULTS", spec, 1);
}

static void faults_bad_probability(void)
{
    faults("seed=3,dma_delay=1.5");
    start(0, 8.0, 16, 8);
}

static void faults_unknown(void)
{
    faults("dma_dely=0.5");
    start(0, 8.0, 16, 8);
}

static void faults_not_a_pair(void)
{
    faults("stall");
    start(0, 8.0, 16, 8);
}

static void faults_zero_ns(void)
{
    faults("stall=0.1,stall_ns=0");
    start(0, 8.0, 16, 8);
}

static void faults_negative_seed(void)
{
    faults("seed=-3");
    start(0, 8.0, 16, 8);
}

static void test_fault_spec(void)
{
    expect_abort(faults_bad_probability,
                 "floem: FLOEM_FAULTS=seed=3,dma_delay=1.5: dma_delay=1.5: need a probability "
                 "from 0 to 1");
    expect_abort(faults_unknown, "FLOEM_FAULTS=dma_dely=0.5: dma_dely=0.5: unknown fault (known: "
                                 "seed, dma_delay, dma_delay_ns, dma_tear, stall, stall_ns)");
    expect_abort(faults_not_a_pair, "FLOEM_FAULTS=stall: stall: need name=value");
    expect_abort(faults_zero_ns, "stall_ns=0: need nanoseconds from 1 to 10^10");
    expect_abort(faults_negative_seed, "seed=-3: need a non-negative integer");
    /* Empty, or every probability 0: the engine of the cases above (data at issue). */
    const char *off[] = {"", "seed=4", "dma_delay=0,dma_tear=0,stall=0"};
    for (int i = 0; i < 3; i++) {
        faults(off[i]);
        start(100000000, 8.0, 16, 8);
        uint32_t v = 0x5eed;
        floem_dma_req_t w;
        dma_write_async(host(64), 4, &v, &w);
        CHECK(memcmp(host_mem + 64, &v, 4) == 0 && !dma_done(&w));
        dma_wait(&w);
        floem_dma_stats_t st;
        floem_dma_stats(&st);
        CHECK(st.delayed == 0 && st.torn == 0 && st.stalls == 0);
    }
}

/* Every request delayed by up to 2 ms: whatever the delays, a write is not passed by a later
 * write or read, while a write may pass an earlier read (and, over many tries, does). */
static void test_fault_orderings(void)
{
    faults("seed=11,dma_delay=1,dma_delay_ns=2000000");
    start(0, 8.0, 16, 8);
    const uint32_t tries = 100;
    uint32_t passed = 0;
    for (uint32_t t = 0; t < tries; t++) {
        uint32_t before = 0, first = 2 * t + 1, second = 2 * t + 2, after = 0;
        floem_dma_req_t r0, w1, w2, r1;
        dma_read_async(host(64), 4, &before, &r0);
        dma_write_async(host(64), 4, &first, &w1);
        dma_write_async(host(64), 4, &second, &w2);
        dma_read_async(host(64), 4, &after, &r1);
        dma_wait(&r1);
        CHECK(after == second);                    /* no read passes a write; writes in order */
        CHECK(dma_done(&w1) && dma_done(&w2));
        CHECK(memcmp(host_mem + 64, &second, 4) == 0);
        dma_wait(&r0);
        CHECK(before == 2 * t || before == first || before == second);
        if (before != 2 * t)
            passed++;
    }
    CHECK(passed > 0 && passed < tries);
    floem_dma_stats_t st;
    floem_dma_stats(&st);
    CHECK(st.delayed == st.requests && st.requests == 4 * tries && st.torn == 0);
    /* A zero-filled request is done; a done write's bytes are in host memory. */
    floem_dma_req_t idle = {0};
    CHECK(dma_done(&idle));
    uint64_t v = 0x0123456789abcdefull;
    floem_dma_req_t w;
    dma_write_async(host(200), sizeof v, &v, &w);
    while (!dma_done(&w))
        continue;
    CHECK(memcmp(host_mem + 200, &v, sizeof v) == 0);
}

/* Torn requests move every byte, at every alignment and length, and both ways. */
static void test_fault_tear(void)
{
    faults("seed=12,dma_tear=1");
    start(0, 8.0, 16, 8);
    unsigned char out[256], in[256];
    uint64_t requests = 0;
    for (unsigned at = 0; at < 8; at++)
        for (unsigned len = 1; len <= 200; len += 13) {
            for (unsigned i = 0; i < len; i++)
                out[i] = (unsigned char)(at * 31 + len * 7 + i);
            dma_write(host(4096 + at), len, out);
            CHECK(memcmp(host_mem + 4096 + at, out, len) == 0);
            memset(in, 0, sizeof in);
            floem_dma_desc_t d[3] = {{host(4096 + at), in, len / 2, false},
                                     {host(4096 + at + len / 2), in + len / 2, len - len / 2, false},
                                     {host(8192), in + 255, 1, false}};
            floem_dma_req_t req;
            dma_submit(d, 3, &req);
            dma_wait(&req);
            CHECK(memcmp(in, out, len) == 0 && in[255] == host_mem[8192]);
            requests += 2;
        }
    floem_dma_stats_t st;
    floem_dma_stats(&st);
    CHECK(st.torn == requests && st.requests == requests && st.delayed == 0);
}

/* The same seed makes the same decisions for the same requests. */
static void test_fault_seed(void)
{
    uint64_t delayed[2], torn[2];
    for (int run = 0; run < 2; run++) {
        faults("seed=9,dma_delay=0.5,dma_delay_ns=1000,dma_tear=0.5");
        start(0, 8.0, 16, 8);
        char b[40];
        for (int i = 0; i < 200; i++)
            dma_read(host(0), sizeof b, b);
        floem_dma_stats_t st;
        floem_dma_stats(&st);
        delayed[run] = st.delayed;
        torn[run] = st.torn;
        CHECK(st.delayed > 0 && st.delayed < 200 && st.torn > 0 && st.torn < 200);
    }
    CHECK(delayed[0] == delayed[1] && torn[0] == torn[1]);
}

/* Threads issuing DMA under every fault at once: each still reads back what it wrote. */
static void test_fault_threads(void)
{
    faults("seed=13,dma_delay=0.5,dma_delay_ns=20000,dma_tear=0.5,stall=0.05,stall_ns=10000");
    start(100, 8.0, 16, 4);
    run_threads(400);
    floem_dma_stats_t st;
    floem_dma_stats(&st);
    CHECK(st.delayed > 0 && st.torn > 0 && st.stalls > 0 && st.stalled_ns >= st.stalls);
}

static void test_faults(void)
{
    test_fault_spec();
    test_fault_orderings();
    test_fault_tear();
    test_fault_seed();
    test_fault_threads();
    unsetenv("FLOEM_FAULTS");
}

int main(void)
{
    host_mem = aligned_alloc(64, HOST_BYTES);
    CHECK(host_mem != NULL);
    unsetenv("FLOEM_FAULTS");           /* the cases before test_faults expect none */
    test_uninitialised();
    test_bounds();
    test_host_address_faults();
    test_buffers();
    test_round_trips();
    test_async();
    test_descriptor_order();
    test_latency();
    test_bandwidth();
    test_outstanding();
    test_stats();
    test_env();
    test_threads();
    test_faults();
    free(host_mem);
    printf("ok: %lu checks\n", checks);
    return 0;
}
