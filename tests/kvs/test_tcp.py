"""The key-value store over TCP (``--net tcp``), in every design, against memcached 1.6.

Each design serves a free TCP port beside a memcached serving one (``-p PORT``), and both
get the same requests on a text and a binary connection each: the randomized sequence of
the UDP oracle (tests/kvs/kvs_server.py), every request answered byte for byte like
memcached, CAS values included, and a connection memcached closes (after a binary request
whose lengths are wrong) closed by the store too; the get whose keys take different paths,
answered in the order of its keys; the binary opcodes only a stream client sends (quiet
requests, INCREMENT and DECREMENT creating a key, APPEND, PREPEND, TOUCH, GAT, FLUSH,
VERSION, QUIT, STAT); ``stats``. Bad input is answered or closed as memcached answers or
closes it, and the other connections go on.

Real clients on every design: memccapable's conformance suite (text and binary), memcaslap
verifying what it reads (text and binary), memcslap's loads, pymemcache and python-memcached;
pymemcache's HashClient over three stores; twemproxy (nutcracker) in front of three stores.

A design is built and started once for the module (`stores`); the cpu design's oracle,
stats and bad input run in the default suite, the other designs and the clients are slow.
"""
from __future__ import annotations

import contextlib
import os
import random
import re
import socket
import struct
import subprocess
import time
from collections.abc import Iterator

import memcache
import pytest
from pymemcache.client.base import Client as PymemcacheClient
from pymemcache.client.hash import HashClient

from conftest import wait_until
from kvs_server import (DESIGNS, Server, kvs_server, oracle_requests, ordering_requests)
from streams import StreamClient, binary_message, connects, free_tcp_port, memcached_tcp

import protocol as kvp

#: The designs over TCP: those of the UDP oracle (cache-wb's tiny cache evicting all along).
TCP_DESIGNS = {name: DESIGNS[name] for name in
               ("cpu", "split", "cache-wt", "cache-wb", "split-pointer")}
#: The cpu design in the default suite, the others slow.
DESIGN_PARAMS = [pytest.param(d, marks=() if d == "cpu" else pytest.mark.slow)
                 for d in TCP_DESIGNS]


@pytest.fixture(scope="module")
def stores() -> Iterator[dict[str, Server]]:
    """Each design's store over TCP, started the first time a test asks for it, stopped at
    the end of the module (`started`)."""
    with contextlib.ExitStack() as stack:
        running: dict[str, Server] = {}
        stack.callback(lambda: None)
        yield _Started(running, stack)


class _Started(dict):
    """Stores started on demand: ``stores[design]``."""

    def __init__(self, running: dict[str, Server], stack: contextlib.ExitStack) -> None:
        super().__init__(running)
        self.stack = stack

    def __missing__(self, name: str) -> Server:
        """``name`` is a design, or DESIGN#N: another store of that design."""
        design = name.split("#")[0]
        server = self.stack.enter_context(kvs_server(*TCP_DESIGNS[design], net="tcp"))
        self[name] = server
        return server


@pytest.fixture(scope="module")
def oracle() -> Iterator[int]:
    """A memcached serving TCP, for the module."""
    with memcached_tcp() as port:
        yield port


def compare_text(mc: StreamClient, kvs: StreamClient, request: bytes, what: str) -> None:
    """``request`` answered alike (the bytes, and a close)."""
    expected, got = mc.ask_text(request), kvs.ask_text(request)
    assert got == expected, f"{what}: {request!r}\nmemcached: {expected!r}\nkvs:       {got!r}"


def compare_binary(mc: StreamClient, kvs: StreamClient, message: bytes, what: str) -> None:
    """Binary ``message`` answered alike (the responses, and a close)."""
    expected, got = mc.ask_binary(message), kvs.ask_binary(message)
    assert got == expected, f"{what}: {message!r}\nmemcached: {expected!r}\nkvs:       {got!r}"


def binary(opcode: int, key: bytes = b"", value: bytes = b"", extras: bytes = b"",
           opaque: int = 0, cas: int = 0) -> bytes:
    """A binary request message."""
    return binary_message(kvp.encode_request(0, opcode, key=key, value=value, extras=extras,
                                             opaque=opaque, cas=cas))


def stream_only_binary(rng: random.Random) -> list[bytes]:
    """Binary requests the UDP oracle does not send, each opcode memcached knows, quiet or
    not, on a few keys: their answers (or silence) and what they do to the keys."""
    keys = [b"bin:a", b"bin:n", b"bin:gone"]
    delta = struct.Struct(">QQI")
    out = [binary(0x01, b"bin:a", b"alpha", struct.pack(">II", 5, 0)),
           binary(0x11, b"bin:n", b"10", struct.pack(">II", 0, 0))]            # SETQ
    for _ in range(60):
        key = rng.choice(keys)
        op = rng.choice([0x00, 0x09, 0x0C, 0x0D, 0x02, 0x12, 0x03, 0x13, 0x04, 0x14, 0x05,
                         0x15, 0x06, 0x16, 0x0E, 0x19, 0x0F, 0x1A, 0x1C, 0x1D, 0x1E, 0x23,
                         0x24, 0x0B, 0x0A, 0x01, 0x11])
        opaque = rng.getrandbits(32)
        if op in (0x05, 0x15, 0x06, 0x16):
            expiry = rng.choice([0, 0xFFFFFFFF])
            extras = delta.pack(rng.choice([1, 5, 2 ** 64 - 1]), rng.choice([0, 3]), expiry)
            out.append(binary(op, key, extras=extras, opaque=opaque))
        elif op in (0x1C, 0x1D, 0x1E, 0x23, 0x24):
            out.append(binary(op, key, extras=struct.pack(">I", rng.choice([0, 1000])),
                              opaque=opaque))
        elif op in (0x02, 0x12, 0x03, 0x13, 0x01, 0x11):
            out.append(binary(op, key, rng.choice([b"v", b"12", b""]),
                              struct.pack(">II", rng.getrandbits(32), 0), opaque=opaque))
        elif op in (0x0E, 0x19, 0x0F, 0x1A):
            out.append(binary(op, key, rng.choice([b"+", b"7"]), opaque=opaque))
        elif op in (0x0B, 0x0A):
            out.append(binary(op, opaque=opaque))
        else:
            out.append(binary(op, key, opaque=opaque))
    out += [binary(0x18, extras=struct.pack(">I", 0)), binary(0x00, b"bin:a"),      # FLUSHQ
            binary(0x08), binary(0x10, b"bogus"), binary(0x17)]                      # QUITQ
    return out


def check_like_memcached(port: int, oracle_port: int, updates: bool) -> None:
    """The UDP oracle's randomized requests, the ordered gets and the stream-only binary
    requests, on a text and a binary connection to each, answered alike."""
    mc_text, mc_bin = StreamClient(oracle_port), StreamClient(oracle_port)
    kvs_text, kvs_bin = StreamClient(port), StreamClient(port)
    requests = oracle_requests(seed=41, count=300, updates=updates) + ordering_requests(9000,
                                                                                        updates)
    for i, datagram in enumerate(requests):
        message = binary_message(datagram)
        if message[:1] == bytes([kvp.MAGIC_REQUEST]):
            compare_binary(mc_bin, kvs_bin, message, f"request {i}")
        else:
            compare_text(mc_text, kvs_text, message, f"request {i}")
    if updates:
        for i, message in enumerate(stream_only_binary(random.Random(5))):
            compare_binary(mc_bin, kvs_bin, message, f"binary request {i}")
    for c in (mc_text, mc_bin, kvs_text, kvs_bin):
        c.close()


@pytest.mark.parametrize("design", DESIGN_PARAMS)
def test_every_design_answers_like_memcached_over_tcp(design: str, stores) -> None:
    """The first test of each design's store: its CAS values count from a fresh memcached's."""
    with memcached_tcp() as fresh:
        check_like_memcached(stores[design].port, fresh, updates=design != "split-pointer")


def stats_of(port: int, binary_protocol: bool = False) -> dict[str, str]:
    """``stats`` of the server on ``port``, by name."""
    client = StreamClient(port)
    if binary_protocol:
        responses, _ = client.ask_binary(binary(0x10))
        client.close()
        assert responses[-1][2:4] == b"\0\0" and len(responses[-1]) == kvp.HEADER_SIZE
        stats = {}
        for r in responses[:-1]:
            keylen = struct.unpack_from(">H", r, 2)[0]
            stats[r[24:24 + keylen].decode()] = r[24 + keylen:].decode()
        return stats
    # No mark after it: the store may take a request pipelined behind stats (the mark, a
    # get) before it answers stats, whose counts would then hold it or not.
    answer = client.ask_text_until(b"stats\r\n", b"END\r\n")
    client.close()
    lines = answer.decode().split("\r\n")
    assert lines[-2:] == ["END", ""], answer
    return {name: value for _, name, value in (line.split(" ", 2) for line in lines[:-2])}


GENERAL_STATS = ("pid", "uptime", "time", "version", "curr_connections", "total_connections",
                 "cmd_get", "cmd_set", "get_hits", "get_misses", "curr_items", "total_items",
                 "bytes", "evictions", "limit_maxbytes", "bytes_read", "bytes_written")


@pytest.mark.parametrize("design", DESIGN_PARAMS)
def test_stats_count_what_the_store_served(design: str, stores) -> None:
    """stats (text and binary) names memcached's general statistics, counting the gets and
    sets of a fresh connection; a statistics group the store does not keep (and "stats
    noreply") is answered ERROR, as memcached answers an unknown one."""
    port = stores[design].port
    before = stats_of(port)
    client = StreamClient(port)
    for i in range(5):
        assert client.ask_text(b"set stats:%d 0 0 1\r\nx\r\n" % i) == (b"STORED\r\n", False)
    assert client.ask_text(b"get stats:0 stats:1 stats:none\r\n")[0].count(b"VALUE") == 2
    after = stats_of(port)
    store_figures = {"curr_items", "total_items", "bytes", "evictions", "limit_maxbytes"}
    assert set(GENERAL_STATS) - (store_figures if design == "split-pointer" else set()) \
        <= set(after)
    marks = 6                       # the mg each of the six asks ends with (a miss)
    assert int(after["cmd_set"]) - int(before["cmd_set"]) == 5
    assert int(after["cmd_get"]) - int(before["cmd_get"]) == 3 + marks
    assert int(after["get_hits"]) - int(before["get_hits"]) == 2
    assert int(after["get_misses"]) - int(before["get_misses"]) == 1 + marks
    assert int(after["curr_connections"]) >= 2 and after["version"] == "1.6.18"
    if design not in ("split-pointer", "cache-wb"):     # cache-wb: the sets still on the NIC
        assert int(after["curr_items"]) >= 5
    assert stats_of(port, binary_protocol=True)["cmd_set"] == after["cmd_set"]
    assert client.ask_text(b"stats items\r\n") == (b"ERROR\r\n", False)
    assert client.ask_text(b"stats noreply\r\n") == (b"ERROR\r\n", False)
    client.close()


@pytest.mark.parametrize("design", DESIGN_PARAMS)
def test_bad_input_is_answered_or_closed_like_memcached(design: str, stores, oracle) -> None:
    """A text line of more than 2,048 bytes without "\\n" closes the connection (a get that
    long is served), a data block not ending in "\\r\\n" is "CLIENT_ERROR bad data chunk"
    and the bytes after it a command of their own, a binary header with a bad magic closes
    the connection, quit closes it after the answers before it; meanwhile another connection
    is served throughout."""
    port = stores[design].port
    bystander = StreamClient(port)
    cases = [
        (b"set k 0 0 3\r\nabcde\r\nget k\r\n", False),
        (b"x" * 3000, True),
        (b"get " + b" ".join(b"long:%d" % i for i in range(500)) + b"\r\n", False),
        (b"set k 0 0 1\r\nab\r\n", False),
        (b"get k\r\nquit\r\nget k\r\n", True),
    ]
    for request, closes in cases:
        mc, kvs = StreamClient(oracle), StreamClient(port)
        mc.sock.sendall(request)
        kvs.sock.sendall(request)
        expected, got = _until_quiet(mc), _until_quiet(kvs)
        assert got == expected, f"{request[:80]!r}...\nmemcached: {expected}\nkvs:       {got}"
        assert expected[1] == closes
        assert bystander.ask_text(b"version\r\n") == (b"VERSION 1.6.18\r\n", False)
        mc.close()
        kvs.close()
    for magic in (0x81, 0x00):
        mc, kvs = StreamClient(oracle), StreamClient(port)
        good = binary(0x0A)
        for c in (mc, kvs):
            c.sock.sendall(good + bytes([magic]) + good[1:])
        assert _until_quiet(kvs) == _until_quiet(mc)
        assert bystander.ask_text(b"version\r\n") == (b"VERSION 1.6.18\r\n", False)
    bystander.close()


def _until_quiet(client: StreamClient, wait: float = 0.5) -> tuple[bytes, bool]:
    """What the server sends until it is quiet for ``wait`` seconds, and whether it closed."""
    data = b""
    client.sock.settimeout(wait)
    while True:
        try:
            chunk = client.sock.recv(65536)
        except TimeoutError:
            return data, False
        except ConnectionResetError:
            return data, True
        if not chunk:
            return data, True
        data += chunk


def test_connections_reset_mid_request_leave_the_others_served(stores) -> None:
    """Connections closed or reset in the middle of a request, in the middle of a data block
    and of a binary body, before their answers: the store answers the others throughout."""
    port = stores["cpu"].port
    steady = StreamClient(port)
    for i, part in enumerate([b"set half 0 0 10\r\nabc", b"get unfinished", binary(0x01,
                              b"k", b"v" * 100, bytes(8))[:40], b"get k\r\n" * 200]):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(part)
        if i % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        assert steady.ask_text(b"set steady 0 0 1\r\n%d\r\n" % i) == (b"STORED\r\n", False)
    time.sleep(0.5)
    assert int(stats_of(port)["curr_connections"]) == 2       # steady's and stats's own
    steady.close()


# -- real clients ------------------------------------------------------------------------------

def run_tool(*command: str, timeout: float = 120, check: bool = True) -> str:
    """Run one of libmemcached-tools' programs; its output (it must succeed, with
    ``check``)."""
    done = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0 or not check, \
        " ".join(command) + "\n" + done.stdout + done.stderr
    return done.stdout + done.stderr


def memccapable(port: int, protocol: str) -> dict[str, bool]:
    """Whether each test of memccapable's conformance suite passed on ``port`` (``-a``: text,
    ``-b``: binary). Its names go to stdout, each followed by "[pass]" or, for a failure, by
    nothing there (its "[FAIL]" goes to stderr); its closing line must agree."""
    out = run_tool("memccapable", "-h", "127.0.0.1", "-p", str(port), "-t", "30", protocol,
                   check=False)
    tests = dict(re.findall(r"\b((?:ascii|binary) \w+(?: noreply)?) *(\[pass\])?", out))
    closing = re.search(r"^(\d+) of (\d+) tests failed$", out, re.M)
    assert tests and (sum(not p for p in tests.values()), len(tests)) == (
        (int(closing[1]), int(closing[2])) if closing else (0, len(tests))), out
    return {name: bool(passed) for name, passed in tests.items()}


def memcaslap_tcp(ports: list[int], binary_protocol: bool, seconds: int = 2) -> dict[str, int]:
    """memcaslap over TCP against ``ports`` (90% get, 10% set, every get verified), in the
    text or the binary protocol: its totals."""
    servers = ",".join(f"127.0.0.1:{p}" for p in ports)
    out = run_tool("memcaslap", "-s", servers, "-t", f"{seconds}s", "-T", "2", "-c", "8",
                   "-X", "64", "-v", "1", *(["-B"] if binary_protocol else []),
                   timeout=seconds + 60)
    totals = {name: int(n) for name, n in re.findall(r"^(\w+): (\d+)$", out, re.M)}
    assert totals.get("cmd_get", 0) > 0 and totals.get("cmd_set", 0) > 0, out
    assert totals["verify_failed"] == 0, out
    return totals


def pymemcache_session(port: int, in_place: bool = True) -> None:
    """pymemcache's plain client, every call a user makes, read back (with ``in_place``
    False, none of the updates split-pointer answers "not supported": docs/kvs.md)."""
    client = PymemcacheClient(("127.0.0.1", port), default_noreply=False, timeout=10)
    values = {f"pm:{i}": bytes([i % 251]) * n for i, n in enumerate([0, 1, 64, 1000, 8000])}
    for key, value in values.items():
        assert client.set(key, value, flags=7)
    assert client.get_many(list(values) + ["pm:none"]) == values
    if in_place:
        assert client.add("pm:0", b"x") is False and client.replace("pm:none", b"x") is False
        assert client.append("pm:1", b"+") and client.prepend("pm:1", b"-")
        assert client.get("pm:1") == b"-" + values["pm:1"] + b"+"
        assert client.set("pm:n", b"41") and client.incr("pm:n", 1) == 42
        assert client.decr("pm:n", 50) == 0 and client.incr("pm:none", 1) is None
        value, cas = client.gets("pm:2")
        assert value == values["pm:2"] and client.cas("pm:2", b"new", cas)
        assert client.cas("pm:2", b"stale", cas) is False and client.get("pm:2") == b"new"
        assert client.touch("pm:3", 100)
    assert client.delete("pm:3")
    assert client.get("pm:3") is None and client.delete("pm:3") is False
    stats = client.stats()
    assert int(stats[b"cmd_get"]) > 0 and stats[b"version"] == b"1.6.18"
    assert client.version() == b"1.6.18"
    client.close()


def python_memcached_session(port: int, in_place: bool = True) -> None:
    """python-memcached's client (the text protocol), every call read back (with
    ``in_place`` False, none of the updates split-pointer answers "not supported")."""
    client = memcache.Client([f"127.0.0.1:{port}"], cache_cas=True)
    data = {f"py:{i}": "v" * n for i, n in enumerate([1, 64, 1000, 8000])}
    assert client.set_multi(data) == []
    assert client.get_multi(list(data) + ["py:none"]) == data
    if in_place:
        assert client.add("py:0", "x") == 0 and client.replace("py:none", "x") == 0
        assert client.append("py:1", "+") and client.get("py:1") == data["py:1"] + "+"
        assert client.set("py:n", 5) and client.incr("py:n", 2) == 7
        assert client.decr("py:n") == 6
        assert client.gets("py:2") == data["py:2"] and client.cas("py:2", "swapped")
        assert client.get("py:2") == "swapped"
    assert client.delete("py:3") and client.get("py:3") is None
    [(_, stats)] = client.get_stats()
    assert int(stats["curr_connections"]) >= 1
    client.disconnect_all()


def serve_real_clients(port: int, design: str, seconds: int = 2) -> None:
    """memccapable's suites (text and binary: every test passes; not on split-pointer, whose
    "not supported" answers fail the suite's tests of those commands and upset the tests
    after them), memcaslap verifying what it reads in both protocols for ``seconds``,
    pymemcache and python-memcached (on split-pointer, only the commands it supports),
    against ``port``."""
    in_place = design != "split-pointer"
    for protocol in ("-a", "-b") if in_place else ():
        results = memccapable(port, protocol)
        assert all(results.values()), \
            f"memccapable {protocol}: {sorted(t for t, ok in results.items() if not ok)} failed"
    for binary_protocol in (False, True):
        memcaslap_tcp([port], binary_protocol, seconds)
    pymemcache_session(port, in_place)
    python_memcached_session(port, in_place)


@pytest.mark.slow
@pytest.mark.parametrize("design", TCP_DESIGNS)
def test_real_clients_over_tcp(design: str, stores) -> None:
    """memccapable's conformance suite in both protocols, memcaslap verifying what it reads
    in both, memcslap's loads in both, pymemcache and python-memcached: all on one store."""
    port = stores[design].port
    serve_real_clients(port, design)
    for test in ("set", "get", "mget"):
        for binary_protocol in ([], ["-b"]):
            out = run_tool("memcslap", "-s", f"127.0.0.1:{port}", "-t", test, "-e", "500",
                           "-c", "2", *binary_protocol)
            assert "error" not in out.lower(), out


#: Build flags of a store checked by AddressSanitizer, LeakSanitizer (at exit) and UBSan.
SANITIZERS = "-fsanitize=address,undefined -fno-sanitize-recover=all"


def test_clients_leave_a_sanitized_store_clean() -> None:
    """Built with sanitizers, the store serves memccapable's suites (text and binary),
    memcaslap verifying what it reads (both protocols), pymemcache and python-memcached,
    and is sent a line too long, a bad magic and connections reset mid-request: no
    sanitizer reports anything, and the store exits cleanly with nothing leaked."""
    env = {"FLOEM_CFLAGS": f"{os.environ['FLOEM_CFLAGS']} {SANITIZERS}"}
    with kvs_server(*TCP_DESIGNS["cpu"], net="tcp", env=env) as server:
        port = server.port
        serve_real_clients(port, "cpu", seconds=1)
        for bad in (b"x" * 3000, bytes([0x00]) + binary(0x0A)[1:], b"set k 0 0 9\r\nab",
                    binary(0x01, b"k", b"v" * 100, bytes(8))[:40]):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(bad)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        after = StreamClient(port)
        assert after.ask_text(b"version\r\n") == (b"VERSION 1.6.18\r\n", False)
        after.close()
    assert server.proc.returncode == 0, server.stderr
    assert "Sanitizer" not in server.stderr and "runtime error" not in server.stderr, \
        server.stderr


@pytest.mark.slow
def test_hash_client_spreads_keys_over_three_stores(stores) -> None:
    """pymemcache's HashClient over three stores: every value read back, keys on all three."""
    ports = [stores[name].port for name in ("cpu", "cpu#2", "cpu#3")]
    client = HashClient([("127.0.0.1", p) for p in ports], default_noreply=False)
    values = {f"hash:{i}": b"%d" % i * 10 for i in range(300)}
    client.set_many(values)
    assert client.get_many(list(values)) == values
    for key, value in list(values.items())[:30]:
        assert client.get(key) == value
    items = [int(stats_of(p)["curr_items"]) for p in ports]
    assert all(n > 30 for n in items) and sum(items) >= 300, items


#: twemproxy's configuration of one pool of three stores, keys spread by ketama hashing:
#: what docs/kvs.md ("Several servers") shows.
NUTCRACKER_CONF = """kvs:
  listen: 127.0.0.1:{listen}
  hash: fnv1a_64
  distribution: ketama
  timeout: 2000
  server_retry_timeout: 2000
  server_failure_limit: 3
  auto_eject_hosts: false
  servers:
{servers}
"""


@contextlib.contextmanager
def nutcracker(ports: list[int], tmp_path) -> Iterator[int]:
    """twemproxy (Debian's nutcracker) in front of the stores on ``ports``: its port."""
    listen, stats = free_tcp_port(), free_tcp_port()
    conf = tmp_path / "nutcracker.yml"
    conf.write_text(NUTCRACKER_CONF.format(listen=listen, servers="\n".join(
        f"   - 127.0.0.1:{p}:1 store{i}" for i, p in enumerate(ports))))
    proc = subprocess.Popen(["nutcracker", "-c", str(conf), "-s", str(stats), "-a", "127.0.0.1",
                             "-o", str(tmp_path / "nutcracker.log"),
                             "-p", str(tmp_path / "nutcracker.pid")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: connects(listen), "nutcracker listens", proc, timeout=30)
        yield listen
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_twemproxy_in_front_of_three_stores(stores, tmp_path) -> None:
    """Three stores behind twemproxy with ketama hashing, driven through the proxy by
    pymemcache: every value read back (single gets and multi-key gets the proxy splits by
    store), deletes and counters through it too, and the keys spread over all three."""
    ports = [stores[name].port for name in ("cpu", "cpu#2", "cpu#3")]
    before = [int(stats_of(p)["curr_items"]) for p in ports]
    with nutcracker(ports, tmp_path) as proxy:
        client = PymemcacheClient(("127.0.0.1", proxy), default_noreply=False, timeout=10)
        values = {f"proxy:{i}": b"v%d" % i * (i % 50) for i in range(600)}
        for key, value in values.items():
            assert client.set(key, value)
        for key, value in values.items():
            assert client.get(key) == value
        keys = list(values)
        for at in range(0, len(keys), 40):
            chunk = keys[at:at + 40]
            assert client.get_many(chunk) == {k: values[k] for k in chunk}
        assert client.delete("proxy:0") and client.get("proxy:0") is None
        assert client.set("proxy:n", b"9") and client.incr("proxy:n", 1) == 10
        client.close()
    added = [int(stats_of(p)["curr_items"]) - b for p, b in zip(ports, before)]
    assert sum(added) == 600 and all(n > 50 for n in added), added      # ketama: uneven
