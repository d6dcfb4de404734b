/* A DPDK load client for the key-value store (examples/kvs/kvs.py) over a DPDK port, written
 * on Floem's packet I/O API (floem/net.h, the dpdk backend): benchmarks/kvs/vs_memcached.py
 * runs it against `floem run kvs.py --net dpdk` through a net_memif pair, the store the
 * memif server, this client the memif client, each polling a core of its own.
 *
 * Build (vs_memcached.py does; the flags of tests/test_net.py's build()):
 *   cc -std=c11 -Wall -Wextra -Werror -O2 -pthread -Iruntime/include -Ilibrary/c
 *      -DFLOEM_NET_DPDK $(pkg-config --cflags libdpdk) benchmarks/kvs/dpdk_blast.c
 *      library/c/headers.c runtime/src/net*.c runtime/src/threads.c runtime/src/shared.c
 *      runtime/src/count.c $(pkg-config --libs libdpdk) -o dpdk_blast
 * Usage: dpdk_blast MODE TEMPLATES OPAQUE_AT SECONDS [N]
 *   with FLOEM_DPDK_EAL naming the port, e.g. "--no-huge --no-pci -m 256 --file-prefix=c
 *   --vdev=net_memif0,role=client,socket=SOCK".
 *
 * TEMPLATES is udp_blast's template file (runtime/tests/udp_blast.c): requests in
 * memcached's binary protocol over UDP, each a 16-bit little-endian length and the datagram.
 * Each is sent in an Ethernet/IPv4/UDP frame (10.0.0.2:40000 to 10.0.0.1:11211; the store
 * answers by swapping them), request number k with k written big-endian at byte OPAQUE_AT
 * of the datagram (the opaque field), which the reply echoes. Modes:
 *   preload     every template once, at most 256 outstanding, those lost sent again, until
 *               each has had an answer or SECONDS have passed (the workload's SETs of every
 *               key, before measuring);
 *   throughput  template k % count as request k, at most N outstanding (the window; N at
 *               most the memif ring's 1024 descriptors, so that no ring overflows), a
 *               new one sent as each is answered, for SECONDS;
 *   latency     an open loop: request k sent at k / N seconds from the start, for SECONDS.
 * First, in every mode, a NOOP is sent every 10 ms until one is answered (the memif link
 * comes up after the port starts; what is sent before is lost), for 10 s at most.
 *
 * Each reply must be one datagram (the workload's 64-byte values fit in one) whose opaque is
 * an outstanding request and whose opcode is its request's; its status must be OK, or
 * KEY_NOT_FOUND for a GET (a miss); a GET's value must begin with its key and '#' (values
 * of examples/kvs/load.py do). A request unanswered after 200 ms (TIMEOUT_NS) is lost; a
 * reply to a request no longer outstanding is late. Latency: from sending a request to
 * taking its reply, in bins of 100 ns up to 1 ms and of 10 us beyond (a percentile is its
 * bin's upper edge). At the end, after up to 200 ms for the outstanding replies, one line
 * on stdout:
 *   mode=M seconds=S sent=N answered=N lost=N late=N wrong=N misses=N p50_us=X p99_us=X
 * (seconds: from the first request sent to the last reply taken; answered: requests with a
 * valid reply). Exit status 1 when a reply was wrong, preloading did not finish, or the
 * port or the NOOP failed; 2 for bad arguments.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/net.h"
#include "headers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DATAGRAM 1472
#define SLOTS (1u << 18)                /* requests outstanding at most: a ring of them */
#define PRELOAD_WINDOW 256
#define MAX_WINDOW 1024
#define TIMEOUT_NS 200000000ull
#define CONNECT_NS 10000000000ull
#define PROBE_EVERY_NS 10000000ull
#define BURST 32
#define FINE_NS 100                     /* latency bins: 100 ns wide up to 1 ms, */
#define COARSE_FROM_NS 1000000ull
#define COARSE_NS 10000                 /* then 10 us wide up to TIMEOUT_NS */
#define FINE_BINS (COARSE_FROM_NS / FINE_NS)
#define BINS (FINE_BINS + (TIMEOUT_NS - COARSE_FROM_NS) / COARSE_NS + 1)
#define FRAME_HEADER 8                  /* memcached's UDP frame header */
#define MESSAGE_HEADER 24
#define NOOP_OPAQUE 0xffffffffu
#define MAGIC_REQUEST 0x80
#define MAGIC_RESPONSE 0x81
#define OP_GET 0x00
#define OP_NOOP 0x0a
#define STATUS_OK 0x0000
#define STATUS_KEY_NOT_FOUND 0x0001

enum mode { PRELOAD, THROUGHPUT, LATENCY };
enum state { FREE, PENDING, DONE };

/* A request as sent: its frame, the opcode, and where its key is in the frame. */
struct template {
    uint8_t *frame;
    uint16_t len, key_at, key_len;
    uint8_t opcode;
    bool answered;                  /* preload: it has had its answer */
};

struct slot {
    uint64_t sent_ns;
    uint32_t id, template;
    uint8_t state;
};

static struct template *templates;
static uint32_t count, opaque_at;
static struct slot *slots;
static uint32_t histogram[BINS];
static struct {
    uint64_t sent, answered, lost, late, wrong, misses;
} totals;
static uint64_t next_id, tail, last_reply_ns;

static const struct floem_udp_endpoints ENDS = {
    .src_mac = {0x02, 0, 0, 0, 0, 0x02}, .dst_mac = {0x02, 0, 0, 0, 0, 0x01},
    .src_ip = 0x0a000002, .dst_ip = 0x0a000001, .src_port = 40000, .dst_port = 11211};

static uint32_t bin_of(uint64_t ns)
{
    if (ns < COARSE_FROM_NS)
        return (uint32_t)(ns / FINE_NS);
    uint64_t b = FINE_BINS + (ns - COARSE_FROM_NS) / COARSE_NS;
    return (uint32_t)(b < BINS ? b : BINS - 1);
}

/* The latency at the upper edge of bin `b`, in microseconds. */
static double bin_end_us(uint32_t b)
{
    if (b < FINE_BINS)
        return (double)(b + 1) * FINE_NS / 1e3;
    return (double)(COARSE_FROM_NS + (b + 1 - FINE_BINS) * COARSE_NS) / 1e3;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static _Noreturn void fail(const char *message)
{
    fprintf(stderr, "dpdk_blast: %s\n", message);
    exit(1);
}

/* Template `t`: a frame around `datagram`. */
static void make_template(struct template *t, const uint8_t *datagram, uint16_t len)
{
    if (len < FRAME_HEADER + MESSAGE_HEADER || len > MAX_DATAGRAM || opaque_at + 4 > len)
        fail("a bad template (too short or too long for one frame)");
    t->len = (uint16_t)(FLOEM_UDP_FRAME_LEN + len);
    t->frame = malloc(t->len);
    if (t->frame == NULL)
        fail("out of memory");
    memcpy(t->frame + FLOEM_UDP_FRAME_LEN, datagram, len);
    floem_udp_fill(t->frame, len, &ENDS, 0);
    const uint8_t *m = datagram + FRAME_HEADER;
    t->opcode = m[1];
    t->key_len = floem_get16(m + 2);
    t->key_at = (uint16_t)(FLOEM_UDP_FRAME_LEN + FRAME_HEADER + MESSAGE_HEADER + m[4]);
    t->answered = false;
    if (t->key_at + t->key_len > t->len)
        fail("a bad template (its key runs past its end)");
}

/* The requests of file `path`. */
static void read_templates(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail("cannot open the template file");
    uint32_t capacity = 0;
    uint8_t head[2], datagram[MAX_DATAGRAM + 1];
    while (fread(head, 1, 2, f) == 2) {
        uint16_t len = (uint16_t)(head[0] | head[1] << 8);
        if (len > MAX_DATAGRAM || fread(datagram, 1, len, f) != len)
            fail("a bad template (too long, or the file ends inside it)");
        if (count == capacity) {
            capacity = capacity ? 2 * capacity : 1024;
            templates = realloc(templates, capacity * sizeof *templates);
            if (templates == NULL)
                fail("out of memory");
        }
        make_template(&templates[count++], datagram, len);
    }
    fclose(f);
    if (count == 0)
        fail("no template");
}

/* Send template `t` as request `id` (within a receive burst: staged until the flush). */
static bool send_frame(const struct template *t, uint32_t id)
{
    floem_packet_t p;
    if (!floem_net_alloc(t->len, &p))
        return false;
    memcpy(p.data, t->frame, t->len);
    floem_put32((uint8_t *)p.data + FLOEM_UDP_FRAME_LEN + opaque_at, id);
    floem_net_tx(0, &p);
    return true;
}

/* The datagram of a received frame from the store, or NULL. */
static const uint8_t *datagram_of(const floem_packet_t *p, size_t *len)
{
    struct floem_udp_view v;
    if (floem_udp_parse(p->data, p->len, 0, &v) != FLOEM_UDP_OK ||
        floem_get16(&v.udp->dst_port) != ENDS.src_port ||
        v.payload_len < FRAME_HEADER + MESSAGE_HEADER || opaque_at + 4 > v.payload_len)
        return NULL;
    *len = v.payload_len;
    return v.payload;
}

/* Send a NOOP every PROBE_EVERY_NS until one is answered. */
static void connect_port(void)
{
    struct template noop;
    uint8_t datagram[FRAME_HEADER + MESSAGE_HEADER] = {0, 0, 0, 0, 0, 1, 0, 0, MAGIC_REQUEST,
                                                       OP_NOOP};
    floem_put32(datagram + opaque_at, NOOP_OPAQUE);
    make_template(&noop, datagram, sizeof datagram);
    for (uint64_t start = now_ns(), probe = 0; now_ns() - start < CONNECT_NS;) {
        floem_net_frame_t frames[BURST];
        unsigned n = floem_net_rx(0, frames, BURST);
        bool answered = false;
        for (unsigned i = 0; i < n; i++) {
            floem_packet_t p = floem_net_packet(frames[i]);
            size_t len;
            const uint8_t *d = datagram_of(&p, &len);
            answered |= d != NULL && d[FRAME_HEADER] == MAGIC_RESPONSE &&
                        d[FRAME_HEADER + 1] == OP_NOOP && floem_get32(d + opaque_at) == NOOP_OPAQUE;
            floem_net_free(&p);
        }
        if (!answered && now_ns() >= probe) {
            send_frame(&noop, NOOP_OPAQUE);
            probe = now_ns() + PROBE_EVERY_NS;
        }
        floem_net_flush(0);
        if (answered) {
            free(noop.frame);
            return;
        }
    }
    fail("the store did not answer a NOOP in 10 s");
}

/* Check reply `d` (`len` bytes) and settle its request. */
static void take_reply(const uint8_t *d, size_t len, uint64_t now)
{
    uint32_t id = floem_get32(d + opaque_at);
    if (id == NOOP_OPAQUE)              /* an answer to a later probe of connect_port */
        return;
    struct slot *s = &slots[id % SLOTS];
    if (s->state != PENDING || s->id != id) {
        totals.late++;
        return;
    }
    const struct template *t = &templates[s->template];
    const uint8_t *m = d + FRAME_HEADER;
    uint16_t status = floem_get16(m + 6), key_len = floem_get16(m + 2);
    size_t value_at = FRAME_HEADER + MESSAGE_HEADER + m[4] + key_len;
    size_t value_end = FRAME_HEADER + MESSAGE_HEADER + floem_get32(m + 8);
    bool one = floem_get16(d + 2) == 0 && floem_get16(d + 4) == 1;
    bool ok = one && m[0] == MAGIC_RESPONSE && m[1] == t->opcode && value_end == len &&
              value_at <= value_end;
    if (ok && t->opcode == OP_GET && status == STATUS_KEY_NOT_FOUND) {
        totals.misses++;
    } else if (ok && status == STATUS_OK && t->opcode == OP_GET) {
        ok = value_end - value_at > t->key_len &&
             memcmp(d + value_at, t->frame + t->key_at, t->key_len) == 0 &&
             d[value_at + t->key_len] == '#';
    } else {
        ok = ok && status == STATUS_OK;
    }
    s->state = DONE;
    if (!ok) {
        totals.wrong++;
        return;
    }
    totals.answered++;
    templates[s->template].answered = true;
    histogram[bin_of(now - s->sent_ns)]++;
    last_reply_ns = now;
}

/* Move `tail` past the settled requests, declaring lost those outstanding for TIMEOUT_NS
 * (with `all`: every one still outstanding). */
static void advance_tail(uint64_t now, bool all)
{
    while (tail < next_id) {
        struct slot *s = &slots[tail % SLOTS];
        if (s->state == PENDING) {
            if (!all && now - s->sent_ns < TIMEOUT_NS)
                return;
            totals.lost++;
        }
        s->state = FREE;
        tail++;
    }
}

/* The next template to send in preload mode, or `count` when none is left to send now. */
static uint32_t preload_next(uint32_t *cursor)
{
    for (;;) {
        while (*cursor < count && templates[*cursor].answered)
            ++*cursor;
        if (*cursor < count)
            return (*cursor)++;
        if (tail != next_id)            /* the pass's requests are still outstanding */
            return count;
        for (*cursor = 0; *cursor < count && templates[*cursor].answered; ++*cursor)
            ;
        if (*cursor == count)
            return count;               /* every template answered */
        /* another pass, for those lost */
    }
}

/* Send and receive for `seconds`, then take the outstanding replies. */
static void run(enum mode mode, double seconds, double n)
{
    uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9);
    uint32_t cursor = 0;
    uint64_t window = mode == PRELOAD ? PRELOAD_WINDOW : (uint64_t)n;
    for (;;) {
        floem_net_frame_t frames[BURST];
        unsigned got = floem_net_rx(0, frames, BURST);
        uint64_t now = now_ns();
        for (unsigned i = 0; i < got; i++) {
            floem_packet_t p = floem_net_packet(frames[i]);
            size_t len;
            const uint8_t *d = datagram_of(&p, &len);
            if (d == NULL)
                totals.wrong++;
            else
                take_reply(d, len, now);
            floem_net_free(&p);
        }
        advance_tail(now, false);
        now = now_ns();
        bool sending = now < end;
        for (unsigned k = 0; sending && k < BURST && next_id - tail < SLOTS; k++) {
            uint32_t t;
            if (mode == PRELOAD) {
                if (next_id - tail >= window || (t = preload_next(&cursor)) == count)
                    break;
            } else if (mode == THROUGHPUT) {
                if (next_id - tail >= window)
                    break;
                t = (uint32_t)(next_id % count);
            } else {
                if ((double)next_id >= (double)(now - start) * 1e-9 * n)
                    break;
                t = (uint32_t)(next_id % count);
            }
            if (!send_frame(&templates[t], (uint32_t)next_id))
                break;
            slots[next_id % SLOTS] = (struct slot){now, (uint32_t)next_id, t, PENDING};
            next_id++;
            totals.sent++;
        }
        floem_net_flush(0);
        bool preloaded = mode == PRELOAD && cursor == count && tail == next_id;
        if (preloaded || (!sending && tail == next_id) || now > end + TIMEOUT_NS)
            break;
    }
    advance_tail(0, true);
    double elapsed = last_reply_ns > start ? (double)(last_reply_ns - start) * 1e-9 : 0;
    double p50 = 0, p99 = 0;
    uint64_t seen = 0;
    for (uint32_t b = 0; b < BINS && totals.answered > 0; b++) {
        seen += histogram[b];
        if (p50 == 0 && seen * 2 >= totals.answered)
            p50 = bin_end_us(b);
        if (seen * 100 >= totals.answered * 99) {
            p99 = bin_end_us(b);
            break;
        }
    }
    static const char *const names[] = {"preload", "throughput", "latency"};
    printf("mode=%s seconds=%.3f sent=%llu answered=%llu lost=%llu late=%llu wrong=%llu "
           "misses=%llu p50_us=%.1f p99_us=%.1f\n", names[mode], elapsed,
           (unsigned long long)totals.sent, (unsigned long long)totals.answered,
           (unsigned long long)totals.lost, (unsigned long long)totals.late,
           (unsigned long long)totals.wrong, (unsigned long long)totals.misses,
           p50, p99);
}

int main(int argc, char **argv)
{
    static const char *const usage =
        "usage: dpdk_blast preload|throughput|latency TEMPLATES OPAQUE_AT SECONDS "
        "[WINDOW (throughput) | RATE (latency)]\n";
    enum mode mode;
    if (argc == 5 && strcmp(argv[1], "preload") == 0)
        mode = PRELOAD;
    else if (argc == 6 && strcmp(argv[1], "throughput") == 0)
        mode = THROUGHPUT;
    else if (argc == 6 && strcmp(argv[1], "latency") == 0)
        mode = LATENCY;
    else {
        fputs(usage, stderr);
        return 2;
    }
    char *end;
    long at = strtol(argv[3], &end, 10);
    double seconds = strtod(argv[4], NULL), n = argc == 6 ? strtod(argv[5], NULL) : 0;
    if (*end != '\0' || at < FRAME_HEADER || at > MAX_DATAGRAM - 4 || !(seconds > 0) ||
        (mode == THROUGHPUT && !(n >= 1 && n <= MAX_WINDOW)) ||
        (mode == LATENCY && !(n > 0 && n * TIMEOUT_NS / 1e9 < SLOTS))) {
        fputs(usage, stderr);
        fprintf(stderr, "WINDOW: 1 to %d; RATE: below %.0f/s\n", MAX_WINDOW,
                SLOTS / (TIMEOUT_NS / 1e9));
        return 2;
    }
    opaque_at = (uint32_t)at;
    read_templates(argv[2]);
    slots = calloc(SLOTS, sizeof *slots);
    if (slots == NULL)
        fail("out of memory");
    floem_net_init();
    connect_port();
    run(mode, seconds, n);
    floem_net_finalize();
    bool preloaded = true;
    for (uint32_t t = 0; mode == PRELOAD && t < count; t++)
        preloaded &= templates[t].answered;
    if (!preloaded)
        fprintf(stderr, "dpdk_blast: preloading did not finish in %g s\n", seconds);
    return totals.wrong == 0 && preloaded ? 0 : 1;
}
