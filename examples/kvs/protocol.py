"""The memcached binary protocol over UDP: encoding, decoding and reassembly (no I/O).

Every datagram starts with memcached's 8-byte UDP frame header, then carries a
slice of one binary-protocol message (24-byte header, extras, key, value; all
big-endian)::

    frame header   request id u16 | sequence u16 | total datagrams u16 | reserved u16
    message        magic u8 | opcode u8 | key length u16 | extras length u8 | data type u8 |
                   vbucket (request) or status (response) u16 | body length u32 |
                   opaque u32 | cas u64 | extras | key | value

A request is one datagram (sequence 0 of 1). A response echoes the request id,
opcode and opaque; when the message is longer than `MAX_CHUNK` bytes it is cut
into datagrams of at most `MAX_DATAGRAM` bytes, numbered 0..n-1 of n, which
`Reassembler` puts back together. `build_frame` wraps a datagram in
Ethernet/IPv4/UDP headers (with dpkt) for pcap files.
"""
from __future__ import annotations

import enum
import socket
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import NamedTuple

import dpkt

MAGIC_REQUEST = 0x80
MAGIC_RESPONSE = 0x81

FRAME_HEADER = struct.Struct(">HHHH")
HEADER = struct.Struct(">BBHBBHIIQ")
FRAME_HEADER_SIZE = FRAME_HEADER.size
HEADER_SIZE = HEADER.size
MAX_DATAGRAM = 1400
MAX_CHUNK = MAX_DATAGRAM - FRAME_HEADER_SIZE
MAX_KEY_LENGTH = 250
MAX_UDP_PAYLOAD = 65507
SET_EXTRAS = struct.Struct(">II")
FLAGS = struct.Struct(">I")


class Opcode(enum.IntEnum):
    """The binary-protocol commands the key-value store speaks."""

    GET = 0x00
    SET = 0x01
    DELETE = 0x04
    NOOP = 0x0A
    GETK = 0x0C


class Status(enum.IntEnum):
    """Response statuses."""

    OK = 0x00
    KEY_NOT_FOUND = 0x01
    INVALID_ARGUMENTS = 0x04
    UNKNOWN_COMMAND = 0x81
    OUT_OF_MEMORY = 0x82


GET, SET, DELETE, NOOP, GETK = Opcode.GET, Opcode.SET, Opcode.DELETE, Opcode.NOOP, Opcode.GETK
OK, KEY_NOT_FOUND, INVALID_ARGUMENTS, UNKNOWN_COMMAND, OUT_OF_MEMORY = (
    Status.OK, Status.KEY_NOT_FOUND, Status.INVALID_ARGUMENTS, Status.UNKNOWN_COMMAND,
    Status.OUT_OF_MEMORY)


class ProtocolError(ValueError):
    """A datagram or message that is not valid memcached binary protocol over UDP.

    ``request_id`` is the frame header's request id when the frame header could
    be read, else None.
    """

    def __init__(self, message: str, request_id: int | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


class FrameHeader(NamedTuple):
    """memcached's UDP frame header."""

    request_id: int
    sequence: int
    total: int
    reserved: int


@dataclass(frozen=True)
class Request:
    """One request message together with the request id of the datagram carrying it."""

    request_id: int
    opcode: int
    key: bytes = b""
    value: bytes = b""
    extras: bytes = b""
    opaque: int = 0
    cas: int = 0

    def encode(self) -> bytes:
        """The request datagram (frame header and message); ValueError if a field overflows."""
        _check_field("request id", self.request_id, 16)
        datagram = (FRAME_HEADER.pack(self.request_id, 0, 1, 0)
                    + encode_message(MAGIC_REQUEST, self.opcode, 0, self.opaque, self.cas,
                                     self.extras, self.key, self.value))
        if len(datagram) > MAX_UDP_PAYLOAD:
            raise ValueError(f"a {len(datagram)}-byte request does not fit in one UDP datagram")
        return datagram

    @property
    def flags(self) -> int | None:
        """The flags of a SET (the first 4 bytes of its 8 bytes of extras), else None."""
        return SET_EXTRAS.unpack(self.extras)[0] if len(self.extras) == SET_EXTRAS.size else None

    @property
    def expiration(self) -> int | None:
        """The expiration of a SET (the last 4 bytes of its 8 bytes of extras), else None."""
        return SET_EXTRAS.unpack(self.extras)[1] if len(self.extras) == SET_EXTRAS.size else None


@dataclass(frozen=True)
class Response:
    """One decoded response message and the request id it answers.

    For an error status, ``value`` holds the server's text ("Not found", ...).
    """

    request_id: int
    opcode: int
    status: int
    opaque: int
    cas: int
    extras: bytes
    key: bytes
    value: bytes

    @property
    def flags(self) -> int | None:
        """The item flags of a GET/GETK hit (4 bytes of extras), else None."""
        return FLAGS.unpack(self.extras)[0] if len(self.extras) == FLAGS.size else None

    def without_cas(self) -> Response:
        """This response with ``cas`` zeroed, to compare responses from different servers."""
        return replace(self, cas=0)

    def encode(self) -> list[bytes]:
        """The datagrams carrying this response, cut as memcached cuts them."""
        _check_field("request id", self.request_id, 16)
        message = encode_message(MAGIC_RESPONSE, self.opcode, self.status, self.opaque, self.cas,
                                 self.extras, self.key, self.value)
        chunks = [message[i:i + MAX_CHUNK] for i in range(0, len(message), MAX_CHUNK)]
        if len(chunks) > 0xFFFF:
            raise ValueError(f"a {len(message)}-byte response needs more than 65535 datagrams")
        return [FRAME_HEADER.pack(self.request_id, seq, len(chunks), 0) + chunk
                for seq, chunk in enumerate(chunks)]


def _check_field(name: str, value: int, bits: int) -> None:
    if not 0 <= value < 1 << bits:
        raise ValueError(f"{name} {value} does not fit in {bits} bits")


def encode_message(magic: int, opcode: int, vbucket_or_status: int, opaque: int, cas: int,
                   extras: bytes, key: bytes, value: bytes) -> bytes:
    """One binary-protocol message: the 24-byte header, extras, key and value.

    Raises ValueError when a field does not fit in its header field.
    """
    body = len(extras) + len(key) + len(value)
    for name, number, bits in (("magic", magic, 8), ("opcode", opcode, 8),
                               ("vbucket or status", vbucket_or_status, 16),
                               ("opaque", opaque, 32), ("cas", cas, 64),
                               ("key length", len(key), 16), ("extras length", len(extras), 8),
                               ("body length", body, 32)):
        _check_field(name, number, bits)
    return (HEADER.pack(magic, opcode, len(key), len(extras), 0, vbucket_or_status, body,
                        opaque, cas) + extras + key + value)


def encode_request(request_id: int, opcode: int, key: bytes = b"", value: bytes = b"",
                   extras: bytes = b"", opaque: int = 0, cas: int = 0) -> bytes:
    """Any request datagram, valid or not (the server judges it); raises ValueError on overflow."""
    return Request(request_id, opcode, key, value, extras, opaque, cas).encode()


def encode_get(request_id: int, key: bytes, opaque: int = 0) -> bytes:
    """A GET request datagram."""
    return encode_request(request_id, GET, key=key, opaque=opaque)


def encode_getk(request_id: int, key: bytes, opaque: int = 0) -> bytes:
    """A GETK request datagram (the response carries the key)."""
    return encode_request(request_id, GETK, key=key, opaque=opaque)


def encode_set(request_id: int, key: bytes, value: bytes, flags: int = 0, expiration: int = 0,
               opaque: int = 0, cas: int = 0) -> bytes:
    """A SET request datagram.

    ``expiration`` is 0 for never, at most 30 days (2592000) for seconds from
    now, and a unix time otherwise.
    """
    _check_field("flags", flags, 32)
    _check_field("expiration", expiration, 32)
    return encode_request(request_id, SET, key=key, value=value,
                          extras=SET_EXTRAS.pack(flags, expiration), opaque=opaque, cas=cas)


def encode_delete(request_id: int, key: bytes, opaque: int = 0) -> bytes:
    """A DELETE request datagram."""
    return encode_request(request_id, DELETE, key=key, opaque=opaque)


def encode_noop(request_id: int, opaque: int = 0) -> bytes:
    """A NOOP request datagram."""
    return encode_request(request_id, NOOP, opaque=opaque)


def parse_frame_header(datagram: bytes) -> FrameHeader:
    """The frame header of a datagram; raises ProtocolError if it is cut short or inconsistent."""
    if len(datagram) < FRAME_HEADER_SIZE:
        raise ProtocolError(f"a {len(datagram)}-byte datagram has no 8-byte frame header")
    header = FrameHeader(*FRAME_HEADER.unpack_from(datagram))
    if header.total == 0 or header.sequence >= header.total:
        raise ProtocolError(f"datagram {header.sequence} of {header.total} is out of range",
                            header.request_id)
    return header


def _decode_message(message: bytes, magic: int, request_id: int) -> tuple[int, ...]:
    """(opcode, status/vbucket, opaque, cas, extras end, key end) of a whole message."""
    if len(message) < HEADER_SIZE:
        raise ProtocolError(f"a {len(message)}-byte message has no 24-byte header", request_id)
    (got_magic, opcode, key_length, extras_length, data_type, status, body_length, opaque,
     cas) = HEADER.unpack_from(message)
    if got_magic != magic:
        raise ProtocolError(f"magic 0x{got_magic:02x}, expected 0x{magic:02x}", request_id)
    if data_type != 0:
        raise ProtocolError(f"data type {data_type}, expected 0 (raw bytes)", request_id)
    if HEADER_SIZE + body_length != len(message):
        raise ProtocolError(f"body length {body_length} but {len(message) - HEADER_SIZE} bytes "
                            "follow the header", request_id)
    if extras_length + key_length > body_length:
        raise ProtocolError(f"extras ({extras_length}) and key ({key_length}) are longer than "
                            f"the body ({body_length})", request_id)
    extras_end = HEADER_SIZE + extras_length
    return opcode, status, opaque, cas, extras_end, extras_end + key_length


def decode_response_message(message: bytes, request_id: int) -> Response:
    """A whole response message (header and body, no frame header); raises ProtocolError."""
    opcode, status, opaque, cas, extras_end, key_end = _decode_message(
        message, MAGIC_RESPONSE, request_id)
    return Response(request_id, opcode, status, opaque, cas, message[HEADER_SIZE:extras_end],
                    message[extras_end:key_end], message[key_end:])


def decode_response(datagram: bytes) -> Response:
    """A response that fits in one datagram; raises ProtocolError otherwise (use `Reassembler`)."""
    header = parse_frame_header(datagram)
    if header.total != 1:
        raise ProtocolError(f"datagram {header.sequence} of {header.total}: a multi-datagram "
                            "response needs a Reassembler", header.request_id)
    return decode_response_message(datagram[FRAME_HEADER_SIZE:], header.request_id)


def decode_request(datagram: bytes) -> Request:
    """A request datagram (one datagram, sequence 0 of 1); raises ProtocolError."""
    header = parse_frame_header(datagram)
    if header.total != 1:
        raise ProtocolError(f"a request must be one datagram, not {header.total}",
                            header.request_id)
    message = datagram[FRAME_HEADER_SIZE:]
    opcode, _vbucket, opaque, cas, extras_end, key_end = _decode_message(
        message, MAGIC_REQUEST, header.request_id)
    return Request(header.request_id, opcode, message[extras_end:key_end], message[key_end:],
                   message[HEADER_SIZE:extras_end], opaque, cas)


class _Partial:
    """The datagrams of one response received so far."""

    __slots__ = ("total", "chunks")

    def __init__(self, total: int) -> None:
        self.total = total
        self.chunks: dict[int, bytes] = {}


class Reassembler:
    """Puts multi-datagram responses back together, datagram by datagram.

    Datagrams may come in any order and more than once: a datagram whose
    sequence number was already received for a response in progress is
    ignored. Each time the last missing datagram of a response arrives,
    `feed` returns the decoded response; the response is then forgotten, so a
    duplicate arriving later starts a new one (callers match request ids
    against what they are waiting for). At most ``max_pending`` responses are
    kept in progress; beyond that the oldest is dropped.
    """

    def __init__(self, max_pending: int = 1024) -> None:
        if max_pending < 1:
            raise ValueError("max_pending must be at least 1")
        self.max_pending = max_pending
        self._pending: dict[int, _Partial] = {}

    @property
    def pending(self) -> int:
        """How many responses are in progress."""
        return len(self._pending)

    def discard(self, request_id: int) -> None:
        """Forget the datagrams received so far for ``request_id``."""
        self._pending.pop(request_id, None)

    def feed(self, datagram: bytes) -> Response | None:
        """Take one datagram; the response it completes, or None.

        Raises ProtocolError for a malformed datagram or a malformed whole
        message (the partial response is dropped then).
        """
        header = parse_frame_header(datagram)
        chunk = datagram[FRAME_HEADER_SIZE:]
        if header.sequence < header.total - 1 and len(chunk) != MAX_CHUNK:
            raise ProtocolError(f"datagram {header.sequence} of {header.total} carries "
                                f"{len(chunk)} bytes, not {MAX_CHUNK}", header.request_id)
        if header.total == 1:
            self._pending.pop(header.request_id, None)
            return decode_response_message(chunk, header.request_id)
        partial = self._pending.get(header.request_id)
        if partial is None or partial.total != header.total:
            partial = _Partial(header.total)
            self._pending.pop(header.request_id, None)
            if len(self._pending) >= self.max_pending:
                del self._pending[next(iter(self._pending))]
            self._pending[header.request_id] = partial
        partial.chunks.setdefault(header.sequence, chunk)
        if len(partial.chunks) < partial.total:
            return None
        del self._pending[header.request_id]
        message = b"".join(partial.chunks[seq] for seq in range(partial.total))
        return decode_response_message(message, header.request_id)

    def feed_all(self, datagrams: Iterable[bytes]) -> Iterator[Response]:
        """The responses ``datagrams`` complete, in order; a ProtocolError ends the iteration."""
        for datagram in datagrams:
            response = self.feed(datagram)
            if response is not None:
                yield response


def mac_address(text: str) -> bytes:
    """Six bytes from ``aa:bb:cc:dd:ee:ff`` (or with dashes); raises ValueError."""
    parts = text.replace("-", ":").split(":")
    if len(parts) != 6 or not all(len(p) in (1, 2) for p in parts):
        raise ValueError(f"{text!r} is not a MAC address like 02:00:00:00:00:01")
    try:
        return bytes(int(p, 16) for p in parts)
    except ValueError:
        raise ValueError(f"{text!r} is not a MAC address like 02:00:00:00:00:01") from None


def ipv4_address(text: str) -> bytes:
    """Four bytes from a dotted IPv4 address; raises ValueError."""
    try:
        return socket.inet_pton(socket.AF_INET, text)
    except OSError:
        raise ValueError(f"{text!r} is not an IPv4 address like 10.0.0.1") from None


def build_frame(datagram: bytes, src_mac: bytes, dst_mac: bytes, src_ip: bytes, dst_ip: bytes,
                src_port: int, dst_port: int, ip_id: int = 0) -> bytes:
    """An Ethernet/IPv4/UDP frame carrying ``datagram``, lengths and checksums filled in.

    Addresses are raw bytes (see `mac_address` and `ipv4_address`).
    """
    _check_field("source port", src_port, 16)
    _check_field("destination port", dst_port, 16)
    if len(datagram) > MAX_UDP_PAYLOAD:
        raise ValueError(f"a {len(datagram)}-byte datagram does not fit in one IPv4 packet")
    udp = dpkt.udp.UDP(sport=src_port, dport=dst_port, ulen=dpkt.udp.UDP_HDR_LEN + len(datagram),
                       data=datagram)
    ip = dpkt.ip.IP(src=src_ip, dst=dst_ip, p=dpkt.ip.IP_PROTO_UDP, ttl=64, id=ip_id & 0xFFFF,
                    data=udp)
    return bytes(dpkt.ethernet.Ethernet(src=src_mac, dst=dst_mac, type=dpkt.ethernet.ETH_TYPE_IP,
                                        data=ip))


def build_stream_frame(message: bytes, src_mac: bytes, dst_mac: bytes, src_ip: bytes,
                       dst_ip: bytes, src_port: int, dst_port: int, seq: int = 1) -> bytes:
    """An Ethernet/IPv4/TCP frame carrying one ``message`` of a TCP stream, as the tcp packet
    I/O backend hands a message to a program (floem/net.h, "Streams"): PSH|ACK, sequence
    number ``seq``, lengths and checksums filled in."""
    _check_field("source port", src_port, 16)
    _check_field("destination port", dst_port, 16)
    tcp = dpkt.tcp.TCP(sport=src_port, dport=dst_port, seq=seq, ack=1,
                       flags=dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK, win=65535, data=message)
    ip = dpkt.ip.IP(src=src_ip, dst=dst_ip, p=dpkt.ip.IP_PROTO_TCP, ttl=64, data=tcp)
    return bytes(dpkt.ethernet.Ethernet(src=src_mac, dst=dst_mac, type=dpkt.ethernet.ETH_TYPE_IP,
                                        data=ip))
