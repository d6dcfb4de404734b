/* Fuzz target: the pcap backend's replay of a capture (runtime/src/net_pcap.c, which reads
 * it with libpcap), through the packet I/O API every program uses (runtime/src/net.c:
 * floem_net_init, floem_net_rx, floem_net_free, floem_net_finalize), built with
 * FLOEM_NET_PCAP.
 *
 * The input is one byte of options, then the capture file (pcap or pcapng, as libpcap
 * reads them). Options: bits 0-1, the passes through the file less one
 * (FLOEM_PCAP_LOOP = 1 to 4); bits 2-4, when not 0, how many frame buffers the harness
 * leaves free in the pool (1 to 7: it takes the others out first), so that the backend runs
 * out of buffers in a burst and must keep the record it has read for the next one. The
 * file is written to a memory file named by FLOEM_PCAP_IN (/proc/self/fd/N). A capture
 * the backend refuses ends in floem_net_fail, which exits the process in a real run; the
 * link wraps it (-Wl,--wrap=floem_net_fail) so that the harness takes it back.
 *
 * Checks, against libpcap's own reading of the same file (the oracle): a file is refused
 * exactly when libpcap cannot open it or its link type is not Ethernet; otherwise, pass
 * after pass, the frames delivered are exactly the records libpcap reads that fit a
 * buffer, in order, byte for byte; every other record, and a read error (which ends a
 * pass), is counted as a receive drop; a pass that reads no record at all ends the replay;
 * and the reader never waits on a file for more than one empty burst per pass.
 */
#include <setjmp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <pcap/pcap.h>

#include "floem/net_backend.h"
#include "floem/runtime.h"
#include "fuzz.h"

static jmp_buf failed;

_Noreturn void __wrap_floem_net_fail(const char *fmt, ...)
{
    (void)fmt;
    longjmp(failed, 1);
}

/* The clock of the replay's span (runtime/src/threads.c, not linked here). */
uint64_t floem_now_ns(void)
{
    return 1;
}

/* The oracle: libpcap reading the file pass after pass, as the backend must replay it. */
struct oracle {
    const char *path;
    pcap_t *p;
    unsigned passes_left;
    int pass_read;          /* the current pass read a record */
    size_t dropped;
};

static pcap_t *oracle_open(const char *path)
{
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
    if (p != NULL && pcap_datalink(p) != DLT_EN10MB) {
        pcap_close(p);
        p = NULL;
    }
    return p;
}

/* The next record the backend must deliver (0 when the replay is over), counting the
 * records and read errors it must drop on the way. */
static int oracle_next(struct oracle *o, struct pcap_pkthdr **h, const u_char **data)
{
    while (o->p != NULL) {
        int got = pcap_next_ex(o->p, h, data);
        if (got == 1) {
            o->pass_read = 1;
            if ((*h)->caplen <= FUZZ_BUFFER_BYTES)
                return 1;
            o->dropped++;
            continue;
        }
        FUZZ_CHECK(got == PCAP_ERROR_BREAK || got == PCAP_ERROR);
        if (got == PCAP_ERROR)
            o->dropped++;
        pcap_close(o->p);
        o->p = NULL;
        if (o->pass_read && --o->passes_left > 0) {
            o->p = oracle_open(o->path);
            FUZZ_CHECK(o->p != NULL);
            o->pass_read = 0;
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("capture", 0);
        FUZZ_CHECK(fd >= 0);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        setenv("FLOEM_PCAP_IN", path, 1);
        unsetenv("FLOEM_PCAP_OUT");
        unsetenv("FLOEM_PCAP_TIMING");
        unsetenv("FLOEM_NET_QUEUES");
        unsetenv("FLOEM_REPORT");
    }
    if (size < 1)
        return 0;
    unsigned passes = 1 + (data[0] & 3), free_buffers = (data[0] >> 2) & 7;
    char loop[2] = {(char)('0' + passes), '\0'};
    setenv("FLOEM_PCAP_LOOP", loop, 1);
    data++, size--;
    FUZZ_CHECK(ftruncate(fd, 0) == 0);
    FUZZ_CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
    struct oracle o = {path, oracle_open(path), passes, 0, 0};
    static void *held[FLOEM_NET_POOL_BUFFERS];
    unsigned n_held = 0;
    if (setjmp(failed)) {
        FUZZ_CHECK(o.p == NULL);
        floem_backend_finalize();   /* what the process's exit would have released */
        return 0;
    }
    floem_net_init();
    FUZZ_CHECK(o.p != NULL);
    if (free_buffers > 0)
        n_held = floem_pool_get(held, FLOEM_NET_POOL_BUFFERS - free_buffers);
    unsigned empty = 0;
    for (;;) {
        floem_net_frame_t frames[16];
        unsigned n = floem_net_rx(0, frames, 16);
        for (unsigned i = 0; i < n; i++) {
            floem_packet_t pkt = floem_net_packet(frames[i]);
            struct pcap_pkthdr *h;
            const u_char *expected;
            FUZZ_CHECK(oracle_next(&o, &h, &expected));
            FUZZ_CHECK(pkt.len == h->caplen && pkt.data == pkt.buffer);
            FUZZ_CHECK(memcmp(pkt.data, expected, h->caplen) == 0);
            floem_net_free(&pkt);
        }
        if (n == 0 && floem_net_rx_done())
            break;
        if (n == 0)                 /* a burst that crossed a pass of dropped records */
            FUZZ_CHECK(++empty <= passes);
    }
    struct pcap_pkthdr *h;
    const u_char *rest;
    FUZZ_CHECK(!oracle_next(&o, &h, &rest));   /* nothing left to deliver */
    floem_net_stats_t stats;
    floem_net_stats(&stats);
    FUZZ_CHECK(stats.rx_dropped == o.dropped);
    floem_pool_put(held, n_held);
    floem_net_finalize();
    return 0;
}
