"""The memcached binary-over-UDP codec of the key-value store (examples/kvs/protocol.py).

Round trips of every opcode, byte layouts written out by hand, the answers of a
real memcached (1.6, ``-U PORT -B binary``) decoded field by field, a 3-datagram
response from memcached reassembled in every order with duplicates, and
malformed datagrams (hand-made, cut short, random) rejected with ProtocolError.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator

import dpkt
import pytest

from conftest import ROOT
from kvs_server import answers, free_udp_port

sys.path.insert(0, os.path.join(ROOT, "examples", "kvs"))
import protocol as kvp  # noqa: E402

MEMCACHED = shutil.which("memcached")


# -- a real memcached (also used by test_load.py) ---------------------------

def client(timeout: float = 2.0) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(timeout)
    return s


def exchange(s: socket.socket, port: int, datagram: bytes) -> list[bytes]:
    """Send one request; every datagram of the response to it, in arrival order."""
    request_id = kvp.FRAME_HEADER.unpack_from(datagram)[0]
    s.sendto(datagram, ("127.0.0.1", port))
    got: list[bytes] = []
    while True:
        data, _ = s.recvfrom(65536)
        rid, _, total, _ = kvp.FRAME_HEADER.unpack_from(data)
        if rid == request_id:
            got.append(data)
            if len(got) == total:
                return got


def ask(s: socket.socket, port: int, datagram: bytes) -> kvp.Response:
    """Send one request; its decoded single-datagram response."""
    (reply,) = exchange(s, port, datagram)
    return kvp.decode_response(reply)


@contextlib.contextmanager
def memcached(*options: str) -> Iterator[int]:
    """A fresh memcached (one thread, so that it answers datagrams in order) serving both
    protocols on a free UDP port of 127.0.0.1; ``options``: more of its options."""
    assert MEMCACHED is not None, "install memcached (scripts/setup.sh does)"
    for _ in range(5):
        port = free_udp_port()
        proc = subprocess.Popen([MEMCACHED, "-U", str(port), "-p", "0", "-t", "1",
                                 "-l", "127.0.0.1", "-u", "root", *options],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            if answers_noop(port, proc):
                yield port
                return
        finally:
            proc.kill()
            proc.wait()
    pytest.fail("memcached did not start")


def answers_noop(port: int, proc: subprocess.Popen) -> bool:
    """Probe with NOOPs until memcached answers (True) or exits (False)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and proc.poll() is None:
        if answers(port, 0.05):
            return True
    return False


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    """A memcached for the tests of a module (test_load.py uses it too)."""
    with memcached() as port:
        yield port


# -- encoding and decoding --------------------------------------------------

def test_get_layout() -> None:
    """A GET of "foo", byte by byte as the binary protocol lays it out."""
    assert kvp.encode_get(0x1234, b"foo", opaque=0xDEADBEEF) == bytes.fromhex(
        "1234 0000 0001 0000"                   # request id, sequence 0, 1 datagram, reserved
        "80 00 0003 00 00 0000 00000003"        # magic, GET, key length, no extras, body 3
        "deadbeef 0000000000000000") + b"foo"   # opaque, cas


def test_set_layout() -> None:
    datagram = kvp.encode_set(7, b"k", b"value", flags=0x01020304, expiration=3600, opaque=9)
    assert datagram == bytes.fromhex(
        "0007 0000 0001 0000"
        "80 01 0001 08 00 0000 0000000e"        # SET, key 1, extras 8, body 8 + 1 + 5
        "00000009 0000000000000000"
        "01020304 00000e10") + b"kvalue"        # flags, expiration, key, value


REQUESTS = [
    kvp.Request(1, kvp.GET, key=b"a-key", opaque=11),
    kvp.Request(2, kvp.GETK, key=b"k" * 250, opaque=0xFFFFFFFF),
    kvp.Request(3, kvp.SET, key=b"key", value=b"v" * 3000, extras=struct.pack(">II", 5, 60),
                opaque=13, cas=0xFFFFFFFFFFFFFFFF),
    kvp.Request(0xFFFF, kvp.DELETE, key=b"gone", opaque=14),
    kvp.Request(0, kvp.NOOP, opaque=15),
]


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: kvp.Opcode(r.opcode).name)
def test_request_round_trip(request_: kvp.Request) -> None:
    datagram = kvp.encode_request(request_.request_id, request_.opcode, request_.key,
                                  request_.value, request_.extras, request_.opaque, request_.cas)
    assert datagram == request_.encode()
    assert kvp.decode_request(datagram) == request_
    assert len(datagram) == 32 + len(request_.extras) + len(request_.key) + len(request_.value)


def test_request_helpers() -> None:
    set_ = kvp.decode_request(kvp.encode_set(4, b"key", b"val", flags=77, expiration=5))
    assert (set_.opcode, set_.key, set_.value, set_.flags, set_.expiration) == (
        kvp.SET, b"key", b"val", 77, 5)
    assert kvp.decode_request(kvp.encode_getk(5, b"x")).opcode == kvp.GETK
    assert kvp.decode_request(kvp.encode_delete(6, b"x")).opcode == kvp.DELETE
    assert kvp.decode_request(kvp.encode_noop(8, opaque=3)) == kvp.Request(8, kvp.NOOP, opaque=3)
    for bad in (lambda: kvp.encode_get(65536, b"k"), lambda: kvp.encode_set(1, b"k", b"", -1),
                lambda: kvp.encode_get(1, b"k", opaque=1 << 32),
                lambda: kvp.encode_set(1, b"k", b"v" * 70000)):
        with pytest.raises(ValueError):
            bad()


RESPONSES = [
    kvp.Response(1, kvp.GET, kvp.OK, 11, 99, struct.pack(">I", 5), b"", b"hello"),
    kvp.Response(2, kvp.GET, kvp.KEY_NOT_FOUND, 12, 0, b"", b"", b"Not found"),
    kvp.Response(3, kvp.GETK, kvp.OK, 13, 7, struct.pack(">I", 0), b"key", b"x" * 5000),
    kvp.Response(4, kvp.SET, kvp.OK, 14, 12345, b"", b"", b""),
    kvp.Response(5, kvp.DELETE, kvp.OK, 15, 0, b"", b"", b""),
    kvp.Response(6, kvp.NOOP, kvp.OK, 16, 0, b"", b"", b""),
    kvp.Response(7, 0x55, kvp.UNKNOWN_COMMAND, 17, 0, b"", b"", b"Unknown command"),
    kvp.Response(8, kvp.SET, kvp.OUT_OF_MEMORY, 18, 0, b"", b"", b"Out of memory"),
    kvp.Response(9, kvp.GET, kvp.OK, 19, 1, struct.pack(">I", 1), b"", b"y" * (1392 - 28)),
    kvp.Response(10, kvp.GET, kvp.OK, 20, 1, struct.pack(">I", 1), b"", b"y" * (1392 - 27)),
]


@pytest.mark.parametrize("response", RESPONSES, ids=lambda r: f"id{r.request_id}")
def test_response_round_trip(response: kvp.Response) -> None:
    datagrams = response.encode()
    message = 24 + len(response.extras) + len(response.key) + len(response.value)
    assert len(datagrams) == -(-message // 1392)
    assert all(len(d) == 1400 for d in datagrams[:-1]) and len(datagrams[-1]) <= 1400
    assert [kvp.parse_frame_header(d) for d in datagrams] == [
        (response.request_id, seq, len(datagrams), 0) for seq in range(len(datagrams))]
    assert list(kvp.Reassembler().feed_all(datagrams)) == [response]
    if len(datagrams) == 1:
        assert kvp.decode_response(datagrams[0]) == response
    else:
        with pytest.raises(kvp.ProtocolError, match="Reassembler"):
            kvp.decode_response(datagrams[0])


def test_response_fields() -> None:
    hit = RESPONSES[0]
    assert hit.flags == 5 and RESPONSES[1].flags is None
    assert hit.without_cas() == kvp.Response(1, kvp.GET, kvp.OK, 11, 0, hit.extras, b"", b"hello")
    assert hit.without_cas() != hit


# -- a real memcached -------------------------------------------------------

def test_memcached_answers(server: int) -> None:
    """Every kind of answer the key-value store must give, as memcached gives it."""
    flags = struct.pack(">I", 0xCAFE)
    with client() as s:
        def check(datagram: bytes, **expected: object) -> kvp.Response:
            request = kvp.decode_request(datagram)
            response = ask(s, server, datagram)
            assert (response.request_id, response.opcode, response.opaque) == (
                request.request_id, request.opcode, request.opaque)
            fields = {"status": kvp.OK, "extras": b"", "key": b"", "value": b"", **expected}
            assert {name: getattr(response, name) for name in fields} == fields
            return response

        check(kvp.encode_get(1, b"answers", opaque=101), status=kvp.KEY_NOT_FOUND,
              value=b"Not found", cas=0)
        check(kvp.encode_getk(2, b"answers", opaque=102), status=kvp.KEY_NOT_FOUND,
              key=b"answers")
        stored = check(kvp.encode_set(3, b"answers", b"forty-two", flags=0xCAFE, opaque=103))
        assert stored.cas != 0
        assert stored.without_cas() == kvp.Response(3, kvp.SET, kvp.OK, 103, 0, b"", b"", b"")
        hit = check(kvp.encode_get(4, b"answers", opaque=104), extras=flags, value=b"forty-two",
                    cas=stored.cas)
        assert hit.flags == 0xCAFE
        check(kvp.encode_getk(5, b"answers", opaque=105), extras=flags, key=b"answers",
              value=b"forty-two", cas=stored.cas)
        check(kvp.encode_delete(6, b"answers", opaque=106))
        check(kvp.encode_delete(7, b"answers", opaque=107), status=kvp.KEY_NOT_FOUND,
              value=b"Not found")
        check(kvp.encode_get(8, b"answers", opaque=108), status=kvp.KEY_NOT_FOUND,
              value=b"Not found")
        check(kvp.encode_noop(9, opaque=109), cas=0)
        invalid = dict(status=kvp.INVALID_ARGUMENTS, value=b"Invalid arguments")
        check(kvp.encode_get(10, b"", opaque=110), **invalid)
        check(kvp.encode_get(11, b"k" * 251, opaque=111), **invalid)
        check(kvp.encode_request(12, kvp.SET, key=b"k", value=b"v", opaque=112), **invalid)
        check(kvp.encode_request(13, kvp.GET, key=b"k", extras=b"abcd", opaque=113), **invalid)
        check(kvp.encode_request(14, kvp.DELETE, key=b"k", extras=b"abcd", opaque=114),
              **invalid)
        check(kvp.encode_request(15, kvp.NOOP, key=b"k", opaque=115), **invalid)
        check(kvp.encode_request(16, 0x55, opaque=116), status=kvp.UNKNOWN_COMMAND,
              value=b"Unknown command")
        check(kvp.encode_get(17, b"k" * 250, opaque=117), status=kvp.KEY_NOT_FOUND,
              value=b"Not found")


def test_memcached_multi_datagram_response(server: int) -> None:
    """A 3000-byte value comes back in 3 datagrams, reassembled in every order, duplicated."""
    value = bytes(random.Random(1).choices(b"abcdefghijklmnopqrstuvwxyz", k=3000))
    with client() as s:
        assert ask(s, server, kvp.encode_set(1, b"big", value, flags=3)).status == kvp.OK
        datagrams = exchange(s, server, kvp.encode_get(2, b"big", opaque=5))
        getk = exchange(s, server, kvp.encode_getk(3, b"big", opaque=6))
    assert [len(d) for d in datagrams] == [1400, 1400, 8 + 24 + 4 + 3000 - 2 * 1392]
    assert [kvp.parse_frame_header(d) for d in datagrams] == [(2, i, 3, 0) for i in range(3)]
    expected = kvp.Response(2, kvp.GET, kvp.OK, 5, 0, struct.pack(">I", 3), b"", value)
    for order in itertools.permutations(range(3)):
        for duplicate in range(3):
            reassembler = kvp.Reassembler()
            fed = [datagrams[i] for i in order]
            fed.insert(duplicate + 1, fed[duplicate])
            results = [reassembler.feed(d) for d in fed]
            got = [r for r in results if r is not None]
            assert len(got) == 1 and got[0].without_cas() == expected, (order, duplicate)
            completed = max(fed.index(d) for d in datagrams)
            assert results.index(got[0]) == completed
            late = duplicate + 1 > completed         # a duplicate after completion starts anew
            assert reassembler.pending == late
    both = kvp.Reassembler()
    interleaved = [d for pair in zip(getk, reversed(datagrams)) for d in pair]
    done = [r for r in map(both.feed, interleaved) if r is not None]
    assert [(r.request_id, r.opcode, r.key, r.value) for r in done] == [
        (3, kvp.GETK, b"big", value), (2, kvp.GET, b"", value)]


def test_reassembler_bounds() -> None:
    """Past ``max_pending`` responses in progress, the oldest is dropped."""
    big = RESPONSES[2].encode()
    others = [kvp.Response(rid, kvp.GET, kvp.OK, 0, 0, b"", b"", b"z" * 2000).encode()[0]
              for rid in (100, 101)]
    reassembler = kvp.Reassembler(max_pending=2)
    assert [reassembler.feed(d) for d in [big[0]] + others] == [None] * 3
    assert reassembler.pending == 2
    assert [reassembler.feed(d) for d in big[1:]] == [None] * (len(big) - 1)
    assert reassembler.feed(big[0]) == RESPONSES[2]
    assert reassembler.pending == 1
    reassembler.discard(101)
    assert reassembler.pending == 0


# -- malformed datagrams ----------------------------------------------------

def malformed() -> list[bytes]:
    good = kvp.Response(1, kvp.GET, kvp.OK, 0, 0, b"\0\0\0\0", b"", b"value").encode()[0]
    frame, message = good[:8], good[8:]

    def with_header(**fields: int) -> bytes:
        values = dict(zip(("magic", "opcode", "key", "extras", "type", "status", "body",
                           "opaque", "cas"), kvp.HEADER.unpack_from(message)))
        values.update(fields)
        return frame + kvp.HEADER.pack(*values.values()) + message[24:]

    return [
        b"", b"\x00", bytes(7), frame, frame + message[:23],
        struct.pack(">HHHH", 1, 0, 0, 0) + message,            # zero datagrams
        struct.pack(">HHHH", 1, 2, 2, 0) + message,            # sequence past the end
        with_header(magic=0x80), with_header(magic=0), with_header(type=1),
        with_header(body=8), with_header(body=10), with_header(body=0xFFFFFFFF),
        with_header(key=10), with_header(extras=10), with_header(key=0xFFFF, extras=0xFF),
        good[:-1], good + b"x",
        struct.pack(">HHHH", 1, 0, 2, 0) + message,            # short first of two
    ]


@pytest.mark.parametrize("datagram", malformed(), ids=range(len(malformed())))
def test_malformed_datagrams(datagram: bytes) -> None:
    for decode in (kvp.decode_response, kvp.Reassembler().feed):
        with pytest.raises(kvp.ProtocolError):
            decode(datagram)


def test_cut_and_random_datagrams() -> None:
    """Every cut of valid datagrams, and random bytes: a response, None or ProtocolError."""
    rng = random.Random(7)
    valid = [d for r in RESPONSES for d in r.encode()] + [r.encode() for r in REQUESTS]
    blobs = [d[:n] for d in valid for n in range(0, min(len(d), 80))]
    blobs += [bytes(rng.getrandbits(8) for _ in range(rng.randrange(60))) for _ in range(2000)]
    blobs += [struct.pack(">HHHH", 1, 0, 1, 0) + b"\x81" + bytes(rng.getrandbits(8)
              for _ in range(rng.randrange(40))) for _ in range(2000)]
    reassembler = kvp.Reassembler()
    outcomes = {"ok": 0, "error": 0}
    for blob in blobs:
        for decode in (kvp.decode_response, kvp.decode_request, reassembler.feed):
            try:
                decode(blob)
                outcomes["ok"] += 1
            except kvp.ProtocolError as e:
                assert e.request_id is None or e.request_id == struct.unpack(">H", blob[:2])[0]
                outcomes["error"] += 1
    assert outcomes["error"] > len(blobs)


# -- frames -----------------------------------------------------------------

def test_build_frame() -> None:
    datagram = kvp.encode_get(3, b"framed")
    frame = kvp.build_frame(datagram, kvp.mac_address("02:00:00:00:00:02"),
                            kvp.mac_address("02-00-00-00-00-01"), kvp.ipv4_address("10.0.0.2"),
                            kvp.ipv4_address("10.0.0.1"), 40000, 11211, ip_id=70000)
    eth = dpkt.ethernet.Ethernet(frame)
    ip, udp = eth.data, eth.data.data
    assert (eth.src, eth.dst) == (b"\x02\0\0\0\0\x02", b"\x02\0\0\0\0\x01")
    assert (ip.src, ip.dst, ip.len, ip.id) == (socket.inet_aton("10.0.0.2"),
                                               socket.inet_aton("10.0.0.1"), 20 + 8 + 38, 4464)
    assert (udp.sport, udp.dport, udp.ulen, udp.data) == (40000, 11211, 8 + 38, datagram)
    assert dpkt.in_cksum(frame[14:34]) == 0
    pseudo = ip.src + ip.dst + struct.pack(">BBH", 0, 17, udp.ulen)
    assert dpkt.in_cksum(pseudo + frame[34:]) == 0
    for bad in ("02:00:00:00:00", "zz:00:00:00:00:01", "1:2:3:4:5:678"):
        with pytest.raises(ValueError):
            kvp.mac_address(bad)
    with pytest.raises(ValueError):
        kvp.ipv4_address("10.0.0")
