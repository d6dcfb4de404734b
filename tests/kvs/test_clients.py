"""A packaged memcached client against the key-value store: ``memcaslap`` (Debian's
``libmemcached-tools``) drives each design over UDP in the text protocol, verifying what
it reads, alone and spreading its keys over three servers by its own hashing; what it
counts must be what the servers counted.
"""
from __future__ import annotations

import contextlib
import re
import shutil
import subprocess

import pytest

from kvs_server import DESIGNS, kvs_server

MEMCASLAP = shutil.which("memcaslap")
assert MEMCASLAP, "install libmemcached-tools (scripts/setup.sh does)"


def memcaslap(ports: list[int], seconds: int = 2) -> dict[str, int]:
    """Run memcaslap over UDP against ``ports`` of 127.0.0.1 (90% get, 10% set, 64-byte
    values, every get verified) and return its totals (``cmd_get``, ``get_misses``,
    ``verify_failed``, ``udp_timeout``, ...)."""
    servers = ",".join(f"127.0.0.1:{p}" for p in ports)
    done = subprocess.run([MEMCASLAP, "-s", servers, "-U", "-t", f"{seconds}s",
                           "-T", str(len(ports) + 1), "-c", str(2 * (len(ports) + 1)),
                           "-X", "64", "-v", "1"],
                          capture_output=True, text=True, timeout=seconds + 60)
    assert done.returncode == 0, done.stdout + done.stderr
    totals = {name: int(n) for name, n in re.findall(r"^(\w+): (\d+)$", done.stdout, re.M)}
    assert "cmd_get" in totals, done.stdout
    return totals


def assert_counted_alike(client: dict[str, int], servers: list[dict[str, int]]) -> None:
    """The servers answered every get and set memcaslap sent, with no error: at most a
    few fewer, those it counts as timed out (lost on the way) and those still in flight
    when it stopped (one per concurrent client)."""
    assert client["verify_failed"] == 0 and client["packet_disorder"] == 0, client
    assert client["cmd_get"] > 0 and client["cmd_set"] > 0, client
    lost = client["udp_timeout"] + client["packet_drop"] + client["concurrency"]
    for name in ("cmd_get", "cmd_set"):
        served = sum(s[name] for s in servers)
        assert client[name] - lost <= served <= client[name], (name, client, servers)
    assert sum(s["get_misses"] for s in servers) <= client["get_misses"] + lost


@pytest.mark.parametrize("design", ["cpu", "split", "cache-wt", "cache-wb", "external"])
def test_memcaslap_verifies_every_design(design: str) -> None:
    with kvs_server(*DESIGNS[design]) as server:
        client = memcaslap([server.port])
    assert_counted_alike(client, [server.report("state counts")])


def test_memcaslap_spreads_keys_over_three_servers() -> None:
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(kvs_server(*DESIGNS["cpu"])) for _ in range(3)]
        client = memcaslap([s.port for s in servers])
    counts = [s.report("state counts") for s in servers]
    assert all(c["cmd_get"] > 0 and c["cmd_set"] > 0 for c in counts), counts
    assert_counted_alike(client, counts)
