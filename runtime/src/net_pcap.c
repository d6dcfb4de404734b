/* Packet I/O backend `pcap` (FLOEM_NET_PCAP): replay a capture file, record what is sent.
 *
 * Captures are read and written by libpcap (programs link -lpcap). Input
 * (FLOEM_PCAP_IN): a pcap or pcapng file, any byte order and timestamp
 * precision, link type Ethernet (another link type, or a file libpcap cannot
 * open, is a configuration error naming the file). Frames are delivered in file
 * order on one queue, then floem_net_rx_done() turns true. A record longer than
 * a buffer (FLOEM_NET_BUFFER_BYTES) is skipped and counted as an rx drop; a read
 * error (a record cut short by the end of the file, a corrupt record) ends the
 * pass through the file, is printed once and counted as an rx drop.
 *
 * FLOEM_PCAP_LOOP=N replays the file N times (0: until the program stops; default
 * 1). FLOEM_PCAP_TIMING=F paces the replay by the records' timestamps, F times
 * faster than captured (1: the capture's own pace); unset, frames are delivered as
 * fast as they are taken. Paced, a record is delivered once F * (time since the
 * first record was delivered) reaches its timestamp's distance from the first
 * record's; a pass's first record follows the previous pass's last one at once.
 *
 * Output (FLOEM_PCAP_OUT, optional): a classic pcap file (this machine's byte
 * order, microsecond timestamps of when the frame was sent, link type Ethernet),
 * one record per frame sent, flushed at finalize; without it sent frames are
 * counted and discarded. The report gives the replay's span: from the first
 * frame received to the last one sent (a replay's throughput is frames over it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#ifdef FLOEM_NET_PCAP

#include "floem/net_backend.h"
#include "floem/runtime.h"

#include <errno.h>
#include <math.h>
#include <pcap/pcap.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char floem_backend_name[] = "pcap";

#define SNAPLEN 65535
#define NS_PER_S 1000000000LL

static pcap_t *in, *dead;
static pcap_dumper_t *out;
static const char *in_path;
static bool done;
static uint64_t first_rx_ns, last_tx_ns;

/* The replay: passes left (0: endless), pacing, and the record waiting to be delivered. */
static unsigned long passes_left;
static bool endless, read_error_told, pass_read;   /* pass_read: the pass found a record */
static double speed;                /* 0: as fast as taken */
static struct {
    bool started;
    uint64_t start_ns;              /* floem_now_ns() of the first record delivered */
    int64_t base_ns;                /* where the current pass starts on the replay's timeline */
    int64_t pass_first_ns, pass_last_ns;    /* timestamps of the pass's first and last records */
    bool pass_started;
} pace;
static struct pcap_pkthdr *pending_hdr;
static const u_char *pending_data;

/* libpcap's message without a leading "PATH: " (libpcap names the file in some). */
static const char *reason(const char *path, const char *message)
{
    size_t n = strlen(path);
    return strncmp(message, path, n) == 0 && strncmp(message + n, ": ", 2) == 0 ? message + n + 2
                                                                                 : message;
}

static pcap_t *open_capture(const char *path)
{
    char err[PCAP_ERRBUF_SIZE] = "";
    pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
    if (p == NULL)
        floem_net_fail("cannot read %s: %s", path, reason(path, err));
    /* Receive bursts are serialised by the one queue's lock: stdio need not lock the stream
     * either (as for the output below). */
    __fsetlocking(pcap_file(p), FSETLOCKING_BYCALLER);
    return p;
}

static void open_input(const char *path)
{
    in_path = path;
    in = open_capture(path);
    int link = pcap_datalink(in);
    if (link != DLT_EN10MB) {
        const char *name = pcap_datalink_val_to_name(link);
        const char *what = pcap_datalink_val_to_description(link);
        if (name != NULL)
            floem_net_fail("%s: link type %s (%s), not Ethernet: the pcap backend replays "
                           "Ethernet frames only", path, name, what != NULL ? what : "?");
        floem_net_fail("%s: link type %d, not Ethernet: the pcap backend replays Ethernet "
                       "frames only", path, link);
    }
}

static void open_output(const char *path)
{
    dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, SNAPLEN, PCAP_TSTAMP_PRECISION_MICRO);
    if (dead == NULL)
        floem_net_fail("cannot write %s: libpcap: out of memory", path);
    out = pcap_dump_open(dead, path);
    if (out == NULL)
        floem_net_fail("cannot write %s: %s", path, reason(path, pcap_geterr(dead)));
    /* Only sends (serialised by the one queue's lock) and finalize write the capture, so
     * stdio need not lock the stream, which it does in a threaded process: about 30
     * instructions a frame in pcap_dump's fwrite and ferror (docs/benchmarks.md). */
    __fsetlocking(pcap_dump_file(out), FSETLOCKING_BYCALLER);
}

/* FLOEM_PCAP_LOOP and FLOEM_PCAP_TIMING (unset or empty: once, as fast as taken). */
static void read_settings(void)
{
    const char *loop = getenv("FLOEM_PCAP_LOOP"), *timing = getenv("FLOEM_PCAP_TIMING");
    passes_left = 1;
    endless = false;
    if (loop != NULL && loop[0] != '\0') {
        char *end;
        errno = 0;
        long long n = strtoll(loop, &end, 10);
        if (*end != '\0' || errno != 0 || n < 0)
            floem_net_fail("FLOEM_PCAP_LOOP=%s: need how many times to replay the capture "
                           "(0: until stopped)", loop);
        passes_left = (unsigned long)n;
        endless = n == 0;
    }
    speed = 0;
    if (timing != NULL && timing[0] != '\0') {
        char *end;
        speed = strtod(timing, &end);
        if (*end != '\0' || !isfinite(speed) || !(speed > 0))
            floem_net_fail("FLOEM_PCAP_TIMING=%s: need a speed factor above 0 (1: the "
                           "capture's own pace)", timing);
    }
}

unsigned floem_backend_init(unsigned wanted)
{
    (void)wanted;       /* one queue: frames leave the file in order */
    floem_pool_init();
    const char *in_name = getenv("FLOEM_PCAP_IN"), *out_name = getenv("FLOEM_PCAP_OUT");
    done = read_error_told = pass_read = false;
    first_rx_ns = last_tx_ns = 0;
    memset(&pace, 0, sizeof pace);
    pending_hdr = NULL;
    read_settings();
    if (in_name != NULL && in_name[0] != '\0')
        open_input(in_name);
    else
        done = true;
    if (out_name != NULL && out_name[0] != '\0')
        open_output(out_name);
    return 1;
}

void floem_backend_finalize(void)
{
    if (in != NULL)
        pcap_close(in);
    if (out != NULL) {
        if (pcap_dump_flush(out) != 0 || ferror(pcap_dump_file(out)))
            fprintf(stderr, "floem: net pcap: writing the output capture: %s\n", strerror(errno));
        pcap_dump_close(out);
    }
    if (dead != NULL)
        pcap_close(dead);
    in = dead = NULL;
    out = NULL;
    pending_hdr = NULL;
    floem_pool_destroy();
}

bool floem_backend_rx_done(void)
{
    return __atomic_load_n(&done, __ATOMIC_ACQUIRE);
}

bool floem_backend_rx_wait(unsigned queue)
{
    (void)queue;                    /* a file (paced by its own clock): never waits */
    return false;
}

/* The end of a pass through the file: open it again for the next pass (unless the pass
 * found no record at all), or finish. */
static void end_pass(void)
{
    if (pass_read && (endless || --passes_left > 0)) {
        pcap_close(in);
        in = open_capture(in_path);
        pace.base_ns += pace.pass_last_ns - pace.pass_first_ns;
        pace.pass_started = pass_read = false;
        return;
    }
    __atomic_store_n(&done, true, __ATOMIC_RELEASE);
}

/* A read error (a record cut short, a corrupt one): told once, counted, ends the pass. */
static void read_error(void)
{
    if (!read_error_told)
        fprintf(stderr, "floem: net pcap: %s: %s (the rest of this pass through the file is "
                "skipped)\n", in_path, pcap_geterr(in));
    read_error_told = true;
    floem_net_queue[0].rx_dropped++;
    end_pass();
}

/* Paced replay: true when the record with header `h` is due. */
static bool due(const struct pcap_pkthdr *h)
{
    int64_t ts = (int64_t)h->ts.tv_sec * NS_PER_S + (int64_t)h->ts.tv_usec;
    if (!pace.pass_started) {
        pace.pass_started = true;
        pace.pass_first_ns = pace.pass_last_ns = ts;
    }
    int64_t at = pace.base_ns + (ts > pace.pass_first_ns ? ts - pace.pass_first_ns : 0);
    uint64_t now = floem_now_ns();
    if (!pace.started) {
        pace.started = true;
        pace.start_ns = now;
    }
    if ((double)(now - pace.start_ns) * speed < (double)at)
        return false;
    if (ts > pace.pass_last_ns)
        pace.pass_last_ns = ts;
    return true;
}

unsigned floem_backend_rx(unsigned q, floem_packet_t *pkts, unsigned max)
{
    (void)q;
    unsigned n = 0;
    bool pass_ended = false;
    while (n < max && !done) {
        struct pcap_pkthdr *h = pending_hdr;
        const u_char *data = pending_data;
        if (h == NULL) {
            int got = pcap_next_ex(in, &h, &data);
            if (got != 1) {
                if (got == PCAP_ERROR_BREAK)
                    end_pass();
                else
                    read_error();
                if (pass_ended)     /* a second pass in one call: an endless replay of */
                    break;          /* records that are all dropped still returns */
                pass_ended = true;
                continue;
            }
            pass_read = true;
            if (h->caplen > FLOEM_NET_BUFFER_BYTES) {
                floem_net_queue[0].rx_dropped++;
                continue;
            }
        }
        pending_hdr = h;        /* until it is due and a buffer holds it */
        pending_data = data;
        if (speed > 0 && !due(h))
            break;
        void *buf;
        if (floem_pool_get(&buf, 1) == 0) {
            __atomic_fetch_add(&floem_net_alloc_failed, 1, __ATOMIC_RELAXED);
            break;
        }
        pending_hdr = NULL;
        memcpy(buf, data, h->caplen);
        floem_pool_frame(buf, h->caplen);
        pkts[n++] = (floem_packet_t){buf, h->caplen, buf};
    }
    uint64_t none = 0;                      /* only the first burst pays for the exchange */
    if (n > 0 && __atomic_load_n(&first_rx_ns, __ATOMIC_RELAXED) == 0)
        __atomic_compare_exchange_n(&first_rx_ns, &none, floem_now_ns(), false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
    return n;
}

void floem_backend_send(unsigned q, floem_packet_t *pkts, unsigned n)
{
    void *buffers[FLOEM_NET_TX_BURST];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct pcap_pkthdr h = {.ts = {.tv_sec = now.tv_sec, .tv_usec = now.tv_nsec / 1000}};
    for (unsigned i = 0; i < n; i++) {
        buffers[i] = pkts[i].buffer;
        if (!floem_pool_holds(pkts[i].buffer, pkts[i].data, pkts[i].len)) {
            floem_net_queue[q].tx_dropped++;
            continue;
        }
        if (out != NULL) {
            h.caplen = h.len = pkts[i].len;
            pcap_dump((u_char *)out, &h, pkts[i].data);
            if (ferror_unlocked(pcap_dump_file(out))) {
                floem_net_queue[q].tx_dropped++;
                continue;
            }
        }
        floem_net_queue[q].tx++;
    }
    floem_pool_put(buffers, n);     /* aborts on a buffer the network never gave */
    __atomic_store_n(&last_tx_ns, floem_now_ns(), __ATOMIC_RELAXED);
}

void floem_backend_report(FILE *report)
{
    uint64_t first = __atomic_load_n(&first_rx_ns, __ATOMIC_RELAXED);
    uint64_t last = __atomic_load_n(&last_tx_ns, __ATOMIC_RELAXED);
    fprintf(report, "floem: net pcap: replay span %llu ns (first frame received to last sent)\n",
            (unsigned long long)(first && last > first ? last - first : 0));
}

#endif
