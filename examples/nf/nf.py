"""What the network functions of Floem paper section 7.1 share: where one runs, how it answers.

    segment NAME (-D device, -D cores):
        FromNet -> CheckUDP -> FUNCTION -> Reply -> ToNet
                       |           +-> NetFree   (dropped by the function, which counts it)
                       +-> NetFree               (not whole Ethernet/IPv4/UDP; CheckUDP counts it)
    Reply = ClearUDPChecksum -> SwapUDP: the changed packet goes back to its sender

A function is a composite or element class taking no arguments, with ports ``inp``,
``out`` and ``drop`` that carry frames (`floem.library.FRAME`). An app file declares
its parameters with `placement` (and its own), then calls `serve`.
"""
from __future__ import annotations

import os
import sys
from typing import Callable, NamedTuple

from floem import (Composite, Element, FloemError, Input, Output, Segment, State, param,
                   target)
from floem.library import FRAME, CheckUDP, FromNet, NetFree, SwapUDP, ToNet
from floem.library import headers

DEVICES = {"cpu": target.CPU, "nic": target.NIC, "auto": target.AUTO}


class Placement(NamedTuple):
    """Where a function's segment runs: ``device`` (``cpu``, ``nic``, or ``auto``: the
    compiler may cut it, see docs/placement.md) and its thread count."""

    device: str
    cores: int


def app_error(message: str) -> FloemError:
    """A `FloemError` at the line of the app file that is running (the caller of this module)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return FloemError(message, os.path.abspath(frame.f_code.co_filename), frame.f_lineno)


def placement() -> Placement:
    """Declare ``-D device=cpu|nic|auto`` and ``-D cores=N`` and return their values."""
    device = param("device", "cpu", choices=list(DEVICES),
                   help="where the function's segment runs")
    cores = param("cores", 1, help="threads of the function's segment (on the NIC: NIC cores)")
    if cores < 1:
        raise app_error(f"-D cores={cores}: the segment needs at least one thread")
    return Placement(device, cores)


def hex_param(name: str, default: str, size: int, help: str) -> bytes:
    """Declare ``-D name=HEX`` (exactly ``size`` bytes, as ``2 * size`` hex digits); its bytes."""
    text = param(name, default, help=help)
    try:
        value = bytes.fromhex(text)
    except ValueError:
        value = b""
    if len(value) != size or len(text) != 2 * size:
        raise app_error(f"-D {name}={text}: must be {2 * size} hex digits ({size} bytes)")
    return value


class Tally(Element):
    """Count a frame in field ``field`` of a persistent state (``states=[s]``) and pass it on.

    Ports: ``inp`` frame; ``out`` frame.
    """

    def configure(self, field: str) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        self.field = field

    def states(self, counts: State) -> None:
        self.counts = counts

    def impl(self) -> None:
        self.run_c(f'''
            (size_t size, uint8_t *data, void *buf) = inp();
            floem_add(&counts->{self.field}, 1);
            output {{ out(size, data, buf); }}
        ''')


class ClearUDPChecksum(Element):
    """The payload of a checked frame changed: set its UDP checksum to 0 ("none", as IPv4
    allows) rather than leave a wrong one. The IPv4 header, and so its checksum, is unchanged.

    Ports: ``inp`` frame; ``out`` frame.
    """

    c_headers = headers.HEADERS
    c_sources = headers.SOURCES

    def configure(self) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)

    def impl(self) -> None:
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buf) = inp();
            struct floem_ipv4_hdr *ip = (struct floem_ipv4_hdr *)(data + FLOEM_ETHER_LEN);
            struct floem_udp_hdr *udp =
                (struct floem_udp_hdr *)((uint8_t *)ip + floem_ipv4_header_len(ip));
            floem_put16(&udp->checksum, 0);
            output { out(size, data, buf); }
        ''')


class Reply(Composite):
    """Address a frame whose payload the function changed back to its sender."""

    def configure(self) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)

    def impl(self) -> None:
        self.inp >> ClearUDPChecksum() >> SwapUDP() >> self.out


def serve(name: str, function: Callable[[], Element | Composite], where: Placement) -> None:
    """Segment ``name``, on ``where``: every UDP packet through ``function()``, answered."""
    class nf(Segment):
        """FromNet -> CheckUDP -> function -> Reply -> ToNet; drops to NetFree."""

        def impl(self) -> None:
            check, work, free = CheckUDP(), function(), NetFree()
            FromNet() >> check
            check.out >> work
            work.out >> Reply() >> ToNet()
            check.drop >> free
            work.drop >> free

    nf(name, device=DEVICES[where.device], cores=list(range(where.cores)))
