"""What the shallow network functions share: the program's shape, where each part
runs, and the parsing of their address parameters.

A shallow function reads and rewrites only a frame's headers. Every one is the same program
around a different function::

    segment rx (I/O device):  FromNet -> StoreFrame -> CheckFrame -> rxq
                                                           +-> DropFrame   (malformed: counted)
    segment nf (function's device):  rxq -> FUNCTION -> txq.enq[0]
                                                +-> txq.enq[1]             (dropped: counted)
    segment tx (I/O device):  txq.deq[0] -> LoadFrame -> ToNet
                              txq.deq[1] -> DropFrame

``-D device=`` places it: ``split`` puts packet I/O on the NIC and the function on the host
(the case payload slicing is for: only the headers the function reads cross PCIe), ``cpu``
and ``nic`` put everything on one side. A frame the function drops goes back to the I/O side
to be freed there, since its buffer (and, sliced, its payload) belongs to the process owning
the port. Each segment has one thread, so frames leave in the order they arrived.

A function is a composite or element class taking no arguments, with ports ``inp``, ``out``
and ``drop`` carrying no value: the frame is the per-packet state's `Frame` field ``pkt``
(`Packet`), which the function reads and writes member by member (``state->pkt->ip.ttl``).
"""
from __future__ import annotations

import ipaddress
import os
import sys
from collections.abc import Callable

from floem import (Composite, Element, Flow, FloemError, Frame, Input, Output, PerPacket, Queue,
                   Segment, State, param, target)
from floem.library import (CheckFrame, DropFrame, FrameCheckStats, FromNet, IPv4Frame, LoadFrame,
                           StoreFrame, ToNet)
from floem.library import packets

#: C headers of the functions' bodies: floem/frames.h (byte order, checksum updates) and
#: shallow.h beside this file (hashes, flow tables).
HEADERS = packets.HEADERS + (os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          "shallow.h"),)

#: Where packet I/O (segments rx and tx) and the function (segment nf) run, per ``device``.
PLACEMENTS = {
    "split": (target.NIC, target.CPU),
    "cpu": (target.CPU, target.CPU),
    "nic": (target.NIC, target.NIC),
}


class Packet(State):
    """The per-packet state of every shallow function: the frame, typed by its headers."""

    pkt = Frame(IPv4Frame)


class Function(Element):
    """An element that is a shallow function (or its part): ports ``inp``, ``out`` and
    ``drop``, carrying no value (the frame is ``state->pkt``), its C with `HEADERS`, and a
    state counting its drops by reason (``self.drops``; a function with more states
    overrides `states`)."""

    c_headers = HEADERS

    def configure(self) -> None:
        self.inp = Input()
        self.out = Output()
        self.drop = Output()

    def states(self, counts: State) -> None:
        self.drops = counts


class CheckCounts(FrameCheckStats):
    """`CheckFrame`'s counts, printed by ``--report`` (``reasons`` in the order of
    `floem.library.packets.CHECK_REASONS`)."""

    report = True


def app_error(message: str) -> FloemError:
    """A `FloemError` at the line of the app file that is running (the caller of this module)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return FloemError(message, os.path.abspath(frame.f_code.co_filename), frame.f_lineno)


def device() -> str:
    """Declare ``-D device=split|cpu|nic`` and return its value."""
    return param("device", "split", choices=list(PLACEMENTS),
                 help="split: packet I/O on the NIC, the function on the host; "
                      "cpu or nic: everything there")


def queue_size() -> int:
    """Declare ``-D queue_size=N`` (entries of each queue) and return it."""
    size = param("queue_size", 256, help="entries of the queues between I/O and the function")
    if size < 2:
        raise app_error(f"-D queue_size={size}: a queue needs at least 2 entries")
    return size


def ports(name: str, text: str) -> tuple[int, int]:
    """The port ``N`` or range ``N-M`` (0 to 65535) of parameter ``name``."""
    low, _, high = text.strip().partition("-")
    try:
        span = (int(low), int(high or low))
    except ValueError:
        span = (1, 0)
    if not 0 <= span[0] <= span[1] <= 65535:
        raise app_error(f"-D {name}: {text!r} is not a port or port range (N or N-M, 0-65535)")
    return span


def ipv4(name: str, text: str) -> int:
    """The IPv4 address ``text`` of parameter ``name``, as a host-order integer."""
    try:
        return int(ipaddress.IPv4Address(text.strip()))
    except ValueError:
        raise app_error(f"-D {name}: {text!r} is not an IPv4 address") from None


def prefix(name: str, text: str) -> ipaddress.IPv4Network:
    """The IPv4 prefix ``text`` (``a.b.c.d/len``; host bits must be 0) of parameter ``name``."""
    try:
        return ipaddress.IPv4Network(text.strip())
    except ValueError:
        raise app_error(f"-D {name}: {text!r} is not an IPv4 prefix (a.b.c.d/len, host bits "
                        "0)") from None


def mac(name: str, text: str) -> bytes:
    """The Ethernet address ``text`` (``aa:bb:cc:dd:ee:ff``) of parameter ``name``: 6 bytes."""
    parts = text.strip().split(":")
    try:
        value = bytes(int(p, 16) for p in parts if len(p) in (1, 2))
    except ValueError:
        value = b""
    if len(parts) != 6 or len(value) != 6:
        raise app_error(f"-D {name}: {text!r} is not an Ethernet address (aa:bb:cc:dd:ee:ff)")
    return value


def c_bytes(value: bytes) -> str:
    """``value`` as the elements of a C array initializer."""
    return ", ".join(f"0x{b:02x}" for b in value)


def set_mac(member: str, value: bytes) -> str:
    """C statements writing the 6-byte member ``member`` (e.g. ``state->pkt->eth.dst``) with
    ``value``, byte by byte with constant indexes (so the compiler bounds every write)."""
    return " ".join(f"{member}[{i}] = 0x{b:02x};" for i, b in enumerate(value))


def serve(name: str, function: Callable[[], Element | Composite], where: str, size: int) -> None:
    """Segments ``name``_rx, ``name`` and ``name``_tx around ``function()``, placed by
    ``where`` (a key of `PLACEMENTS`), with queues of ``size`` entries; `CheckFrame` counts
    in persistent state ``checks`` (printed by ``--report``)."""
    io, fn = PLACEMENTS[where]
    checks = CheckCounts("checks")
    rxq = Queue(f"{name}_rxq", size=size)
    txq = Queue(f"{name}_txq", channel=2, size=size)

    class rx(Segment):
        """FromNet -> StoreFrame -> CheckFrame -> rxq; malformed frames dropped here."""

        def impl(self) -> None:
            check = CheckFrame(states=[checks])
            FromNet() >> StoreFrame() >> check
            check.out >> rxq
            check.drop >> DropFrame()

    class nf(Segment):
        """rxq -> the function -> txq (passed on channel 0, dropped on channel 1)."""

        def impl(self) -> None:
            work = function()
            rxq >> work
            work.out >> txq.enq[0]
            work.drop >> txq.enq[1]

    class tx(Segment):
        """Frames to the network; dropped ones given back where they were received."""

        def impl(self) -> None:
            txq.deq[0] >> LoadFrame() >> ToNet()
            txq.deq[1] >> DropFrame()

    class Shallow(Flow):
        """The three segments, with `Packet` as their per-packet state."""

        state = PerPacket(Packet)

        def impl(self) -> None:
            rx(f"{name}_rx", device=io)
            nf(name, device=fn)
            tx(f"{name}_tx", device=io)

    Shallow()
