"""Frames in the per-packet state, read member by member: header layouts and frame elements.

A `Frame` field holds a received frame in the per-packet state, typed by a `State` that
describes its headers, so an element reads ``state->pkt->ip.ttl`` instead of parsing bytes,
and the compiler knows which bytes each element reads and writes. Across a queue between
CPU and NIC only those bytes cross, and a frame received on the NIC that the host reads
only the headers of keeps its payload on the NIC (docs/slicing.md)::

    class Pkt(State):
        pkt = Frame(IPv4Frame)          # state->pkt, state->pkt_len, state->pkt_buf

    FromNet() >> StoreFrame("pkt") >> Firewall() >> q          # on the NIC
    q >> ... >> LoadFrame("pkt") >> ToNet()

The layouts are views of the bytes on the wire: multi-byte members are in network byte
order (``ntohs(state->pkt->l4.udp.dst_port)``), on every platform, and no member is
converted when a frame crosses between a little-endian host and a big-endian NIC. A view
says nothing about whether the frame is long enough: check ``state->pkt_len`` (and the
IPv4 header length) before reading a member, as `CheckFrame` does.
"""
from __future__ import annotations

import os

from floem import Array, Element, Field, Input, Output, Persistent, State, Uint
from floem.paths import runtime_dir

from ._support import FRAME

#: The C header of kept frames and header byte order (``floem_ntoh16``,
#: ``floem_csum_replace32``, ``floem_frame_drop``, ...), for bodies using frames.
HEADERS = (os.path.join(runtime_dir(), "include", "floem", "frames.h"),)

#: Index of each reason in `FrameCheckStats.reasons`.
CHECK_REASONS = ("truncated", "not_ipv4", "ip_options", "bad_ip_length", "fragment",
                 "not_udp_tcp", "bad_udp_length", "tcp_options")


class EthernetHeader(State):
    """Ethernet II header (14 bytes)."""

    dst = Field(Array(Uint(8), 6))
    src = Field(Array(Uint(8), 6))
    type = Field(Uint(16))              # 0x0800: IPv4


class IPv4Header(State):
    """IPv4 header without options (20 bytes)."""

    version_ihl = Field(Uint(8))        # 0x45 without options
    tos = Field(Uint(8))
    total_length = Field(Uint(16))
    id = Field(Uint(16))
    fragment = Field(Uint(16))          # flags and fragment offset
    ttl = Field(Uint(8))
    protocol = Field(Uint(8))           # 6: TCP, 17: UDP
    checksum = Field(Uint(16))
    src = Field(Uint(32))
    dst = Field(Uint(32))


class UDPHeader(State):
    """UDP header (8 bytes)."""

    src_port = Field(Uint(16))
    dst_port = Field(Uint(16))
    length = Field(Uint(16))
    checksum = Field(Uint(16))          # 0: none


class TCPHeader(State):
    """TCP header without options (20 bytes)."""

    src_port = Field(Uint(16))
    dst_port = Field(Uint(16))
    seq = Field(Uint(32))
    ack = Field(Uint(32))
    offset = Field(Uint(8))             # data offset << 4
    flags = Field(Uint(8))
    window = Field(Uint(16))
    checksum = Field(Uint(16))
    urgent = Field(Uint(16))


class TransportHeader(State):
    """The transport header after IPv4: UDP or TCP (a union; ``ip.protocol`` says which).
    The ports are at the same place in both."""

    udp = Field(UDPHeader)
    tcp = Field(TCPHeader)
    union = True


class IPv4Frame(State):
    """An Ethernet frame carrying IPv4 without options and UDP or TCP: 34 bytes of headers
    before ``l4`` (the transport header); the payload follows the transport header."""

    eth = Field(EthernetHeader)
    ip = Field(IPv4Header)
    l4 = Field(TransportHeader)


class FrameCheckStats(State):
    """What a `CheckFrame` dropped: ``reasons[i]`` counts `CHECK_REASONS[i]`."""

    passed = Field(Uint(64))
    reasons = Field(Array(Uint(64), len(CHECK_REASONS)))
    packed = False


class CheckFrame(Element):
    """Pass frames that an `IPv4Frame` describes; drop the rest, counting why.

    A frame passes when it is long enough for its headers, is IPv4 without options and
    not a fragment, its IPv4 total length fits in the frame (Ethernet padding after it is
    allowed), and it carries UDP (a UDP length of at least 8 within the IPv4 packet) or TCP
    without options (a data offset of 5). After it, every member of ``state->FIELD`` may be
    read. It reads only header members, so a frame it checks may keep its payload where it
    arrived. Counts go to its `FrameCheckStats` state (``states=[s]`` to share or read it).

    Ports: ``inp`` no value; ``out`` no value (passed); ``drop`` no value.
    """

    c_headers = HEADERS
    stats = Persistent(FrameCheckStats)

    def configure(self, field: str = "pkt") -> None:
        self.field = field
        self.inp = Input()
        self.out = Output()
        self.drop = Output()

    def impl(self) -> None:
        f = self.field
        reason = {r: i for i, r in enumerate(CHECK_REASONS)}
        self.run_c(f'''
            inp();
            size_t len = state->{f}_len;
            int why = -1;
            if (len < 34)
                why = {reason["truncated"]};
            else if (floem_ntoh16(state->{f}->eth.type) != 0x0800)
                why = {reason["not_ipv4"]};
            else if (state->{f}->ip.version_ihl != 0x45)
                why = {reason["ip_options"]};
            else if (floem_ntoh16(state->{f}->ip.total_length) < 20
                     || 14 + (size_t)floem_ntoh16(state->{f}->ip.total_length) > len)
                why = {reason["bad_ip_length"]};
            else if ((floem_ntoh16(state->{f}->ip.fragment) & 0x3fff) != 0)
                why = {reason["fragment"]};
            else if (state->{f}->ip.protocol == 17) {{
                size_t ip_len = floem_ntoh16(state->{f}->ip.total_length);
                if (ip_len < 28)
                    why = {reason["truncated"]};
                else if (floem_ntoh16(state->{f}->l4.udp.length) < 8
                         || floem_ntoh16(state->{f}->l4.udp.length) > ip_len - 20)
                    why = {reason["bad_udp_length"]};
            }} else if (state->{f}->ip.protocol == 6) {{
                if (floem_ntoh16(state->{f}->ip.total_length) < 40)
                    why = {reason["truncated"]};
                else if ((state->{f}->l4.tcp.offset >> 4) != 5)
                    why = {reason["tcp_options"]};
            }} else {{
                why = {reason["not_udp_tcp"]};
            }}
            if (why < 0)
                floem_add(&stats->passed, 1);
            else
                floem_add(&stats->reasons[why], 1);
            output switch {{
                case why < 0: out();
                else: drop();
            }}
        ''')


class StoreFrame(Element):
    """Hold the frame arriving on ``inp`` in the per-packet `Frame` field ``field``.

    Ports: ``inp`` frame (from `FromNet`); ``out`` no value (the frame is in the state).
    """

    def configure(self, field: str = "pkt") -> None:
        self.field = field
        self.inp = Input(*FRAME)
        self.out = Output()

    def impl(self) -> None:
        f = self.field
        self.run_c(f'''
            (size_t size, uint8_t *data, void *buf) = inp();
            state->{f} = (void *)data;
            state->{f}_len = size;
            state->{f}_buf = buf;
            output {{ out(); }}
        ''')


class LoadFrame(Element):
    """Hand the per-packet `Frame` field ``field`` on as a frame (to `ToNet`, or any element
    taking frames). Every byte of the frame is then in use: across a queue before this
    element the frame crosses whole, unless its payload stayed on the device that received
    it and sends it (docs/slicing.md).

    Ports: ``inp`` no value; ``out`` frame.
    """

    def configure(self, field: str = "pkt") -> None:
        self.field = field
        self.inp = Input()
        self.out = Output(*FRAME)

    def impl(self) -> None:
        f = self.field
        self.run_c(f'''
            inp();
            output {{ out(state->{f}_len, (uint8_t *)state->{f}, state->{f}_buf); }}
        ''')


class DropFrame(Element):
    """Leaf: give the per-packet `Frame` field ``field``'s frame back without sending it,
    reading none of its bytes (on the device that received it: its buffer goes back to the
    network; elsewhere: see ``floem_frame_drop`` in floem/frames.h).

    Ports: ``inp`` no value.
    """

    c_headers = HEADERS

    def configure(self, field: str = "pkt") -> None:
        self.field = field
        self.inp = Input()

    def impl(self) -> None:
        self.run_c(f'''
            inp();
            floem_frame_drop(state->{self.field}_buf);
        ''')
