"""NIC -> CPU transfer of a 256-byte per-packet state of which only part is live
(benchmarks/live_fields).

Build-time parameters, from the environment (read when floem loads this file):
  LIVE_QUARTERS  how many of the four 64-byte fields the host reads: 1, 2, 3 or 4 (default 1)
  PACKETS        packets the NIC produces (default 1000000)

The NIC fills all four fields a, b, c, d of every packet; the host reads only
the first LIVE_QUARTERS of them, so only those cross the queue, unless the app
is built with --send-all-fields. main prints the time from the first packet's
arrival to the last one's, and packets/s. The NIC prints its DMA counters over
the transfer as "bench: nic dma window: ..." (see ../sync_layer/transfer.py).
"""
import os

from floem import (Array, Element, Field, Flow, Input, Output, PerPacket, Persistent, Queue,
                   Segment, State, Uint, depend, include, main, target)

LIVE_QUARTERS = int(os.environ.get("LIVE_QUARTERS", "1"))
PACKETS = int(os.environ.get("PACKETS", "1000000"))
assert LIVE_QUARTERS in (1, 2, 3, 4), "LIVE_QUARTERS must be 1, 2, 3 or 4"
FIELDS = "abcd"

include('#include "../sync_layer/dma_window.h"')
depend("../sync_layer/dma_window.c")


class Packet(State):
    """256 bytes of per-packet state: four 64-byte fields."""
    a = Field(Array(Uint(8), 64))
    b = Field(Array(Uint(8), 64))
    c = Field(Array(Uint(8), 64))
    d = Field(Array(Uint(8), 64))


class Control(State):
    go = Field(Uint(32))            # main -> NIC: start producing
    done = Field(Uint(32))          # main -> NIC: the last packet has arrived
    received = Field(Uint(64))
    bad = Field(Uint(64))
    first_ns = Field(Uint(64))
    last_ns = Field(Uint(64))


class Produce(Element):
    """NIC source: waits for go, fills all four fields of packets 1..PACKETS, then
    polls done and prints the DMA counters in between (as in ../sync_layer)."""

    control = Persistent(Control)

    def states(self, control):
        self.control = control

    def configure(self):
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            static uint32_t next = 0;            /* 0: waiting for go */
            static uint64_t polls = 0, last_poll_ns = 0;
            uint32_t n = 0, flag;
            if (next == 0) {
                dma_read(&control->go, sizeof flag, &flag);
                if (floem_wire(flag) != 0) {
                    dma_window_begin();
                    next = 1;
                } else {
                    usleep(20);
                }
            }
            if (next >= 1 && next <= PACKETS) {
                n = next++;
                memset(state->a, (int)(uint8_t)n, sizeof state->a);
                memset(state->b, (int)(uint8_t)n, sizeof state->b);
                memset(state->c, (int)(uint8_t)n, sizeof state->c);
                memset(state->d, (int)(uint8_t)n, sizeof state->d);
            } else if (next == PACKETS + 1) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
                if (now - last_poll_ns >= 20000) {
                    last_poll_ns = now;
                    dma_window_mark();
                    dma_read(&control->done, sizeof flag, &flag);
                    if (floem_wire(flag) != 0) {
                        dma_window_print(polls, sizeof flag);
                        next++;
                    }
                    polls++;
                }
            }
            output switch { case n != 0: out(); }
        '''.replace("PACKETS", f"{PACKETS}u"))


class Count(Element):
    """Host: read the first LIVE_QUARTERS fields (the live ones), count, stamp arrivals."""

    control = Persistent(Control)

    def states(self, control):
        self.control = control

    def configure(self):
        self.inp = Input()

    def impl(self):
        checks = "".join(f"\n            if (state->{f}[63] != state->a[0]) control->bad++;"
                         for f in FIELDS[:LIVE_QUARTERS])
        self.run_c(r'''
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
            if (control->received == 0)
                control->first_ns = now;''' + checks + r'''
            control->last_ns = now;
            __atomic_store_n(&control->received, control->received + 1, __ATOMIC_RELEASE);
        ''')


control = Control("control")
to_host = Queue("to_host", size=256)


class Transfer(Flow):
    state = PerPacket(Packet)

    def impl(self):
        class produce(Segment):
            def impl(self):
                Produce(states=[control]) >> to_host

        class consume(Segment):
            def impl(self):
                to_host >> Count(states=[control])

        produce("produce", device=target.NIC)
        consume("consume")


Transfer()

main(r'''
    __atomic_store_n(&control->go, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&control->received, __ATOMIC_ACQUIRE) < PACKETS)
        usleep(1000);
    __atomic_store_n(&control->done, 1, __ATOMIC_RELEASE);
    double s = (double)(control->last_ns - control->first_ns) / 1e9;
    printf("live LIVE/4 of 256 bytes: PACKETS packets in %.6f s (first to last arrival), "
           "%.0f packets/s, bad %llu\n", s, (PACKETS - 1) / s, (unsigned long long)control->bad);
    usleep(100000);     /* let the NIC see done and print its counters before it is stopped */
'''.replace("LIVE", str(LIVE_QUARTERS)).replace("PACKETS", str(PACKETS)))
