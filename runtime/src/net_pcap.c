/* Packet I/O backend `pcap` (FLOEM_NET_PCAP): replay a capture file, record what is sent.
 *
 * Reads and writes the classic pcap format itself (no libpcap). Input
 * (FLOEM_PCAP_IN): either byte order, microsecond or nanosecond timestamps,
 * link type Ethernet; frames are delivered in file order on one queue, then
 * floem_net_rx_done() turns true. A record longer than a buffer
 * (FLOEM_NET_BUFFER_BYTES) is skipped and counted as an rx drop, as is a record
 * cut short by the end of the file. Output (FLOEM_PCAP_OUT, optional): a
 * little-endian file, microsecond timestamps, link type Ethernet, one record per
 * frame sent, flushed at finalize; without it sent frames are counted and
 * discarded. The report gives the replay's span: from the first frame received
 * to the last one sent (a replay's throughput is frames over it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#ifdef FLOEM_NET_PCAP

#include "floem/net_backend.h"
#include "floem/runtime.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char floem_backend_name[] = "pcap";

#define LINKTYPE_ETHERNET 1
#define SNAPLEN 65535

static FILE *in, *out;
static const char *in_path;
static bool big_endian_in;
static bool done;
static uint64_t first_rx_ns, last_tx_ns;

static uint32_t get32(const uint8_t *p, bool big)
{
    return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
               : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void open_input(const char *path)
{
    in = fopen(path, "rb");
    if (in == NULL)
        floem_net_fail("cannot read %s: %s", path, strerror(errno));
    uint8_t h[24];
    if (fread(h, 1, sizeof h, in) != sizeof h)
        floem_net_fail("%s: not a pcap file (shorter than its header)", path);
    uint32_t magic = get32(h, false);
    if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d)
        big_endian_in = false;
    else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1)
        big_endian_in = true;
    else if (magic == 0x0a0d0d0a)
        floem_net_fail("%s: pcapng is not supported (save it as classic pcap)", path);
    else
        floem_net_fail("%s: not a pcap file (magic %08x)", path, magic);
    uint32_t linktype = get32(h + 20, big_endian_in) & 0x0fffffff;
    if (linktype != LINKTYPE_ETHERNET)
        floem_net_fail("%s: link type %u, not Ethernet (1)", path, linktype);
    in_path = path;
}

static void open_output(const char *path)
{
    out = fopen(path, "wb");
    if (out == NULL)
        floem_net_fail("cannot write %s: %s", path, strerror(errno));
    setvbuf(out, NULL, _IOFBF, 1 << 20);
    uint8_t h[24];
    put32(h, 0xa1b2c3d4);
    h[4] = 2, h[5] = 0, h[6] = 4, h[7] = 0;     /* version 2.4, little-endian */
    put32(h + 8, 0);                            /* thiszone */
    put32(h + 12, 0);                           /* sigfigs */
    put32(h + 16, SNAPLEN);
    put32(h + 20, LINKTYPE_ETHERNET);
    if (fwrite(h, 1, sizeof h, out) != sizeof h)
        floem_net_fail("cannot write %s: %s", path, strerror(errno));
}

unsigned floem_backend_init(unsigned wanted)
{
    (void)wanted;       /* one queue: frames leave the file in order */
    floem_pool_init();
    const char *in_name = getenv("FLOEM_PCAP_IN"), *out_name = getenv("FLOEM_PCAP_OUT");
    done = false;
    first_rx_ns = last_tx_ns = 0;
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
        fclose(in);
    if (out != NULL && (fflush(out) != 0 || fclose(out) != 0))
        fprintf(stderr, "floem: net pcap: writing the output capture: %s\n", strerror(errno));
    in = out = NULL;
    floem_pool_destroy();
}

bool floem_backend_rx_done(void)
{
    return __atomic_load_n(&done, __ATOMIC_ACQUIRE);
}

static void finish_input(bool truncated)
{
    if (truncated) {
        fprintf(stderr, "floem: net pcap: %s ends inside a record\n", in_path);
        floem_net_queue[0].rx_dropped++;
    }
    __atomic_store_n(&done, true, __ATOMIC_RELEASE);
}

unsigned floem_backend_rx(unsigned q, floem_packet_t *pkts, unsigned max)
{
    (void)q;
    unsigned n = 0;
    while (n < max && !done) {
        uint8_t h[16];
        size_t got = fread(h, 1, sizeof h, in);
        if (got != sizeof h) {
            finish_input(got != 0);
            break;
        }
        uint32_t caplen = get32(h + 8, big_endian_in);
        if (caplen > FLOEM_NET_BUFFER_BYTES) {
            floem_net_queue[0].rx_dropped++;
            if (fseek(in, caplen, SEEK_CUR) != 0)
                finish_input(true);
            continue;
        }
        void *buf;
        if (floem_pool_get(&buf, 1) == 0) {
            fseek(in, -(long)sizeof h, SEEK_CUR);   /* try this record again later */
            __atomic_fetch_add(&floem_net_alloc_failed, 1, __ATOMIC_RELAXED);
            break;
        }
        if (fread(buf, 1, caplen, in) != caplen) {
            floem_pool_put(&buf, 1);
            finish_input(true);
            break;
        }
        floem_pool_frame(buf, caplen);
        pkts[n++] = (floem_packet_t){buf, caplen, buf};
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
    for (unsigned i = 0; i < n; i++) {
        buffers[i] = pkts[i].buffer;
        if (!floem_pool_holds(pkts[i].buffer, pkts[i].data, pkts[i].len)) {
            floem_net_queue[q].tx_dropped++;
            continue;
        }
        if (out != NULL) {
            uint8_t h[16];
            put32(h, (uint32_t)now.tv_sec);
            put32(h + 4, (uint32_t)(now.tv_nsec / 1000));
            put32(h + 8, pkts[i].len);
            put32(h + 12, pkts[i].len);
            if (fwrite(h, 1, sizeof h, out) != sizeof h ||
                fwrite(pkts[i].data, 1, pkts[i].len, out) != pkts[i].len) {
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
