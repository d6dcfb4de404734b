"""Ethernet / IPv4 / UDP: check received frames, build and address frames to send.

Every element here carries a frame the way packet I/O does, as three values
``(size_t size, uint8_t *data, void *buf)``: the frame's length, its first byte
(the Ethernet header) and the buffer handle that ``ToNet`` / ``NetFree``
need. The C views (``struct floem_ether_hdr``, ``floem_ipv4_hdr``,
``floem_udp_hdr``), byte-order helpers (``floem_get16/32``,
``floem_put16/32``) and functions (``floem_udp_parse``,
``floem_udp_payload``, checksums) of ``library/c/headers.h`` are visible to
the bodies of any program using these elements.

Typical reply path::

    check = CheckUDP()
    FromNet() >> check
    check.out >> Work() >> SwapUDP() >> SetUDPLength() >> ToNet()
    check.drop >> NetFree()
"""
from __future__ import annotations

import ipaddress

from floem import Array, Element, Field, Input, Output, Persistent, State, Uint

from ._support import FRAME, c_bytes, c_file, read_frame

HEADERS = (c_file("headers.h"),)
SOURCES = (c_file("headers.c"),)

#: Index of each drop reason in `UDPCheckStats.reasons` (``enum floem_udp_verdict``).
DROP_REASONS = ("ok", "truncated", "not_ipv4", "bad_ip_header", "fragment", "not_udp",
                "bad_udp_length", "bad_checksum")


class UDPCheckStats(State):
    """What a `CheckUDP` let through and dropped; ``reasons[i]`` counts `DROP_REASONS[i]`."""

    passed = Field(Uint(64))
    dropped = Field(Uint(64))
    reasons = Field(Array(Uint(64), len(DROP_REASONS)))
    packed = False


class CheckUDP(Element):
    """Pass Ethernet/IPv4/UDP frames whose headers are whole and consistent; drop the rest.

    Checks, never reading at or past ``data + size``: the EtherType is IPv4,
    the IPv4 version is 4 and its header length (IHL) at least 20 bytes and
    inside the frame, the total length covers the header and fits in the
    frame (Ethernet padding after it is allowed), the packet is not a
    fragment, the protocol is UDP, and the UDP length is at least 8 and ends
    within the IPv4 total length. With ``verify_checksums=True``, the IPv4
    header checksum and a nonzero UDP checksum must also be right. Frames
    that pass go to ``out`` unchanged; after it, ``floem_udp_payload(data)``
    and ``floem_udp_payload_len(data)`` locate the UDP payload. The others go
    to ``drop`` and are counted in the `UDPCheckStats` state (``states=[s]``
    to read it from ``main``).

    Ports: ``inp`` frame; ``out`` frame; ``drop`` frame.
    """

    c_headers = HEADERS
    c_sources = SOURCES
    stats = Persistent(UDPCheckStats)

    def configure(self, verify_checksums: bool = False) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        self.drop = Output(*FRAME)
        self.verify = int(bool(verify_checksums))

    def impl(self) -> None:
        self.run_c(f'''
            {read_frame()}
            enum floem_udp_verdict verdict = floem_udp_parse(data, size, {self.verify}, NULL);
            if (verdict == FLOEM_UDP_OK) {{
                floem_add(&stats->passed, 1);
            }} else {{
                floem_add(&stats->dropped, 1);
                floem_add(&stats->reasons[verdict], 1);
            }}
            output switch {{
                case verdict == FLOEM_UDP_OK: out(size, data, buf);
                else: drop(size, data, buf);
            }}
        ''')


def _mac(text: str) -> bytes:
    parts = text.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ValueError(f"not a MAC address: {text!r}")
    return bytes(int(p, 16) for p in parts)


class FillUDP(Element):
    """Write Ethernet, IPv4 and UDP headers in front of a payload: a frame to send.

    The payload is already at ``data + 42`` and the frame is ``size`` bytes,
    so the payload has ``size - 42``. The IPv4 header has no options, TTL 64,
    DF set and a correct checksum; the UDP checksum is computed when
    ``udp_checksum`` is true and 0 otherwise. Addresses are given as text
    (``"02:00:00:00:00:01"``, ``"10.0.0.1"``). A frame shorter than 42 bytes
    or longer than 65535 + 14 is passed on untouched (nothing is written).

    Ports: ``inp`` frame; ``out`` frame.
    """

    c_headers = HEADERS
    c_sources = SOURCES

    def configure(self, src_mac: str, dst_mac: str, src_ip: str, dst_ip: str,
                  src_port: int, dst_port: int, udp_checksum: bool = False) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        try:
            macs = _mac(src_mac), _mac(dst_mac)
            ips = int(ipaddress.IPv4Address(src_ip)), int(ipaddress.IPv4Address(dst_ip))
        except ValueError as e:
            raise self.loc.error(f"FillUDP: {e}") from None
        for port in (src_port, dst_port):
            if not 0 <= port <= 0xffff:
                raise self.loc.error(f"FillUDP: port {port} is not in 0..65535")
        self.ends = (f"{{{c_bytes(macs[0])}, {c_bytes(macs[1])}, {ips[0]}u, {ips[1]}u, "
                     f"{src_port}, {dst_port}}}")
        self.udp_checksum = int(bool(udp_checksum))

    def impl(self) -> None:
        self.run_c(f'''
            {read_frame()}
            static const struct floem_udp_endpoints ends = {self.ends};
            if (size >= FLOEM_UDP_FRAME_LEN && size <= 65535 + FLOEM_ETHER_LEN)
                floem_udp_fill(data, size - FLOEM_UDP_FRAME_LEN, &ends, {self.udp_checksum});
            output {{ out(size, data, buf); }}
        ''')


class SwapUDP(Element):
    """Address a received frame back to its sender: swap MACs, IPv4 addresses and UDP ports.

    The frame must have passed `CheckUDP`. Lengths and checksums are left
    alone (swapping keeps both checksums valid); follow with `SetUDPLength`
    when the payload changes.

    Ports: ``inp`` frame; ``out`` frame.
    """

    c_headers = HEADERS
    c_sources = SOURCES

    def configure(self) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)

    def impl(self) -> None:
        self.run_c(f'''
            {read_frame()}
            floem_udp_swap(data);
            output {{ out(size, data, buf); }}
        ''')


class SetUDPLength(Element):
    """Make a checked frame's headers agree with its (new) ``size``.

    Sets the IPv4 total length and the UDP length from ``size``, recomputes
    the IPv4 header checksum, and the UDP checksum when ``udp_checksum`` is
    true (else writes 0, "no checksum"). The frame must have passed
    `CheckUDP` before its payload was changed; with a ``size`` shorter than
    its headers or longer than 65535 + 14 bytes, it is passed on untouched.

    Ports: ``inp`` frame; ``out`` frame.
    """

    c_headers = HEADERS
    c_sources = SOURCES

    def configure(self, udp_checksum: bool = False) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        self.udp_checksum = int(bool(udp_checksum))

    def impl(self) -> None:
        self.run_c(f'''
            {read_frame()}
            const struct floem_ipv4_hdr *ip =
                (const struct floem_ipv4_hdr *)((const uint8_t *)data + FLOEM_ETHER_LEN);
            size_t headers = FLOEM_ETHER_LEN + floem_ipv4_header_len(ip) + FLOEM_UDP_LEN;
            if (size >= headers && size <= 65535 + FLOEM_ETHER_LEN)
                floem_udp_set_length(data, size, {self.udp_checksum});
            output {{ out(size, data, buf); }}
        ''')
