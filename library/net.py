"""Packet I/O elements: `FromNet`, `ToNet`, `NetAlloc`, `NetFree`.

A frame travels between elements as three values, `FRAME`::

    size_t size        the frame's length in bytes (Ethernet header included)
    uint8_t *data      its first byte
    void *buffer       the backend's handle of the memory holding it (an mbuf on DPDK)

Every frame that enters the graph (from `FromNet` or `NetAlloc`) must leave it
exactly once, through `ToNet` (sent) or `NetFree` (given back). An element may
rewrite the bytes, shrink ``size`` or move ``data`` within the same buffer
before sending; it must never read or write past ``data + size``.

The backend is chosen when building (``--net udp|pcap|dpdk``) and configured
when running (``--port``, ``--pcap-in``/``--pcap-out``, ``--eal``); see
``runtime/include/floem/net.h``. The process that runs these elements owns the
port: the host program, or the NIC process when they sit in NIC segments.
Thread *i* of a segment uses queue *i* % ``floem_net_queues()``; set
``FLOEM_NET_QUEUES`` (default 1) to the number of receiving threads to spread
the load (RSS on DPDK, ``SO_REUSEPORT`` sockets on udp).
"""
from __future__ import annotations

import os

from floem.paths import runtime_dir
from floem.lang.element import Element, Input, Output
from floem.lang.types import Pointer, SizeT, Uint, Void

#: The values of a frame on a port: ``Input(*FRAME)`` / ``Output(*FRAME)``.
FRAME = (SizeT, Pointer(Uint(8)), Pointer(Void))

#: The C header of packet I/O (``floem_net_alloc``, ``floem_net_tx``, ...), for elements that
#: call it from their bodies (``c_headers = HEADERS``, with ``uses_network = True``).
HEADERS = (os.path.join(runtime_dir(), "include", "floem", "net.h"),)
#: The C header of frames that may have crossed a queue (``floem_frame_drop``).
FRAME_HEADERS = (os.path.join(runtime_dir(), "include", "floem", "frames.h"),)


class FromNet(Element):
    """Source: receive a burst of up to ``batch`` frames and emit each on ``out``.

    Polls receive queue ``floem_core_id % floem_net_queues()`` once per run of
    the segment, emits the frames in arrival order, then sends what the
    segment queued for transmission during the burst (``floem_net_flush``).
    An empty poll hands nothing on, so the turn is idle and the thread backs off.
    """

    c_headers = HEADERS
    uses_network = True

    def configure(self, batch: int = 32) -> None:
        if not isinstance(batch, int) or not 1 <= batch <= 1024:
            raise self.loc.error(f"FromNet: batch must be an integer from 1 to 1024, not {batch!r}")
        self.batch = batch
        self.out = Output(*FRAME)

    def impl(self) -> None:
        self.run_c(rf'''
            floem_net_frame_t frames[{self.batch}];
            unsigned queue = (unsigned)floem_core_id % floem_net_queues();
            unsigned n = floem_net_rx(queue, frames, {self.batch});
            output multiple;
            for (unsigned i = 0; i < n; i++) {{
                floem_packet_t pkt = floem_net_packet(frames[i]);
                out(pkt.len, (uint8_t *)pkt.data, pkt.buffer);
            }}
            floem_net_flush(queue);
        ''')


class ToNet(Element):
    """Leaf: queue a frame for transmission; its buffer belongs to the network again.

    Frames are sent in bursts at the end of the `FromNet` burst that led here,
    or at once when the segment does not start at a `FromNet`. The udp backend
    sends the UDP payload to the frame's IPv4/UDP destination.
    """

    c_headers = HEADERS
    uses_network = True

    def configure(self) -> None:
        self.inp = Input(*FRAME)

    def impl(self) -> None:
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buffer) = inp();
            floem_packet_t pkt = { data, size <= UINT32_MAX ? (uint32_t)size : UINT32_MAX, buffer };
            floem_net_tx((unsigned)floem_core_id, &pkt);    /* queue core % queues */
        ''')


class NetAlloc(Element):
    """A new frame of ``size`` bytes on ``out``, or nothing on ``oom`` when no buffer is free.

    The frame's bytes are uninitialised; failures are counted (``alloc failed``
    in the ``--report`` line of the network).
    """

    c_headers = HEADERS
    uses_network = True

    def configure(self) -> None:
        self.inp = Input(SizeT)
        self.out = Output(*FRAME)
        self.oom = Output()

    def impl(self) -> None:
        self.run_c(r'''
            size_t size = inp();
            floem_packet_t pkt = { NULL, 0, NULL };
            bool ok = size <= UINT32_MAX && floem_net_alloc((uint32_t)size, &pkt);
            output switch {
                case ok: out(pkt.len, (uint8_t *)pkt.data, pkt.buffer);
                else: oom();
            }
        ''')


class NetFree(Element):
    """Leaf: give a frame back without sending it (a dropped request, a malformed frame).

    It runs on either side of a queue between the NIC and the CPU: by the network port the
    buffer goes back to the network; elsewhere the frame is one that crossed (see
    ``floem_frame_drop`` in floem/frames.h).
    """

    c_headers = FRAME_HEADERS

    def configure(self) -> None:
        self.inp = Input(*FRAME)

    def impl(self) -> None:
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buffer) = inp();
            (void)size; (void)data;
            floem_frame_drop(buffer);
        ''')
