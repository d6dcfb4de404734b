/* Fuzz target: the pcap backend's reading of a capture (runtime/src/net_pcap.c), through
 * the packet I/O API every program uses (runtime/src/net.c: floem_net_init, floem_net_rx,
 * floem_net_free, floem_net_finalize), built with FLOEM_NET_PCAP.
 *
 * The input is the capture file. It is written to a memory file named by FLOEM_PCAP_IN
 * (/proc/self/fd/N). A capture the backend refuses ends in floem_net_fail, which exits
 * the process in a real run; the link wraps it (-Wl,--wrap=floem_net_fail) so that the
 * harness takes it back. Checks, against a reference reading of the format: a file is
 * refused exactly when its header is not classic pcap with link type Ethernet; otherwise
 * the frames delivered are exactly the records that fit a buffer and end inside the file,
 * in order, byte for byte, and every other record is counted as a receive drop.
 */
#include <setjmp.h>
#include <sys/mman.h>
#include <unistd.h>

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

static uint32_t get32(const uint8_t *p, int big)
{
    return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
               : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* The reference: -1 for a file the backend must refuse, else its byte order (1: big). */
static int header(const uint8_t *data, size_t size)
{
    if (size < 24)
        return -1;
    uint32_t magic = get32(data, 0);
    int big;
    if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d)
        big = 0;
    else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1)
        big = 1;
    else
        return -1;
    return (get32(data + 20, big) & 0x0fffffff) == 1 ? big : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("capture", 0);
        FUZZ_CHECK(fd >= 0);
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        setenv("FLOEM_PCAP_IN", path, 1);
        unsetenv("FLOEM_PCAP_OUT");
        unsetenv("FLOEM_NET_QUEUES");
        unsetenv("FLOEM_REPORT");
    }
    FUZZ_CHECK(ftruncate(fd, 0) == 0);
    FUZZ_CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
    int big = header(data, size);
    if (setjmp(failed)) {
        FUZZ_CHECK(big < 0);
        floem_backend_finalize();   /* what the process's exit would have released */
        return 0;
    }
    floem_net_init();
    FUZZ_CHECK(big >= 0);
    size_t at = 24, dropped = 0;
    for (;;) {
        floem_packet_t pkts[16];
        unsigned n = floem_net_rx(0, pkts, 16);
        for (unsigned i = 0; i < n; i++) {
            /* The next record that fits a buffer and lies inside the file. */
            uint32_t caplen;
            for (;;) {
                FUZZ_CHECK(size - at >= 16);
                caplen = get32(data + at + 8, big);
                FUZZ_CHECK(caplen <= size - at - 16);
                if (caplen <= FUZZ_BUFFER_BYTES)
                    break;
                dropped++;
                at += 16 + (size_t)caplen;
            }
            FUZZ_CHECK(pkts[i].len == caplen && pkts[i].data == pkts[i].buffer);
            FUZZ_CHECK(memcmp(pkts[i].data, data + at + 16, caplen) == 0);
            at += 16 + (size_t)caplen;
            floem_net_free(&pkts[i]);
        }
        if (n == 0 && floem_net_rx_done())
            break;
        FUZZ_CHECK(n > 0);          /* a file never makes the reader wait */
    }
    /* What is left: oversized records skipped, then at most one cut short by the end. */
    while (size - at >= 16) {
        uint32_t caplen = get32(data + at + 8, big);
        if (caplen > size - at - 16) {
            dropped++;
            break;
        }
        FUZZ_CHECK(caplen > FUZZ_BUFFER_BYTES);
        dropped++;
        at += 16 + (size_t)caplen;
    }
    if (size - at > 0 && size - at < 16)
        dropped++;                  /* a record header cut short */
    floem_net_stats_t stats;
    floem_net_stats(&stats);
    FUZZ_CHECK(stats.rx_dropped == dropped);
    floem_net_finalize();
    return 0;
}
