"""The workload generator of the key-value store (examples/kvs/load.py).

Zipf sampling against theory; live runs against memcached (every GET checked,
the expected hits, the values really stored); sharding over two memcacheds
with ketama; a fake server whose wrong values and flags must be caught; a
proxy that drops datagrams, which retries must hide; a fake server that holds
its answers, to show no key ever has two requests outstanding; the pcap output
read back with dpkt; and the command line's errors.
"""
from __future__ import annotations

import json
import os
import selectors
import socket
import string
import subprocess
import sys
import threading
import time
from collections import Counter

import dpkt
import numpy as np
import pytest

from conftest import ROOT
from test_protocol import ask, client, memcached, server  # noqa: F401 (a fixture)

sys.path.insert(0, os.path.join(ROOT, "examples", "kvs"))
import load  # noqa: E402
import protocol as kvp  # noqa: E402

LOAD = os.path.join(ROOT, "examples", "kvs", "load.py")
PRINTABLE = set(string.printable.encode()) - set(b"\t\n\r\x0b\x0c")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, LOAD, *args], capture_output=True, text=True,
                          timeout=60)


def expected_counts(workload: load.Workload, requests: int) -> Counter:
    return Counter(op.opcode for op in workload.operations(requests))


# -- the workload -----------------------------------------------------------

def test_zipf_sampler_matches_theory() -> None:
    n, s, draws = 1000, 0.9, 400_000
    ranks = load.ZipfSampler(n, s).sample(np.random.default_rng(3), draws)
    assert ranks.min() >= 0 and ranks.max() < n
    p = 1 / np.sum(np.arange(1, n + 1) ** -s) * np.arange(1, n + 1) ** -s
    assert np.allclose(load.zipf_probabilities(n, s), p)
    counts = np.bincount(ranks, minlength=n) / draws
    assert abs(counts[0] - p[0]) < 0.03 * p[0], (counts[0], p[0])     # about 10%: 5 sigma
    assert np.all(np.abs(counts[:20] - p[:20]) < 5 * np.sqrt(p[:20] / draws))
    assert abs(counts[500:].sum() - p[500:].sum()) < 0.01
    uniform = np.bincount(load.ZipfSampler(10, 0).sample(np.random.default_rng(1), 100_000))
    assert np.all(np.abs(uniform / 100_000 - 0.1) < 0.006)


def test_workload_stream() -> None:
    workload = load.Workload(keys=500, seed=11)
    ops = list(workload.operations(20_000))
    assert ops[:3000] == list(workload.operations(3000))             # a prefix, on every call
    assert ops[:3000] == list(load.Workload(keys=500, seed=11).operations(3000))
    assert ops[:3000] != list(load.Workload(keys=500, seed=12).operations(3000))
    top, count = Counter(op.index for op in ops).most_common(1)[0]
    assert top == workload.key_of_rank[0]
    assert abs(count / len(ops) - workload.popularity()[top]) < 0.02
    assert workload.popularity()[workload.key_of_rank[0]] == workload.popularity().max()
    gets = sum(op.opcode == kvp.GET for op in ops) / len(ops)
    assert 0.88 < gets < 0.92
    versions: dict[int, int] = {}
    for op in ops:
        assert len(op.key) == 32 and set(op.key) <= PRINTABLE and op.key == workload.key(op.index)
        if op.opcode == kvp.SET:
            versions[op.index] = versions.get(op.index, 0) + 1
            assert op.version == versions[op.index]
            assert op.value == workload.value(op.index, op.version)
            assert op.flags == workload.flags(op.index, op.version)
            assert len(op.value) == 64 and set(op.value) <= PRINTABLE and op.key in op.value
    preload = list(workload.preload_operations())
    assert [(op.opcode, op.index, op.version) for op in preload] == [
        (kvp.SET, i, 0) for i in range(500)]
    assert len({workload.key(i) for i in range(500)}) == 500
    assert len({workload.value(7, v) for v in range(100)} | {workload.value(8, 0)}) == 101
    assert list(load.Workload(keys=5, preload=False).preload_operations()) == []
    for bad in (dict(keys=0), dict(keys=1000, key_size=2), dict(key_size=251),
                dict(value_size=70_000), dict(zipf=-1), dict(get_fraction=1.5)):
        with pytest.raises(ValueError):
            load.Workload(**bad)


# -- against memcached ------------------------------------------------------

def test_live_run(server: int) -> None:
    workload = load.Workload(keys=1000, seed=5)
    summary = load.run_live(workload, [f"127.0.0.1:{server}"], requests=5000)
    counts = expected_counts(workload, 5000)
    assert (summary.errors, summary.timeouts, summary.error_examples) == (0, 0, [])
    assert summary.requests == summary.answered == 5000
    assert (summary.gets, summary.sets) == (counts[kvp.GET], counts[kvp.SET])
    assert (summary.hits, summary.misses) == (counts[kvp.GET], 0)
    assert summary.preloaded == 1000 and summary.ok
    assert summary.servers == {f"127.0.0.1:{server}": 5000}
    assert all(summary.latency_us[p] > 0 for p in ("p50", "p90", "p99", "p99.9"))
    assert summary.latency_us["p50"] <= summary.latency_us["p99.9"]
    last: dict[int, int] = {}
    for op in workload.operations(5000):
        if op.opcode == kvp.SET:
            last[op.index] = op.version
    with client() as s:
        for i, index in enumerate(list(last)[:50] + [k for k in range(1000) if k not in last][:20]):
            response = ask(s, server, kvp.encode_get(i, workload.key(index)))
            version = last.get(index, 0)
            assert (response.status, response.value, response.flags) == (
                kvp.OK, workload.value(index, version), workload.flags(index, version))


def test_open_loop(server: int) -> None:
    summary = load.run_live(load.Workload(keys=200, seed=2), [f"127.0.0.1:{server}"],
                            requests=None, duration=0.5, rate=2000)
    assert summary.ok and summary.hits + summary.sets == summary.answered == summary.requests
    assert 850 <= summary.requests <= 1001


def test_cli_json(server: int) -> None:
    result = run_cli("--server", f"127.0.0.1:{server}", "--keys", "300", "--requests", "2000",
                     "--seed", "9", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    counts = expected_counts(load.Workload(keys=300, seed=9), 2000)
    assert report["hits"] == counts[kvp.GET] and report["sets"] == counts[kvp.SET]
    assert (report["requests"], report["answered"], report["errors"], report["timeouts"],
            report["preloaded"]) == (2000, 2000, 0, 0, 300)
    assert set(report["latency_us"]) == {"p50", "p90", "p99", "p99.9"}
    text = run_cli("--server", f"127.0.0.1:{server}", "--keys", "300", "--requests", "100")
    assert text.returncode == 0 and "requests   100 sent, 100 answered" in text.stdout


# -- sharding ---------------------------------------------------------------

def test_sharding_over_two_servers() -> None:
    workload = load.Workload(keys=400, seed=4)
    with memcached() as a, memcached() as b:
        servers = [load.Server("127.0.0.1", a), load.Server("127.0.0.1", b)]
        result = run_cli("--servers", ",".join(map(str, servers)), "--keys", "400",
                         "--requests", "3000", "--seed", "4", "--json")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        ring = load.Ketama(servers)
        share = Counter(str(servers[ring.server_for(op.key)]) for op in workload.operations(3000))
        assert report["servers"] == dict(share) and min(share.values()) > 600
        assert report["hits"] == report["gets"] and report["errors"] == 0
        with client() as s:
            for index in range(0, 400, 10):
                owner = ring.server_for(workload.key(index))
                for number, port in enumerate((a, b)):
                    status = ask(s, port, kvp.encode_get(index, workload.key(index))).status
                    assert status == (kvp.OK if number == owner else kvp.KEY_NOT_FOUND)


# libmemcached 1.1.4 (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, memcached_generate_hash):
# the servers of key-0 .. key-23 among 10.0.0.1:11211,10.0.0.2:11212[,10.0.0.3:11211].
LIBMEMCACHED_TWO = [0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1]
LIBMEMCACHED_THREE = [2, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1, 2, 0, 0, 0, 0, 0, 1]


def test_ketama_moves_a_third_of_the_keys() -> None:
    two = [load.Server("10.0.0.1"), load.Server("10.0.0.2", 11212)]
    three = two + [load.Server("10.0.0.3")]
    assert two[0].ketama_name == "10.0.0.1" and two[1].ketama_name == "10.0.0.2:11212"
    assert len(load.Ketama(three).points) == 480
    keys = [b"key-%d" % i for i in range(20_000)]
    ring_two, ring_three = load.Ketama(two), load.Ketama(three)
    assert [ring_two.server_for(k) for k in keys[:24]] == LIBMEMCACHED_TWO
    assert [ring_three.server_for(k) for k in keys[:24]] == LIBMEMCACHED_THREE
    before = [ring_two.server_for(k) for k in keys]
    after = [ring_three.server_for(k) for k in keys]
    moved = [(x, y) for x, y in zip(before, after) if x != y]
    assert all(y == 2 for _, y in moved)                          # only to the new server
    assert 0.25 < len(moved) / len(keys) < 0.42
    assert 0.35 < before.count(0) / len(keys) < 0.65
    assert load.Ketama(list(reversed(two))).server_for(keys[0]) == 1 - before[0]


# -- fake servers -----------------------------------------------------------

class FakeServer(threading.Thread):
    """A memcached stand-in: a dict behind NOOP/SET/GET, with planted faults.

    Every ``corrupt_every``-th GET hit comes back with a wrong value (odd
    ones) or wrong flags (even ones); every ``evict_every``-th SET is
    acknowledged but evicts its key at once. With ``hold`` > 1, answers are held
    until that many requests wait (or 2 ms pass), and a request for a key
    that already waits for its answer is recorded in ``overlaps``.
    """

    def __init__(self, corrupt_every: int = 0, evict_every: int = 0, hold: int = 1) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.002)
        self.port = self.sock.getsockname()[1]
        self.corrupt_every, self.evict_every, self.hold = corrupt_every, evict_every, hold
        self.store: dict[bytes, tuple[bytes, int]] = {}
        self.gets = self.sets = self.misses = self.corrupted = self.overlaps = self.max_held = 0
        self.stop = threading.Event()

    def answer(self, request: kvp.Request) -> kvp.Response:
        def reply(status: int, extras: bytes = b"", value: bytes = b"") -> kvp.Response:
            return kvp.Response(request.request_id, request.opcode, status, request.opaque, 1,
                                extras, b"", value)
        if request.opcode == kvp.SET:
            self.sets += 1
            self.store[request.key] = (request.value, request.flags)
            if self.evict_every and self.sets % self.evict_every == 0:
                del self.store[request.key]
            return reply(kvp.OK)
        if request.opcode == kvp.GET:
            if request.key not in self.store:
                self.misses += 1
                return reply(kvp.KEY_NOT_FOUND, value=b"Not found")
            value, flags = self.store[request.key]
            self.gets += 1
            if self.corrupt_every and self.gets % self.corrupt_every == 0:
                self.corrupted += 1
                if self.corrupted % 2:
                    value = value[:-1] + b"?"
                else:
                    flags ^= 1
            return reply(kvp.OK, kvp.FLAGS.pack(flags), value)
        return reply(kvp.OK if request.opcode == kvp.NOOP else kvp.UNKNOWN_COMMAND)

    def run(self) -> None:
        held: list[tuple[kvp.Request, tuple]] = []
        first = 0.0
        while not self.stop.is_set():
            try:
                data, peer = self.sock.recvfrom(65536)
                request = kvp.decode_request(data)
                if any(r.key == request.key and r.request_id != request.request_id
                       for r, _ in held):
                    self.overlaps += 1
                first = first if held else time.monotonic()
                held.append((request, peer))
            except TimeoutError:
                pass
            self.max_held = max(self.max_held, len(held))
            if held and (len(held) >= self.hold or time.monotonic() - first > 0.002):
                for request, peer in held:
                    for datagram in self.answer(request).encode():
                        self.sock.sendto(datagram, peer)
                held = []

    def __enter__(self) -> FakeServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join()
        self.sock.close()


def test_wrong_values_are_errors() -> None:
    workload = load.Workload(keys=300, seed=6)
    with FakeServer(corrupt_every=50) as fake:
        summary = load.run_live(workload, [f"127.0.0.1:{fake.port}"], requests=3000)
    gets = expected_counts(workload, 3000)[kvp.GET]
    assert fake.corrupted == gets // 50 > 0
    assert summary.errors == fake.corrupted and summary.timeouts == 0 and not summary.ok
    assert summary.hits == gets - fake.corrupted
    assert any("flags" in e for e in summary.error_examples)
    with FakeServer(corrupt_every=7) as fake:
        result = run_cli("--server", f"127.0.0.1:{fake.port}", "--keys", "100",
                         "--requests", "500")
    assert result.returncode == 1 and fake.corrupted > 0
    assert f"errors     {fake.corrupted}\n" in result.stdout
    assert "load.py: GET key-" in result.stderr and "expected b'key-" in result.stderr


def test_misses_are_errors_unless_allowed() -> None:
    workload = load.Workload(keys=300, seed=12)
    for allow in (False, True):
        with FakeServer(evict_every=10) as fake:
            summary = load.run_live(workload, [f"127.0.0.1:{fake.port}"], requests=2000,
                                    allow_misses=allow)
        assert fake.misses > 10 and summary.timeouts == 0
        assert summary.hits + fake.misses == summary.gets
        if allow:
            assert (summary.errors, summary.misses, summary.ok) == (0, fake.misses, True)
        else:
            assert (summary.errors, summary.misses, summary.ok) == (fake.misses, 0, False)
            assert "missed, expected version" in summary.error_examples[0]


def test_one_request_per_key_outstanding() -> None:
    """Held answers let many requests wait at once; never two for one key."""
    workload = load.Workload(keys=20, zipf=1.5, seed=8)
    with FakeServer(hold=16) as fake:
        summary = load.run_live(workload, [f"127.0.0.1:{fake.port}"], requests=1000, window=32)
    assert summary.ok and summary.hits == summary.gets and summary.answered == 1000
    assert fake.max_held >= 8 and fake.overlaps == 0


class LossyProxy(threading.Thread):
    """Forwards datagrams between one client and a server, dropping every 3rd each way."""

    def __init__(self, upstream: int) -> None:
        super().__init__(daemon=True)
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.bind(("127.0.0.1", 0))
        self.back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.back.connect(("127.0.0.1", upstream))
        self.port = self.front.getsockname()[1]
        self.seen = {"up": 0, "down": 0}
        self.dropped = 0
        self.stop = threading.Event()

    def forward(self, way: str) -> bool:
        self.seen[way] += 1
        if self.seen[way] % 3 == 0:
            self.dropped += 1
            return False
        return True

    def run(self) -> None:
        peer = None
        with selectors.DefaultSelector() as selector:
            selector.register(self.front, selectors.EVENT_READ)
            selector.register(self.back, selectors.EVENT_READ)
            while not self.stop.is_set():
                for key, _ in selector.select(0.01):
                    if key.fileobj is self.front:
                        data, peer = self.front.recvfrom(65536)
                        if self.forward("up"):
                            self.back.send(data)
                    else:
                        data = self.back.recv(65536)
                        if self.forward("down") and peer is not None:
                            self.front.sendto(data, peer)

    def __enter__(self) -> LossyProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join()
        self.front.close()
        self.back.close()


def test_retries_hide_lost_datagrams(server: int) -> None:
    """One request at a time, so no request loses more than 2 tries in a row to the proxy."""
    workload = load.Workload(keys=20, seed=10)
    with LossyProxy(server) as proxy:
        summary = load.run_live(workload, [f"127.0.0.1:{proxy.port}"], requests=80,
                                window=1, timeout=0.05, retries=3)   # 50 ms: a loaded machine
    assert proxy.seen["up"] > 100 and proxy.seen["down"] > 60 and proxy.dropped > 50
    assert summary.timeouts == 0 and summary.errors == 0, summary.error_examples
    assert summary.retries >= proxy.dropped // 2
    assert summary.hits == summary.gets == expected_counts(workload, 80)[kvp.GET]


def received(sock: socket.socket) -> list[kvp.Request]:
    """The requests waiting on ``sock``."""
    sock.setblocking(False)
    requests = []
    while True:
        try:
            requests.append(kvp.decode_request(sock.recv(65536)))
        except BlockingIOError:
            return requests


def test_unreachable_server_is_reported() -> None:
    """A server that does not answer is given up after the NOOP and its retries."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        port = silent.getsockname()[1]
        with pytest.raises(load.LoadError, match=r"does not answer .* \(3 tries, 0.05 s each\)"):
            load.run_live(load.Workload(keys=10), [f"127.0.0.1:{port}"], timeout=0.05, retries=2)
        assert [r.opcode for r in received(silent)] == [kvp.NOOP] * 3
        result = run_cli("--server", f"127.0.0.1:{port}", "--keys", "10", "--timeout", "0.05")
        assert [r.opcode for r in received(silent)] == [kvp.NOOP] * (load.DEFAULT_RETRIES + 1)
    assert result.returncode == 2 and "does not answer" in result.stderr
    assert "Traceback" not in result.stderr


def test_answers_noop(server: int) -> None:
    assert load.answers_noop(load.Server("127.0.0.1", server))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        assert not load.answers_noop(load.Server("127.0.0.1", silent.getsockname()[1]), 0.05)
        assert [r.opcode for r in received(silent)] == [kvp.NOOP]      # one try, no retry


# -- pcap -------------------------------------------------------------------

def test_pcap(tmp_path) -> None:
    path = tmp_path / "kvs.pcap"
    result = run_cli("--pcap", str(path), "--keys", "300", "--requests", "700", "--seed", "3",
                     "--src-mac", "02:aa:00:00:00:02", "--dst-mac", "02:bb:00:00:00:01",
                     "--src-ip", "192.168.1.2", "--dst-ip", "192.168.1.1",
                     "--src-port", "5555", "--dst-port", "11311")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"wrote 1000 frames (300 preload SETs, 700 requests) to {path}"
    workload = load.Workload(keys=300, seed=3)
    expected = list(workload.stream(700))
    with open(path, "rb") as f:
        reader = dpkt.pcap.Reader(f)
        assert reader.datalink() == dpkt.pcap.DLT_EN10MB
        frames = list(reader)
    assert len(frames) == 1000
    for i, ((_, frame), op) in enumerate(zip(frames, expected)):
        eth = dpkt.ethernet.Ethernet(frame)
        ip, udp = eth.data, eth.data.data
        assert (eth.src.hex(), eth.dst.hex()) == ("02aa00000002", "02bb00000001")
        assert (socket.inet_ntoa(ip.src), socket.inet_ntoa(ip.dst)) == ("192.168.1.2",
                                                                       "192.168.1.1")
        assert (udp.sport, udp.dport, udp.ulen) == (5555, 11311, 8 + len(udp.data))
        request = kvp.decode_request(udp.data)
        assert (request.request_id, request.opaque, request.opcode, request.key) == (
            i, i, op.opcode, op.key)
        if op.opcode == kvp.SET:
            assert (request.value, request.flags, request.expiration) == (op.value, op.flags, 0)
        else:
            assert (request.value, request.extras) == (b"", b"")
    assert sum(kvp.decode_request(dpkt.ethernet.Ethernet(f).data.data.data).opcode == kvp.SET
               for _, f in frames[:300]) == 300
    defaults = tmp_path / "defaults.pcap"
    assert load.write_pcap(load.Workload(keys=10, preload=False), defaults, requests=5) == 5
    with open(defaults, "rb") as f:
        _, frame = next(iter(dpkt.pcap.Reader(f)))
    eth = dpkt.ethernet.Ethernet(frame)
    assert (socket.inet_ntoa(eth.data.src), socket.inet_ntoa(eth.data.dst),
            eth.data.data.dport) == ("10.0.0.2", "10.0.0.1", 11211)


# -- the command line -------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    ([], "one of the arguments --pcap --server --servers is required"),
    (["--server", "localhost:0"], "the port must be"),
    (["--server", "a:1,b:2"], "use --servers"),
    (["--servers", "a:1,a:1", "--keys", "5"], "listed twice"),
    (["--pcap", "x.pcap", "--server", "a:1"], "not allowed with"),
    (["--pcap", "x.pcap", "--keys", "0"], "--keys: 0 is not an integer >= 1"),
    (["--pcap", "x.pcap", "--keys", "1000", "--key-size", "2"], "key size must be from 3"),
    (["--pcap", "x.pcap", "--get-fraction", "1.5"], "--get-fraction"),
    (["--pcap", "x.pcap", "--timeout", "nan"], "--timeout"),
    (["--pcap", "x.pcap", "--duration", "1"], "--duration is for a live run"),
    (["--pcap", "x.pcap", "--src-ip", "300.1.1.1"], "not an IPv4 address"),
    (["--pcap", "/nonexistent/dir/x.pcap", "--keys", "5"], "cannot write"),
    (["--server", "no-such-host.invalid:11211", "--keys", "5"], "cannot resolve"),
])
def test_cli_errors(tmp_path, args: list[str], message: str) -> None:
    result = subprocess.run([sys.executable, LOAD, *args], capture_output=True, text=True,
                            timeout=60, cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "x.pcap").exists()


def test_cli_help() -> None:
    result = run_cli("--help")
    assert result.returncode == 0 and "--allow-misses" in result.stdout
