"""benchmarks/kvs/vs_memcached.py's DPDK client, benchmarks/kvs/dpdk_blast.c, against the
key-value store's ``cpu`` design over a net_memif pair between two processes, as the
benchmark runs them (its own functions start both): every request it counts as answered
had a valid reply (dpdk_blast exits nonzero on a wrong one), the store counted what the
client sent and had answered, every GET of a preloaded key hit and every GET of a key never
set missed, on both sides' counts, and an open loop at a low rate had every request answered;
and where the benchmark pins servers and clients.
"""
from __future__ import annotations

import os
import re
import sys

import pytest

from conftest import ROOT, floem_command
from test_echo import needs_dpdk

sys.path.insert(0, os.path.join(ROOT, "benchmarks", "kvs"))
import vs_memcached as bench  # noqa: E402
from vs_memcached import load  # noqa: E402  (examples/kvs/load.py)


def store_counts(stderr: str) -> dict[str, int]:
    """The store's ``floem: state counts (Counts): cmd_get N, ...`` report line."""
    line = next(ln for ln in stderr.splitlines() if ln.startswith("floem: state counts"))
    return {name: int(n) for name, n in re.findall(r"(\w+) (\d+)", line.split(": ", 2)[2])}


@needs_dpdk
@pytest.mark.slow
def test_dpdk_blast_is_answered_and_counted_alike_by_the_store(tmp_path) -> None:
    exe, preload = str(tmp_path / "dpdk_blast"), str(tmp_path / "preload")
    mix, misses = str(tmp_path / "mix"), str(tmp_path / "misses")
    bench.build_dpdk_blast(exe)
    workload = load.Workload(keys=2000)
    bench.write_templates(preload, workload.preload_operations())
    bench.write_templates(mix, workload.operations(20_000))
    # keys of another size: never set, so every GET misses
    bench.write_templates(misses, load.Workload(keys=500, key_size=40, get_fraction=1.0,
                                                preload=False).operations(500))
    at = str(bench.OPAQUE_AT)
    with bench.dpdk_server(floem_command(), exe, preload, str(tmp_path)) as (store, _):
        runs = [bench.run_dpdk_blast(exe, store, "throughput", mix, at, "1.5", "256"),
                bench.run_dpdk_blast(exe, store, "latency", mix, at, "1", "2000"),
                bench.run_dpdk_blast(exe, store, "throughput", misses, at, "0.5", "64")]
    throughput, latency, missing = runs
    runs.append(store.preload)
    assert throughput["answered"] > 10_000 and throughput["misses"] == 0, throughput
    assert latency["sent"] >= 1000 and latency["answered"] == latency["sent"], latency
    assert latency["misses"] == 0 and 0 < latency["p50_us"] <= latency["p99_us"], latency
    assert missing["answered"] > 0 and missing["misses"] == missing["answered"], missing
    assert all(r["wrong"] == 0 and r["answered"] + r["lost"] == r["sent"] for r in runs), runs
    counts = store_counts(store.stderr)
    assert store.preload["answered"] == workload.keys, store.preload
    # exact when nothing was lost (the NOOPs each run starts with are cmd_other)
    sent, answered = sum(r["sent"] for r in runs), sum(r["answered"] for r in runs)
    assert answered <= counts["cmd_get"] + counts["cmd_set"] <= sent, (counts, runs)
    assert missing["misses"] <= counts["get_misses"] <= missing["sent"], (counts, missing)
    assert counts["get_hits"] + counts["get_misses"] == counts["cmd_get"], counts


def test_a_server_is_pinned_only_when_a_cpu_is_left_to_its_clients() -> None:
    assert str(bench.pinning(1, [1, 0])) == "0 / 1"
    assert bench.pinning(2, [0, 1, 2, 3]) == bench.Pinning((0, 1), (2, 3))
    assert bench.pinning(2, [0, 1]) == bench.Pinning() and str(bench.Pinning()) == "not pinned"
    assert bench.taskset((0, 1)) == ["taskset", "-c", "0,1"] and bench.taskset(None) == []
    before = os.sched_getaffinity(0)
    with bench.pinned([min(before)]):
        assert os.sched_getaffinity(0) == {min(before)}
    assert os.sched_getaffinity(0) == before


@pytest.mark.slow
def test_tcp_clients_measure_the_store_over_tcp() -> None:
    """The benchmark's TCP server and clients (memcaslap over 16 and over 1,000 connections,
    memcslap: its keys set, then each got by each of its two threads): each has requests
    answered by the store over TCP."""
    with bench.server(bench.TCP[1], floem_command()[0]) as (port, pid):
        assert pid > 0
        assert bench.run_memcaslap(port, 1, tcp=True) > 1000
        assert bench.run_memcaslap(port, 1, tcp=True, connections=1000) > 1000
        got, extra = bench.run_memcslap(port)
        assert got == 10_000 + 20_000 and extra["seconds"] > 0  # set, then got by both threads
