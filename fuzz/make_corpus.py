"""Write the fuzz harnesses' seed corpora, fuzz/corpus/<harness>/, from the tests' inputs.

The seeds are generated rather than kept in git: each harness's directory is emptied and
rewritten, the same bytes every time. They come from the builders and the input lists
the tests use (tests/library, tests/kvs, tests/nf, examples/kvs, examples/nf,
examples/storm), put in the
harness's input format (fuzz/harness/<name>.c says what it is). scripts/fuzz.sh runs
this before fuzzing or replaying; ``python fuzz/make_corpus.py [DIR]`` writes under DIR
instead of fuzz/corpus.
"""
from __future__ import annotations

import io
import os
import random
import shutil
import struct
import sys
import tempfile
from collections.abc import Callable
from unittest import mock

import dpkt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "kvs"),
                os.path.join(ROOT, "examples", "kvs"),
                os.path.join(ROOT, "examples", "storm")]

import load  # noqa: E402  (examples/kvs)
import protocol as kvp  # noqa: E402  (examples/kvs)
import tweets  # noqa: E402  (examples/storm)
from library.netref import frame  # noqa: E402  (tests/library)
from library.test_headers import malformed  # noqa: E402
from library.test_memcached import GET, GETK, SET, DELETE, datagram  # noqa: E402
from nf.helpers import load as nf_load  # noqa: E402  (examples/nf/load.py, as tests/nf has it)
from test_slicing import workload as slicing_workload  # noqa: E402

sys.path.append(os.path.join(ROOT, "examples", "nf"))
import traffic  # noqa: E402  (examples/nf)

#: The clock of the requests whose expiry times tests/kvs derives from the time.
NOW = 1_700_000_000
with mock.patch("time.time", return_value=NOW):
    import kvs_server  # noqa: E402  (tests/kvs)

    KVS_REQUESTS = kvs_server.oracle_requests(seed=3, count=60)
    KVS_MALFORMED = [d for _, d in kvs_server.malformed_datagrams(seed=4)]

#: A client's frame around a datagram, as tests/kvs builds them.
CLIENT = dict(src_mac=kvp.mac_address("02:00:00:00:00:02"),
              dst_mac=kvp.mac_address("02:00:00:00:00:01"), src_ip=kvp.ipv4_address("10.0.0.2"),
              dst_ip=kvp.ipv4_address("10.0.0.1"), src_port=40000, dst_port=11211)


def udp_headers() -> list[bytes]:
    """tests/library/test_headers.py's frames: valid ones, each way of breaking one, every
    truncation, and random corruptions."""
    return malformed(random.Random(7))


def memcached_datagrams() -> list[bytes]:
    """tests/library/test_memcached.py's datagrams."""
    flags_expiry = struct.pack("!II", 0xcafe, 300)
    return [
        datagram(GET, key=b"k" * 32, opaque=0x01020304, request_id=7),
        datagram(SET, key=b"key:1", value=b"v" * 64, extras=flags_expiry, cas=2**64 - 1),
        datagram(GETK, key=b"\x00\xff", vbucket=513, data_type=1, request_id=65535),
        datagram(DELETE, key=b"gone", trailing=b"junk after the body"),
        datagram(SET, key=b"big", value=b"x" * 1450, extras=flags_expiry),
        datagram(0x0a),
        datagram(GET, key=b"short")[:-1],
        datagram(GET, key=b"k")[:31],
        datagram(GET, key=b"k", magic=0x42),
        datagram(GET, key=b"k", magic=0x81),
        datagram(GET, key=b"k", seq=1, total=2),
        datagram(GET, key=b"k", total=0),
        datagram(SET, key=b"abc", extras=b"12345678", body_len=10),
        datagram(GET, key=b"abc", body_len=2**32 - 1),
        b"",
    ]


def memcached() -> list[bytes]:
    """The datagrams alone (the harness reads its input as both) and in frames."""
    datagrams = memcached_datagrams()
    frames = [frame(d, sport=40000 + i) for i, d in enumerate(datagrams)]
    return datagrams + frames + [frame(datagrams[0])[:50]]


def stream_messages() -> list[bytes]:
    """tests/kvs's requests as messages of a TCP stream (without the UDP frame header), and
    the binary requests only TCP carries (quiet ones, INCREMENT, STAT, ...)."""
    messages = [d[kvp.FRAME_HEADER_SIZE:] for d in KVS_REQUESTS]
    extras = struct.pack(">QQI", 5, 7, 0)
    return messages + [kvp.encode_request(0, op, key=key, extras=ext)[kvp.FRAME_HEADER_SIZE:]
                       for op, key, ext in ((0x09, b"k", b""), (0x05, b"n", extras),
                                            (0x10, b"", b""), (0x10, b"reset", b""),
                                            (0x1d, b"k", b"\0\0\0\x05"), (0x07, b"", b""))]


def kvs_request() -> list[bytes]:
    """tests/kvs's requests (valid and invalid) and malformed datagrams, in frames; the same
    requests as messages of a TCP stream in the tcp backend's frames; and SETs longer than a
    frame in both protocols, cut to a frame buffer's 2048 bytes as the udp backend delivers
    them (their IPv4 and UDP lengths the whole datagram's)."""
    long_sets = [kvp.encode_set(1, b"k", bytes(8000)),
                 kvp.FRAME_HEADER.pack(2, 0, 1, 0) + b"set k 0 0 8000\r\n" + bytes(8002)]
    return ([kvp.build_frame(d, **CLIENT, ip_id=i)
             for i, d in enumerate(KVS_REQUESTS + KVS_MALFORMED)]
            + [kvp.build_stream_frame(m, **CLIENT) for m in stream_messages()]
            + [kvp.build_frame(d, **CLIENT)[:2048] for d in long_sets])


def stream_framers() -> list[bytes]:
    """The stream of tests/kvs's text requests and that of its binary ones, for each
    memcached framer, arriving in pieces of 1, 7 and 200 bytes; length-prefixed streams of
    each field layout."""
    messages = stream_messages()
    text = b"".join(m for m in messages if m[:1] != bytes([kvp.MAGIC_REQUEST]))
    binary = b"".join(m for m in messages if m[:1] == bytes([kvp.MAGIC_REQUEST]))
    seeds = [bytes([framer, piece]) + stream for framer, stream in ((0, text), (1, binary),
                                                                    (2, text), (2, binary))
             for piece in (0, 6, 199)]
    for size, offset, extra, mode in ((4, 0, 0, 0), (2, 2, 4, 1), (8, 0, 0, 2), (1, 3, 0, 5)):
        field = (5).to_bytes(size, "little" if mode & 2 else "big")
        header = bytes(offset) + field + bytes(extra)
        body = b"hello" if not mode & 1 else b"hello"[:max(0, 5 - len(header))]
        seeds.append(bytes([3, {1: 0, 2: 1, 4: 2, 8: 3}[size], offset, extra, mode, 3])
                     + (header + body) * 3)
    return seeds


# -- Storm ---------------------------------------------------------------------------------

def storm_tuple(task: int, sender: int, kind: int, count: int = 0, user: bytes = b"",
                created: int = NOW * 10**9) -> bytes:
    """A struct storm_tuple (examples/storm/workers/tuple.h), little-endian."""
    return struct.pack("<iiIIQQ32s", task, sender, kind, count, created, created, user)


TWEET, COUNT, RANK, RANK_DONE, END = 1, 2, 3, 4, 5
DATA, ACK = 1, 2


def storm_datagram(kind: int, src: int, dst: int, seq: int, tuple_: bytes = b"",
                   flags: int = 0) -> bytes:
    """A frame of the Storm transport (examples/storm/transport.h) from server src."""
    wire = bytes([kind, src, dst, flags]) + struct.pack("<I", seq) + tuple_
    return frame(wire, sport=7101 + src, dport=7101 + dst, udp_csum=False)


def received(f: bytes, refuse: int = 0) -> bytes:
    """Harness command 0: a received frame."""
    return b"\x00" + struct.pack(">H", len(f)) + f + bytes([refuse])


def turn(us: int) -> bytes:
    """Harness command 1: a transmitter turn, `us` microseconds later."""
    return b"\x01" + struct.pack(">H", us)


def local(tuple_: bytes) -> bytes:
    """Harness command 2: a tuple from a local worker."""
    return b"\x02" + tuple_


def from_peer(ack: bool, peer: int, offset: int, refuse: bool, tuple_: bytes = bytes(64)) -> bytes:
    """Harness command 3: a well-formed datagram from a peer."""
    return b"\x03" + bytes([int(ack), peer, offset & 0xff, int(refuse)]) + tuple_


def storm_transport() -> list[bytes]:
    """Sequences of the transport harness (3 servers, this one 1; executor e on server e % 3):
    tuples in and out of sequence, acknowledgements new, duplicate and busy, timeouts."""
    for_us = storm_tuple(4, 0, TWEET, 1, b"user1")          # executor 4 is on server 1
    for_2 = storm_tuple(5, 4, COUNT, 3, b"user2")           # executor 5 is on server 2
    to_0 = storm_tuple(3, 4, COUNT, 3, b"user0")
    return [
        received(storm_datagram(DATA, 0, 1, 0, for_us)),
        received(storm_datagram(DATA, 0, 1, 0, for_us), refuse=1),
        received(storm_datagram(DATA, 2, 1, 7, for_us)),
        received(storm_datagram(ACK, 0, 1, 0)) + received(storm_datagram(ACK, 2, 1, 1, flags=1)),
        received(storm_datagram(DATA, 1, 1, 0, for_us))
        + received(storm_datagram(DATA, 0, 2, 0, for_us)),
        received(frame(b"not storm")) + received(storm_datagram(DATA, 0, 1, 0, for_us)[:60]),
        local(for_us) + local(for_2) + local(to_0) + turn(1) + turn(2),
        b"".join(local(for_2) for _ in range(12)) + turn(1) + from_peer(True, 2, 3, False)
        + turn(1) + from_peer(True, 2, 0, False) * 3 + turn(1) + turn(5000) + turn(5000),
        b"".join(local(to_0) for _ in range(20)) + turn(1) + from_peer(True, 0, 4, True) + turn(1)
        + turn(300) + from_peer(True, 0, 8, False) + turn(1),
        from_peer(False, 0, 0, False, for_us) + from_peer(False, 0, 0, True, for_us)
        + from_peer(False, 0, 2, False, for_us) + from_peer(False, 2, -1, False, for_us),
    ]


def storm_workers() -> list[bytes]:
    """Streams for a counter, a ranker and the total ranker (as tests/storm/test_workers.py
    runs them): spouts 0-1, counters 2-3, rankers 4-5, total 6; top 3; no window or 2 s."""
    def config(role: int, window: int = 0) -> bytes:
        return bytes([role, 1, 1, 1, 2, window])        # spouts, counters, rankers 2; top 3

    users = [b"alice", b"bob", b"carol", b"dave", b"a" * 31, b"b" * 32]
    tweets_ = b"".join(storm_tuple(2, i % 2, TWEET, 1, users[i % len(users)],
                                   created=(NOW + i) * 10**9) for i in range(40))
    counter_end = storm_tuple(2, 0, END) + storm_tuple(2, 1, END)
    counts = b"".join(storm_tuple(4, 2 + i % 2, COUNT, i, users[i % 4]) for i in range(16))
    ranker_end = storm_tuple(4, 2, END) + storm_tuple(4, 3, END)
    ranks = (storm_tuple(6, 4, RANK, 9, b"alice") + storm_tuple(6, 4, RANK, 5, b"bob")
             + storm_tuple(6, 4, RANK_DONE) + storm_tuple(6, 5, RANK, 7, b"carol")
             + storm_tuple(6, 5, RANK_DONE))
    total_end = storm_tuple(6, 4, END) + storm_tuple(6, 5, END)
    crowd = b"".join(storm_tuple(2, 0, TWEET, 1, b"user%d" % i) for i in range(1100))
    return [config(0) + tweets_ + counter_end, config(0, 2) + tweets_ + counter_end,
            config(1) + counts + ranker_end, config(2) + ranks + total_end,
            config(0) + crowd + counter_end]    # more users than a table's first 1024


def storm_spout() -> list[bytes]:
    """A tweets file of examples/storm/tweets.py, and lines the spout must cut or skip."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tweets.txt")
        tweets.write_tweets(path, tweets=200, users=30)
        with open(path, "rb") as f:
            drawn = f.read()
    return [drawn, b"alice\r\nbob\n\ncarol\r\n\r\n" + b"x" * 40 + b"\nlast without newline",
            b"\0starts with NUL\nname\0cut\n\n\n", b""]


def batch() -> list[bytes]:
    """Command sequences of the batch harness (tests/library/test_batch.py's shapes): whole
    and partial batches through the queue, pulls from every instance, direct calls."""
    def push(v: int) -> bytes:
        return b"\x00" + struct.pack(">H", v)

    def pull(qid: int) -> bytes:
        return b"\x01" + bytes([qid + 1])

    def direct(v: int) -> bytes:
        return b"\x02" + struct.pack(">H", v & 0xffff)

    return [b"".join(push(3 * i) for i in range(10)) + pull(0) + pull(0) + pull(0),
            b"".join(push(i) for i in range(23)) + pull(-1) + pull(1) + pull(0),
            b"".join(direct(k * k) for k in range(1, 11)),
            b"".join(push(i) + direct(-i) + pull(i % 3 - 1) for i in range(30))]


def pcap_reader() -> list[bytes]:
    """examples/kvs/load.py's capture (as tests/kvs replays one) in every variant libpcap
    reads (both byte orders, nanoseconds, pcapng written by dpkt), captures the backend
    must refuse or cut short, each after the harness's options byte: replayed once, and
    some three times or with one or two free buffers."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "w.pcap")
        load.write_pcap(load.Workload(keys=8, key_size=8, value_size=32), path, requests=6)
        with open(path, "rb") as f:
            little = f.read()
    header, records = little[:24], little[24:]
    frames = []
    at = 0
    while at < len(records):
        cap = struct.unpack_from("<I", records, at + 8)[0]
        frames.append(records[at + 16:at + 16 + cap])
        at += 16 + cap

    def swapped(data: bytes) -> bytes:
        """The same capture written big-endian."""
        out = bytearray(struct.pack(">IHHiIII", *struct.unpack("<IHHiIII", header)))
        at = 0
        while at < len(records):
            ts, us, cap, length = struct.unpack_from("<IIII", records, at)
            out += struct.pack(">IIII", ts, us, cap, length) + records[at + 16:at + 16 + cap]
            at += 16 + cap
        return bytes(out)

    def pcapng(frames: list[bytes], linktype: int = 1) -> bytes:
        """The frames as pcapng, written by dpkt."""
        buffer = io.BytesIO()
        writer = dpkt.pcapng.Writer(buffer, snaplen=65535, linktype=linktype)
        for i, data in enumerate(frames):
            writer.writepkt(data, ts=NOW + i / 8)
        return buffer.getvalue()

    nanos = struct.pack("<I", 0xa1b23c4d) + little[4:]
    oversized = header + struct.pack("<IIII", 0, 0, 3000, 3000) + bytes(3000) + records
    ng = pcapng(frames)
    once = [little, swapped(little), nanos, oversized, header, little[:-5], little[:24 + 10],
            struct.pack("<I", 0x0a0d0d0a) + little[4:], header[:20] + struct.pack("<I", 101),
            b"not a capture", ng, ng[:-7], pcapng(frames[:2], linktype=101),
            pcapng(frames[:1] + [bytes(3000)] + frames[1:3])]
    return ([b"\x00" + c for c in once]
            + [bytes([options]) + c for options in (0x02, 0x04, 0x0b) for c in (little, ng)])


def frame_check() -> list[bytes]:
    """tests/test_slicing.py's frames (UDP and TCP, 60 to 1518 bytes, malformed ones), a few
    with a UDP checksum computed, and tests/library's UDP frames."""
    frames = slicing_workload(seed=11, count=60)
    summed = []
    for raw in frames[:18:2]:
        eth = dpkt.ethernet.Ethernet(raw)
        if isinstance(eth.data, dpkt.ip.IP) and isinstance(eth.data.data, dpkt.udp.UDP):
            eth.data.data.sum = 0
            eth.data.sum = 0
            summed.append(bytes(eth))          # dpkt computes both checksums
    return frames + summed + udp_headers()[:40]


def frame_pool() -> list[bytes]:
    """Sequences of pool operations (two bytes each, fuzz/harness/frame_pool.c): keeps,
    takes, drops and made-up references, with time passing and the pool filling."""
    keep, take, forged, drop, wait = 0, 1, 2, 3, 4
    rng = random.Random(5)
    seeds = [bytes([keep, b]) for b in range(6)]
    seeds.append(b"".join(bytes([keep, b, take, b]) for b in range(8)))
    seeds.append(b"".join(bytes([keep, b]) for b in range(6)) + bytes([wait, 200, keep, 9]))
    seeds.append(bytes([keep, 1, forged, 0x30, drop, 0, take, 0, keep, 1, take, 0]))
    for _ in range(8):
        seeds.append(bytes(rng.choice((keep, take, forged, drop, wait)) if i % 2 == 0
                           else rng.randrange(256) for i in range(rng.randrange(8, 80))))
    return seeds


# -- network functions (examples/nf) -----------------------------------------------------------

def frames(*each: bytes) -> bytes:
    """An input of the harnesses that take a sequence of frames: each frame's length (2 bytes,
    big-endian), then the frame."""
    return b"".join(struct.pack(">H", len(f)) + f for f in each)


def payload_frame(payload: bytes, flow: int = 0) -> bytes:
    """A UDP frame from flow ``flow`` of examples/nf/load.py carrying ``payload``."""
    return nf_load.frame(nf_load.Packet(flow, flow, payload))


def ip_options(frame: bytes) -> bytes:
    """The frame with 4 bytes of IPv4 options (no-ops): its UDP header 4 bytes further."""
    total = struct.unpack_from(">H", frame, 16)[0] + 4
    return frame[:14] + b"\x46" + frame[15:16] + struct.pack(">H", total) + frame[18:34] \
        + b"\x01" * 4 + frame[34:]


def prefixes(frame: bytes) -> list[bytes]:
    """The frame cut at each length where a header or the payload starts or ends, and one less."""
    cuts = (0, 13, 14, 33, 34, 41, 42, 50, len(frame) - 1)
    return [frame[:n] for n in cuts]


def nf_sequencer() -> list[bytes]:
    """examples/nf/load.py's sequencer frames, tests/nf's payloads too short and groups above
    9, an empty bitmap, truncations and IPv4 options."""
    workload = nf_load.frames("sequencer", 8, size=140)
    group0 = [payload_frame(b"\0\1" + bytes(max(0, n - 2))) for n in (0, 1, 2, 81, 82, 83, 90)]
    bitmaps = [payload_frame(struct.pack(">H", b) + bytes(80), flow=b % 5)
               for b in (0, 1, 0x3ff, 0x200, 0x400, 0x8000, 0xffff)]
    return [frames(*workload), frames(*group0), frames(*bitmaps),
            frames(*prefixes(workload[0])), frames(*map(ip_options, workload[:4]))]


def nf_flowclass() -> list[bytes]:
    """examples/nf/load.py's flowclass frames (Zipf over 6 flows, 58 to 80 bytes), tests/nf's
    payloads too short, truncations and IPv4 options."""
    workload = nf_load.frames("flowclass", 40, size=80, flows=6, min_size=58)
    short = [payload_frame(bytes(n), flow=n % 3) for n in range(17)]
    return [frames(*workload), frames(*short), frames(*prefixes(workload[0])),
            frames(*map(ip_options, workload[:8]))]


def shallow(kind: str, params: dict[str, str]) -> list[bytes]:
    """examples/nf/traffic.py's frames for ``kind`` with fuzz/apps/nf_KIND.py's parameters:
    flows both ways, malformed frames of every kind, and (seed 4) more flows than the
    firewall's table or the NAT's ports."""
    return [frames(*traffic.frames(kind, 40, (64, 90), seed=seed, flows=8, malformed=0.2,
                                   params=params)) for seed in (1, 2, 3)] \
        + [frames(*traffic.frames(kind, 56, (64,), seed=4, flows=28, malformed=0.05,
                                  params=params))]


def nf_firewall() -> list[bytes]:
    """`shallow`'s, and 20 new flows the rules allow (more than the table's 16), then the
    answers of the first (remembered) and of the last (not: denied)."""
    rng = random.Random(6)
    inside, web = 0x0a010000, 0xc6336401                     # 10.1.0.0, 198.51.100.1
    new = [traffic.build(6, inside + i, 40000 + i, web, 80, 64, rng) for i in range(20)]
    answers = [traffic.build(6, web, 80, inside + i, 40000 + i, 64, rng) for i in (0, 19)]
    return shallow("firewall", {"flows": "16"}) + [frames(*new, *answers)]


CORPORA: dict[str, Callable[[], list[bytes]]] = {
    "udp_headers": udp_headers, "memcached": memcached, "kvs_request": kvs_request,
    "stream_framers": stream_framers,
    "storm_transport": storm_transport, "storm_workers": storm_workers,
    "storm_spout": storm_spout, "batch": batch, "pcap_reader": pcap_reader,
    "frame_check": frame_check, "frame_pool": frame_pool,
    "nf_sequencer": nf_sequencer, "nf_flowclass": nf_flowclass,
    "nf_firewall": nf_firewall,
    "nf_nat": lambda: shallow("nat", {"ports": "1024-1039"}),
    "nf_lb": lambda: shallow("lb", {"table": "13", "backends": "10.2.0.1=02:00:00:00:04:01,"
                                                           "10.2.0.2=02:00:00:00:04:02,"
                                                           "10.2.0.3=02:00:00:00:04:03"}),
}


def write(out_dir: str) -> None:
    """Every harness's seeds into ``out_dir/<harness>/seed-NNN``."""
    for name, make in CORPORA.items():
        where = os.path.join(out_dir, name)
        shutil.rmtree(where, ignore_errors=True)
        os.makedirs(where)
        for i, data in enumerate(make()):
            with open(os.path.join(where, f"seed-{i:03d}"), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "fuzz", "corpus"))
