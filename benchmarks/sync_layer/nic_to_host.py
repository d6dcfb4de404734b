"""A NIC -> CPU transfer benchmark program: what transfer.py (here) and
../live_fields/live.py share.

A NIC thread produces `packets` packets (the C `fill` writes packet n's per-packet state);
a queue carries them to a host thread that counts them (the C `check` adds to
`control->bad` for a packet that did not arrive whole) and stamps the first and last
arrival; main prints the time between the two and packets/s after `label`.

The DMA counters of `--report` cover the NIC's whole life. To count only the
transfer, the NIC starts producing when main sets `control->go`, and, once it
has produced everything, polls `control->done` (set by main when the last
packet has arrived); it prints the engine's counters between the two moments,
its own polls of `done` taken out, as "bench: nic dma window: ..." (dma_window.c).
"""
from floem import (Element, Field, Flow, Input, Output, PerPacket, Persistent, Queue, Segment,
                   State, Uint, depend, include, main, target)


class Control(State):
    go = Field(Uint(32))            # main -> NIC: start producing
    done = Field(Uint(32))          # main -> NIC: the last packet has arrived
    received = Field(Uint(64))
    bad = Field(Uint(64))
    first_ns = Field(Uint(64))
    last_ns = Field(Uint(64))


def nic_to_host(packet: type[State], packets: int, fill: str, check: str, label: str) -> None:
    """The program: `packet` the per-packet state, `fill` and `check` C (the packet's
    number is `n` in `fill`), `label` the start of main's line (printf text)."""
    include('#include "dma_window.h"')     # beside this file
    depend("dma_window.c")

    class Produce(Element):
        """NIC source: waits for go, produces packets 1..packets, then measures until done."""

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
                    FILL
                } else if (next == PACKETS + 1) {
                    /* All produced: poll done every 20 us while the last write-backs go on. */
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
            '''.replace("PACKETS", f"{packets}u").replace("FILL", fill))

    class Count(Element):
        """Host: count, check, stamp the first and last arrival."""

        control = Persistent(Control)

        def states(self, control):
            self.control = control

        def configure(self):
            self.inp = Input()

        def impl(self):
            self.run_c(r'''
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
                if (control->received == 0)
                    control->first_ns = now;
                CHECK
                control->last_ns = now;
                __atomic_store_n(&control->received, control->received + 1, __ATOMIC_RELEASE);
            '''.replace("CHECK", check))

    control = Control("control")
    to_host = Queue("to_host", size=256)

    class Transfer(Flow):
        state = PerPacket(packet)

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
        printf("LABEL: PACKETS packets in %.6f s (first to last arrival), "
               "%.0f packets/s, bad %llu\n", s, (PACKETS - 1) / s, (unsigned long long)control->bad);
        usleep(100000);     /* let the NIC see done and print its counters before it is stopped */
    '''.replace("LABEL", label).replace("PACKETS", str(packets)))
