"""The key-value store (examples/kvs/kvs.py) in every design, checked against real memcached.

Each design serves a free UDP port (``floem run``, NIC designs on the emulated NIC) beside a
memcached 1.6 (``-U PORT -B binary``). Both get the same randomized sequence of requests, one
at a time: GET, GETK, SET, DELETE and NOOP over a small key set (hits, misses, overwrites),
keys of 1 to 250 bytes, values from empty to the largest a datagram carries (replies split
over two datagrams), flags, expiry times, unknown opcodes and invalid arguments, and a get
of three keys whose parts take different paths (NIC cache hits beside a miss the host
serves). Every response must equal memcached's, datagrams in memcached's order. Malformed datagrams are interleaved (sent
to the design only: memcached's UDP path swallows or misparses some of them); none may be
answered, every request after them must still be answered like memcached, and each is
counted by reason (the store's ``--report``). Then the workload generator drives the design.
A shorter sequence runs on the NIC platforms under qemu (big-endian LiquidIO, BlueField).
The split-pointer design's log of items, in a small memory budget, wraps around many times
and must never serve what it overwrote.

Captures: a phased sequence (no key touched while an earlier request on it may still be in
flight) is replayed through ``--net pcap`` and DPDK's ``net_pcap`` vdev in every design, with
frames only a capture can hold (IPv4 options, other protocols); the replies must be
memcached's. And: expiry, ``value_max``, the memory budget, and "ready" meaning ready.
"""
from __future__ import annotations

import collections
import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import dpkt
import pytest

from conftest import ROOT, floem, floem_command
from kvs_server import (DATAGRAM_MAX, DESIGNS, KVS, UDP_MAX, VALUE_MAX, Client, free_udp_port, kvs_server,
                        malformed_datagrams, oracle_requests, ordering_requests, phased_requests)
from test_net import DPDK_EAL, have_dpdk
from test_protocol import memcached

sys.path.insert(0, os.path.join(ROOT, "examples", "kvs"))
import load  # noqa: E402
import protocol as kvp  # noqa: E402

assert shutil.which("memcached"), "install memcached (scripts/setup.sh does)"


def check_against_memcached(mc: Client, kvs: Client, requests: list[bytes],
                            malformed: list[tuple[str, bytes]]) -> collections.Counter:
    """Send ``requests`` to both, ``malformed`` spread among them to ``kvs`` only; return how
    many malformed datagrams of each reason were sent. Every answer must be memcached's byte
    for byte, CAS values included, its datagrams in memcached's order (those answering the
    keys and commands of one datagram too, whatever path each took through the design)."""
    sent: collections.Counter = collections.Counter()
    every = max(1, len(requests) // (len(malformed) + 1))
    pending = list(malformed)
    for i, request in enumerate(requests):
        if pending and i % every == every - 1:
            reason, datagram = pending.pop(0)
            kvs.send(datagram)
            sent[reason] += 1
        expected = mc.replies_until_mn(request)
        got = kvs.replies(request, len(expected))
        assert got == expected, (f"request {i}: {request!r}\n"
                                 f"memcached: {expected}\nkvs:       {got}")
    assert kvs.silent(), "a malformed datagram or a noreply request was answered"
    return sent


@pytest.mark.parametrize("design", DESIGNS)
def test_every_design_answers_like_memcached(design: str) -> None:
    with memcached() as mc_port, kvs_server(*DESIGNS[design]) as server:
        mc, kvs = Client(mc_port), Client(server.port)
        updates = not design.startswith("split-pointer")
        requests = oracle_requests(seed=len(design), count=500, updates=updates)
        requests += ordering_requests(1000, updates)   # a get's keys on paths of their own
        sent = check_against_memcached(mc, kvs, requests, malformed_datagrams(seed=1))
        summary = load.run_live(load.Workload(keys=1000, seed=3), [load.Server("127.0.0.1",
                                                                                server.port)],
                                requests=3000, window=16)
        assert summary.errors == 0 and summary.timeouts == 0, summary.format()
        assert summary.hits == summary.gets > 0
        mc.close()
        kvs.close()
    drops = server.report("state drops")
    assert drops == {**{r: 0 for r in drops}, **sent}, server.stderr


@pytest.mark.slow
@pytest.mark.timeout(1200)               # builds for qemu: up to 600 s to start
@pytest.mark.parametrize("nic, design", [("liquidio", "cache-wb"), ("bluefield", "split"),
                                         ("liquidio", "split-pointer")])
def test_nic_platforms_answer_like_memcached(nic: str, design: str) -> None:
    """Under qemu: the big-endian LiquidIO (MIPS64) and the Arm BlueField."""
    with memcached() as mc_port, kvs_server(f"design={design}", "entries=2", nic=nic,
                                            start_timeout=600) as server:
        check_against_memcached(Client(mc_port), Client(server.port, timeout=20),
                                oracle_requests(seed=7, count=120, updates=design != "split-pointer"),
                                malformed_datagrams(seed=2))


@pytest.mark.parametrize("design", ["cpu", "cache-wb", "split-pointer"])
def test_relative_expiry_is_honoured_like_memcached(design: str) -> None:
    with memcached() as mc_port, kvs_server(f"design={design}") as server:
        mc, kvs = Client(mc_port), Client(server.port)

        def both(datagram: bytes) -> tuple[kvp.Response, kvp.Response]:
            return mc.ask(datagram).without_cas(), kvs.ask(datagram).without_cas()

        set_, get = kvp.encode_set(1, b"soon", b"gone in 2 s", flags=5, expiration=2), \
            kvp.encode_get(2, b"soon")
        for answer in (both(set_), both(get)):
            assert answer[0] == answer[1] and answer[0].status == kvp.OK
        time.sleep(3.2)
        memcached_answer, kvs_answer = both(get)
        assert memcached_answer == kvs_answer and kvs_answer.status == kvp.KEY_NOT_FOUND


#: Build flags of a program checked by AddressSanitizer (the packet pool then makes the bytes
#: past each frame unaddressable), LeakSanitizer (at exit) and UBSan.
SANITIZERS = "-fsanitize=address,undefined -fno-sanitize-recover=all"


@pytest.mark.parametrize("design", ["cpu", "split"])
def test_replies_stay_in_their_frames_and_the_store_is_freed_at_exit(design: str) -> None:
    """Built with sanitizers: replies longer than their requests (the largest value under a
    one-byte key, a reply of two datagrams; short values; GETK echoing the key) and the
    randomized sequence are memcached's, no element writes past a request's frame, and
    LeakSanitizer finds nothing left at exit (the store freed)."""
    requests = [kvp.encode_set(1, b"k", b"v" * VALUE_MAX), kvp.encode_get(2, b"k"),
                kvp.encode_getk(3, b"k"), kvp.encode_set(4, b"s", b"short"),
                kvp.encode_get(5, b"s"), kvp.encode_getk(6, b"s")]
    env = {"FLOEM_CFLAGS": f"{os.environ['FLOEM_CFLAGS']} {SANITIZERS}"}
    answered = False
    with memcached() as mc_port, kvs_server(f"design={design}", env=env) as server:
        with contextlib.suppress(TimeoutError):     # a sanitizer stopped the store
            check_against_memcached(Client(mc_port), Client(server.port),
                                    requests + oracle_requests(seed=12, count=200), [])
            answered = True
    assert answered and server.proc.returncode == 0, server.stderr
    assert "Sanitizer" not in server.stderr, server.stderr


#: memcached keeping items of at most 1 KiB (its smallest -I), so that its largest value
#: fits a frame: the store runs with that value as its value_max.
SMALL_ITEMS = ("-I", "1k", "-o", "slab_chunk_max=512")


def largest_value(port: int, key: bytes) -> int:
    """The longest value the memcached on ``port`` stores under ``key``."""
    mc, shortest, longest = Client(port), 0, VALUE_MAX
    while shortest < longest:
        length = (shortest + longest + 1) // 2
        if mc.ask(kvp.encode_set(1, key, bytes(length))).status == kvp.OK:
            shortest = length
        else:
            longest = length - 1
    return shortest


@pytest.mark.parametrize("design", ["cpu", "split", "cache-wt", "cache-wb", "external",
                                    "split-pointer"])
def test_values_too_large_are_answered_like_memcached(design: str) -> None:
    """Value sizes from 0 to the largest a UDP datagram carries, on both sides of each limit:
    memcached's largest value (the store's value_max set to it), the longest a frame holds
    (2,006 bytes of UDP payload, beyond which the udp backend delivers the datagram cut), in
    both protocols, each followed by a get: every answer is memcached's (too large, and the
    key's old value removed), and the backend drops nothing."""
    with memcached(*SMALL_ITEMS) as probe:
        limit = largest_value(probe, b"k")
    text_frame = DATAGRAM_MAX - kvp.FRAME_HEADER_SIZE - len(b"set k 0 0 1980\r\n\r\n")
    binary_udp = UDP_MAX - kvp.FRAME_HEADER_SIZE - kvp.HEADER_SIZE - 8 - 1
    sizes = sorted({0, 1, limit - 1, limit, limit + 1, limit + 2, 1500, VALUE_MAX, VALUE_MAX + 1,
                    text_frame, text_frame + 1, 8000, 1 << 15, binary_udp})
    requests = []
    for rid, size in enumerate(sizes):     # flags 0: other flags lengthen memcached's item
        text = b"set k 0 0 %d\r\n%s\r\n" % (size, b"t" * size)
        requests += [kvp.encode_set(rid, b"k", bytes([rid]) * size), kvp.encode_get(rid, b"k"),
                     kvp.FRAME_HEADER.pack(rid, 0, 1, 0) + text,
                     kvp.FRAME_HEADER.pack(rid, 0, 1, 0) + b"get k\r\n"]
    with memcached(*SMALL_ITEMS) as mc_port, \
            kvs_server(*DESIGNS[design], f"value_max={limit}") as server:
        check_against_memcached(Client(mc_port), Client(server.port), requests, [])
    assert server.report("net udp: queues")["rx dropped"] == 0, server.stderr


def lru_counters(operations: list[tuple[str, bytes]], entries: int) -> dict[str, int]:
    """What a write-back, write-allocate cache of one bucket of ``entries`` entries that
    evicts its least recently used entry counts for ``operations`` ("get" or "set", key),
    as `Server.report` reads its ``floem: cache`` line."""
    cache: collections.OrderedDict[bytes, bool] = collections.OrderedDict()  # key: dirty
    counts = dict.fromkeys(["hits", "misses", "evictions", "write-backs"], 0)
    for op, key in operations:
        if op == "get":
            counts["hits" if key in cache else "misses"] += 1
        if key not in cache and len(cache) == entries:
            _, dirty = cache.popitem(last=False)
            counts["evictions"] += 1
            counts["write-backs"] += dirty
        cache[key] = op == "set" or cache.get(key, False)    # a fill is clean, a set dirty
        cache.move_to_end(key)
    return counts


def test_the_nic_cache_evicts_its_least_recently_used_entry() -> None:
    """cache-wb with one bucket of three entries: random GETs and SETs of six keys evict
    what a least-recently-used cache evicts (its counters match a model's), and every GET
    answers the key's latest value (the evicted ones written back to the store)."""
    rng = random.Random(14)
    keys = [b"key%d" % i for i in range(6)]
    operations = [(rng.choice(["get", "set"]), rng.choice(keys)) for _ in range(300)]
    latest: dict[bytes, bytes] = {}
    with kvs_server("design=cache-wb", "buckets=1", "entries=3") as server:
        kvs = Client(server.port)
        for rid, (op, key) in enumerate(operations, 1):
            if op == "set":
                latest[key] = b"%s=%d" % (key, rid)
                assert kvs.ask(kvp.encode_set(rid, key, latest[key])).status == kvp.OK
            else:
                got = kvs.ask(kvp.encode_get(rid, key))
                assert (got.status, got.value) == ((kvp.OK, latest[key]) if key in latest
                                                   else (kvp.KEY_NOT_FOUND, b"Not found"))
    assert server.report("cache kv") == lru_counters(operations, 3), server.stderr


def test_the_store_evicts_within_its_memory_budget() -> None:
    with kvs_server("design=cpu", "memory=1") as server:
        kvs = Client(server.port)
        for i in range(3000):                       # 3000 x ~1 KiB items in a 1 MiB store
            assert kvs.ask(kvp.encode_set(i % 65536, b"key%d" % i, b"v" * 1000)).status == kvp.OK
        assert kvs.ask(kvp.encode_get(1, b"key2999")).value == b"v" * 1000
        assert kvs.ask(kvp.encode_get(2, b"key0")).status == kvp.KEY_NOT_FOUND


#: DMA completing late and out of order, torn, and NIC threads pausing (docs/nic.md).
FAULTS = "seed=7,dma_delay=0.3,dma_tear=0.3,stall=0.01"


@pytest.mark.parametrize("faults", ["", FAULTS], ids=["faultless", "faults"])
def test_split_pointer_never_serves_what_its_log_overwrote(faults: str) -> None:
    """split-pointer in a 1 MiB budget: a 512 KiB log of items, which 3000 SETs of 1 KiB go
    round about six times. The keys set last are served exactly; those whose items the log
    overwrote are "Not found" to GET and DELETE alike, like keys memcached evicted. Then the
    workload generator, 16 requests in flight on two NIC and two host threads, checks that
    every hit is the latest value of its key (misses allowed). Again with DMA faults
    injected, where reads race with the log's writes in every order PCIe allows."""
    def value(i: int) -> bytes:
        return (b"value of key %d;" % i * 100)[:1000]

    with kvs_server("design=split-pointer", "memory=1", "cores=2", "nic_cores=2",
                    env={"FLOEM_FAULTS": faults}) as server:
        kvs = Client(server.port, timeout=20)
        for i in range(3000):
            assert kvs.ask(kvp.encode_set(i % 65536, b"key%d" % i, value(i), flags=i)).status \
                == kvp.OK
        hits = []
        for i in range(3000):
            got = kvs.ask(kvp.encode_get(i % 65536, b"key%d" % i))
            if got.status == kvp.OK:
                assert (got.value, got.flags) == (value(i), i), f"key{i}"
                hits.append(i)
            else:
                assert got.status == kvp.KEY_NOT_FOUND, f"key{i}: {got}"
        assert hits == list(range(hits[0], 3000)) and 2400 <= hits[0] <= 2600, hits[:3]
        assert kvs.ask(kvp.encode_request(1, kvp.DELETE, key=b"key0")).status \
            == kvp.KEY_NOT_FOUND
        assert kvs.ask(kvp.encode_request(2, kvp.DELETE, key=b"key2999")).status == kvp.OK
        assert kvs.ask(kvp.encode_get(3, b"key2999")).status == kvp.KEY_NOT_FOUND
        summary = load.run_live(load.Workload(keys=2000, value_size=1000, seed=5),
                                [load.Server("127.0.0.1", server.port)], requests=10000,
                                window=16, allow_misses=True, timeout=1.0)
        # (1 s a try, not 0.2: with stalls injected, four threads and the NIC's process on
        # two cores of a machine other jobs load, an answer took longer than 4 x 0.2 s)
        assert summary.errors == 0 and summary.timeouts == 0, summary.format()
        assert summary.hits > 0 and summary.misses > 0, summary.format()
    log = server.report("state itemlog")
    assert log["head"] > 10 * log["size"], log
    assert not faults or server.report("nic faults")["torn"] > 0, server.stderr


def test_usable_as_soon_as_it_says_it_is_ready() -> None:
    port = free_udp_port()
    proc = subprocess.Popen(floem_command() + ["run", KVS, "-D", "design=cache-wb", "--port",
                                               str(port), "--timeout", "300"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if line.startswith("floem: net udp: ready"):
                break
        assert line.strip() == f"floem: net udp: ready on UDP port {port} of 127.0.0.1"
        kvs = Client(port, timeout=10)
        assert kvs.ask(kvp.encode_set(1, b"first", b"request")).status == kvp.OK
        assert kvs.ask(kvp.encode_get(2, b"first")).value == b"request"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


# -- captures: --net pcap and --net dpdk ------------------------------------

CLIENT = dict(src_mac=kvp.mac_address("02:00:00:00:00:02"), dst_mac=kvp.mac_address("02:00:00:00:00:01"),
              src_ip=kvp.ipv4_address("10.0.0.2"), dst_ip=kvp.ipv4_address("10.0.0.1"),
              src_port=40000, dst_port=11211)


def frames_not_for_memcached() -> list[tuple[str, bytes]]:
    """Frames only a capture can hold: IP options, other protocols, cut-short headers."""
    good = kvp.build_frame(kvp.encode_noop(0x7100), **CLIENT)
    options = dpkt.ethernet.Ethernet(good)
    options.data.opts = b"\x01\x01\x01\x00"             # NOP, NOP, NOP, end of options
    options.data.hl = 6
    options.data.len += 4
    options.data.sum = 0
    tcp = bytearray(good)
    tcp[23] = 6                                         # IPv4 protocol: TCP
    return [("ip_options", bytes(options)), ("not_udp", bytes(tcp)), ("not_udp", good[:30]),
            ("not_udp", good[:14])]


def write_capture(path: str, requests: list[bytes], extra: list[tuple[str, bytes]]) -> None:
    frames = [kvp.build_frame(r, **CLIENT, ip_id=i) for i, r in enumerate(requests)]
    for i, (_, frame) in enumerate(extra):
        frames.insert(1 + i * len(frames) // (len(extra) + 1), frame)
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=65535)
        for i, frame in enumerate(frames):
            writer.writepkt(frame, ts=i * 1e-6)


def replies_in(path: str) -> dict[int, kvp.Response]:
    """The responses in a capture of reply frames (addressed back to the client), by request id."""
    assembler, replies = kvp.Reassembler(), {}
    with open(path, "rb") as f:
        for _, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            assert (ip.src, ip.dst, ip.data.sport, ip.data.dport) == (
                CLIENT["dst_ip"], CLIENT["src_ip"], CLIENT["dst_port"], CLIENT["src_port"])
            response = assembler.feed(bytes(ip.data.data))
            if response is not None:
                replies[response.request_id] = response.without_cas()
    return replies


def check_capture(tmp_path, run) -> None:
    """Replay a phased capture through ``run(in, out) -> Server-like stderr``; compare with memcached."""
    requests, extra = phased_requests(seed=11), frames_not_for_memcached()
    src, out = str(tmp_path / "requests.pcap"), str(tmp_path / "replies.pcap")
    write_capture(src, requests, extra)
    stderr = run(src, out)
    with memcached() as mc_port:
        mc = Client(mc_port)
        expected = {kvp.FRAME_HEADER.unpack_from(r)[0]: mc.ask(r).without_cas() for r in requests}
    got = replies_in(out)
    assert sorted(got) == sorted(expected), stderr
    for rid in expected:
        assert got[rid] == expected[rid], f"request {rid}"
    drops = collections.Counter(reason for reason, _ in extra)
    line = next(ln for ln in stderr.splitlines() if ln.startswith("floem: state drops"))
    for reason, count in drops.items():
        assert f"{reason} {count}" in line, stderr


CAPTURE_DESIGNS = ["cpu", "split", "cache-wt", "cache-wb", "external", "split-pointer"]


@pytest.mark.parametrize("design", CAPTURE_DESIGNS)
def test_pcap_replay_answers_like_memcached(design: str, tmp_path) -> None:
    def run(src: str, out: str) -> str:
        result = floem("run", KVS, "-D", f"design={design}", "--net", "pcap", "--pcap-in", src,
                       "--pcap-out", out, "--duration", "3", "--report", timeout=300)
        assert result.returncode == 0, result.stderr
        return result.stderr
    check_capture(tmp_path, run)


@pytest.mark.parametrize("design", ["cpu", "cache-wb"])
def test_dpdk_pcap_vdev_answers_like_memcached(design: str, tmp_path) -> None:
    """DPDK's packet I/O on the host (cpu) and on the NIC (every other design receives and
    sends there, as cache-wb does); the pcap backend above runs every design."""
    assert have_dpdk(), "install libdpdk-dev (scripts/setup.sh does)"
    def run(src: str, out: str) -> str:
        result = floem("run", KVS, "-D", f"design={design}", "--net", "dpdk", "--duration", "3",
                       "--eal", f"{DPDK_EAL} --vdev=net_pcap0,rx_pcap={src},tx_pcap={out}",
                       "--report", timeout=300)
        assert result.returncode == 0, result.stderr
        return result.stderr
    check_capture(tmp_path, run)
