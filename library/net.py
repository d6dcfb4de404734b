"""Packet I/O elements: `FromNet`, `ToNet`, `NetAlloc`, `NetFree`.

A frame travels between elements as three values, `FRAME`::

    size_t size        the frame's length in bytes (Ethernet header included)
    uint8_t *data      its first byte
    void *buffer       the backend's handle of the memory holding it (an mbuf on DPDK)

Every frame that enters the graph (from `FromNet` or `NetAlloc`) must leave it
exactly once, through `ToNet` (sent) or `NetFree` (given back). An element may
rewrite the bytes, shrink ``size`` or move ``data`` within the same buffer
before sending; it must never read or write past ``data + size``.

The backend is chosen when building (``--net udp|tcp|pcap|dpdk``) and configured
when running (``--port``, ``--listen``, ``--pcap-in``/``--pcap-out``, ``--eal``); see
``runtime/include/floem/net.h``. Over ``--net tcp`` each frame is one message of a
connection's byte stream, delimited by the `Framer` given to `FromNet`
(`floem.library.stream` has memcached's and length-prefixed ones); its reply goes
back on that connection, in the order of the requests (the frames made with
``floem_net_alloc_before`` too). The process that runs these elements owns the
port: the host program, or the NIC process when they sit in NIC segments.
Thread *i* of a segment uses queue *i* % ``floem_net_queues()``; set
``FLOEM_NET_QUEUES`` (default 1) to the number of receiving threads to spread
the load (RSS on DPDK, ``SO_REUSEPORT`` sockets on udp).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from floem.paths import runtime_dir
from floem.lang.element import Element, Input, Output
from floem.lang.types import Pointer, SizeT, Uint, Void

#: The values of a frame on a port: ``Input(*FRAME)`` / ``Output(*FRAME)``.
FRAME = (SizeT, Pointer(Uint(8)), Pointer(Void))

#: The C header of packet I/O (``floem_net_alloc``, ``floem_net_tx``, ...), for elements that
#: call it from their bodies (``c_headers = HEADERS``, with ``uses_network = True``).
HEADERS: tuple[str, ...] = (os.path.join(runtime_dir(), "include", "floem", "net.h"),)
#: The C header of frames that may have crossed a queue (``floem_frame_drop``).
FRAME_HEADERS = (os.path.join(runtime_dir(), "include", "floem", "frames.h"),)


@dataclass(frozen=True)
class Framer:
    """Where a message ends in a byte stream (``--net tcp``): the C function ``function``, a
    ``floem_frame_fn`` (floem/net.h), called with the bytes a connection has received from
    where its next message starts, which answers the message's length, ``FLOEM_FRAME_MORE``
    or ``FLOEM_FRAME_CLOSE``. ``config_type`` and ``config`` (a C type and an initializer)
    make the constant it is given; ``headers`` and ``sources`` are the C files it needs
    (absolute paths). `floem.library.stream` has the framers of memcached's protocols and
    length-prefixed ones; a program may name a function of its own."""

    function: str
    config_type: str | None = None
    config: str | None = None
    headers: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    def declarations(self) -> str:
        """The C statements declaring ``framer``, a ``floem_framer_t``, in an element body."""
        if self.config_type is None:
            return f"static const floem_framer_t framer = {{{self.function}, NULL}};"
        return (f"static const {self.config_type} framer_config = {self.config}; "
                f"static const floem_framer_t framer = {{{self.function}, &framer_config}};")


class FromNet(Element):
    """Source: receive a burst of up to ``batch`` frames and emit each on ``out``.

    Polls receive queue ``floem_core_id % floem_net_queues()`` once per run of
    the segment, emits the frames in arrival order, then sends what the
    segment queued for transmission during the burst (``floem_net_flush``).
    An empty poll hands nothing on, so the turn is idle and the thread backs off.
    ``framer`` (a `Framer`) says where messages end in a connection's stream: over
    ``--net tcp`` each frame is one message, over datagrams one datagram as always.
    """

    c_headers = HEADERS
    uses_network = True

    def configure(self, batch: int = 32, framer: Framer | None = None) -> None:
        if not isinstance(batch, int) or not 1 <= batch <= 1024:
            raise self.loc.error(f"FromNet: batch must be an integer from 1 to 1024, not {batch!r}")
        if framer is not None and not isinstance(framer, Framer):
            raise self.loc.error(f"FromNet: framer must be a floem.library.Framer, not "
                                 f"{framer!r}")
        self.batch = batch
        self.framer = framer
        if framer is not None:
            self.c_headers = HEADERS + framer.headers
            self.c_sources = framer.sources
        self.out = Output(*FRAME)

    def impl(self) -> None:
        receive = (f"floem_net_rx(queue, frames, {self.batch})" if self.framer is None else
                   f"floem_net_rx_framed(queue, frames, {self.batch}, &framer)")
        declare = "" if self.framer is None else self.framer.declarations() + "\n"
        self.run_c(rf'''
            {declare}floem_net_frame_t frames[{self.batch}];
            unsigned queue = (unsigned)floem_core_id % floem_net_queues();
            unsigned n = {receive};
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
