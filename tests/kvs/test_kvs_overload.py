"""Overload: the key-value store driven above its capacity for a bounded time, then used
normally (the echo's twin is tests/test_overload.py).

A C load generator (``runtime/tests/udp_blast.c`` in template mode) sends GETs and SETs
over a few keys from several sockets as fast as it can for a few seconds, every request
numbered in its opaque field, and keeps whatever comes back. SET values name their key and
a version, so a GET's value says which SET it comes from.
Asserted, on the CPU design and the split design (parsing and steering on the emulated NIC):

* every response answers a request its client sent, once, with the request's opcode;
* every SET is answered "stored"; every GET value is one a SET of that key wrote (a store
  that handed out the wrong key's value, or a torn one, fails here), or a miss;
* the store was above capacity (its socket dropped requests; the process reading it is
  stopped for half a second of the blast, as a host falling behind), and every request is
  accounted for: sent = received by the store + dropped at its socket (its report), short
  by at most the machine's input-backlog drops (/proc/net/softnet_stat);
* its resident memory stays within a bound while it is overloaded;
* afterwards, SETs and GETs sent one at a time are all answered exactly (it recovered).

Marked slow: a few seconds of overload per design, after the build.
"""
from __future__ import annotations

import re
import struct

import pytest

import test_overload as overload
from kvs_server import DESIGNS, Client, kvs_server
from test_faults import child_named
from test_kvs import kvp
from test_overload import RSS_BOUND_KIB, SOCKETS, backlog_drops, rss_kib

KEYS = 64
#: Where the opaque field is in a request datagram: the 8-byte UDP frame header, then the
#: binary header's opaque at offset 12.
OPAQUE_AT = 8 + 12
NAMED = re.compile(rb"key (\d{3}) version (\d{3}) ")


def value_of(key: int, version: int) -> bytes:
    """The value SET template ``version`` writes into key ``key``: it names both."""
    return b"key %03d version %03d " % (key, version) + bytes(40)


def templates() -> list[tuple[int, int, int]]:
    """The requests sent round robin: (opcode, key, version); one SET in ten."""
    return [(kvp.Opcode.SET if t % 10 == 0 else kvp.Opcode.GET, (t * 7) % KEYS, t)
            for t in range(10 * KEYS)]


def write_templates(path: str) -> None:
    with open(path, "wb") as f:
        for opcode, key, version in templates():
            name = b"k%03d" % key
            datagram = (kvp.encode_set(0, name, value_of(key, version)) if opcode == kvp.Opcode.SET
                        else kvp.encode_get(0, name))
            f.write(struct.pack("<H", len(datagram)) + datagram)


def read_replies(path: str) -> list[bytes]:
    with open(path, "rb") as f:
        data = f.read()
    replies, at = [], 0
    while at < len(data):
        (n,) = struct.unpack_from("<I", data, at)
        replies.append(data[at + 4:at + 4 + n])
        at += 4 + n
    return replies


def blast(port: int, pids: list[int],
          tmp_path) -> tuple[list[dict[str, int]], list[list[bytes]], int]:
    """Run the load generator against ``port`` in template mode: its per-socket counts, the
    replies each socket got, and the most resident memory the store's processes had
    meanwhile. The process reading the socket (the last of ``pids``) is stopped for a
    moment, so that the store is above capacity even where the machine slows the generator
    more than the store."""
    requests, replies = str(tmp_path / "requests"), str(tmp_path / "replies")
    write_templates(requests)
    counts, peak = overload.blast(port, pids, tmp_path, requests, str(OPAQUE_AT), replies,
                                  stall=pids[-1])
    return counts, [read_replies(f"{replies}.{s}") for s in range(SOCKETS)], peak


@pytest.mark.slow
@pytest.mark.parametrize("design", ["cpu", "split"])
def test_kvs_above_capacity_answers_right_drops_where_counted_and_recovers(design: str,
                                                                          tmp_path) -> None:
    with kvs_server(*DESIGNS[design]) as server:
        names = ["kvs", "nic"] if design == "split" else ["kvs"]
        pids = [child_named(server.proc.pid, name) for name in names]
        assert None not in pids
        before_rss = sum(rss_kib(p) for p in pids)
        before_backlog = backlog_drops()
        counts, replies, peak_rss = blast(server.port, pids, tmp_path)
        backlog = backlog_drops() - before_backlog

        check = Client(server.port)
        for k in range(20):
            key, value = b"after%02d" % k, b"fresh %d" % k
            assert check.ask(kvp.encode_set(k, key, value)).status == kvp.Status.OK
            answer = check.ask(kvp.encode_get(k, key))
            assert (answer.status, answer.value) == (kvp.Status.OK, value)
        check.close()

    sent = templates()
    versions = {key: {version for opcode, k, version in sent if k == key and opcode == kvp.SET}
                for key in range(KEYS)}
    for s, got in enumerate(replies):
        seen = set()
        for datagram in got:
            response = kvp.decode_response(datagram)
            owner, k = response.opaque >> 24, response.opaque & 0xffffff
            assert owner == s and k < counts[s]["sent"], f"socket {s}: a reply to nothing sent"
            assert k not in seen, f"socket {s}: request {k} answered twice"
            seen.add(k)
            opcode, key, _ = sent[(k * SOCKETS + s) % len(sent)]
            assert response.opcode == opcode
            if opcode == kvp.Opcode.SET:
                assert response.status == kvp.Status.OK
            elif response.status == kvp.Status.OK:
                named = NAMED.match(response.value)
                assert named and int(named[1]) == key, response.value
                assert int(named[2]) in versions[key], response.value
                assert response.value == value_of(key, int(named[2]))
            else:
                assert response.status == kvp.Status.KEY_NOT_FOUND
        assert len(got) == counts[s]["answered"]

    net = server.report("net udp: queues")
    socket_drops = int(next(ln for ln in server.stderr.splitlines()
                            if ln.startswith("floem: net udp: socket drops ")).split()[5])
    assert socket_drops > 0, "the store kept up: not overloaded"
    requests = sum(c["sent"] for c in counts)
    # Every request reached the store or was dropped at its socket: the blast and the 40
    # after it, besides the NOOPs that asked whether it was ready (a few dozen at most).
    reached = net["rx"] + net["rx dropped"] + socket_drops
    assert -backlog <= reached - (requests + 40) <= 100
    assert peak_rss - before_rss < RSS_BOUND_KIB, (before_rss, peak_rss)
