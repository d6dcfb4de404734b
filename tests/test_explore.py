"""`floem explore` and its performance model (floem/explore, floem/platforms/*.toml).

Counting: callgrind's profiles (floem place's) are read exactly (every block of a function,
inlined code included); each thread of the counting plugin's file counts for its segment
or, in a program of the user's, the function it started in, and a segment missing from
the counts, a thread the plugin could not name or a failed plugin are errors; the same
configuration counted twice gives the same counts, on the NIC in its own ISA (MIPS64,
AArch64) too, with several threads the same per packet as with one. The model: platform files load and cite every
figure, each cost follows from the counts and the platform's figures, latency grows with
the offered load. Exploring: the echo on the CPU and the NIC gives the same table twice (up
to a simulated miss or two), with the columns the docs promise; a configuration that does
not build gets a failed row.
"""
from __future__ import annotations

import csv
import dataclasses
import functools
import json
import math
import os
import socket
import subprocess
import sys

import dpkt
import pytest

from conftest import ROOT, floem
from floem.errors import FloemError
from floem.explore.callgrind import read_profile
from floem.explore.counters import Counters, Thread, parse
from floem.explore.latency import Station, latency
from floem.explore.measure import (MANAGERS, Layout, Machine, Measurement, Misses, RunFailed,
                                  SegmentCounts, Tally, Workload, measure, process_counts)
from floem.explore.model import (SECTIONS, WIRE_OVERHEAD_BYTES, full_batches, load_platform,
                                 model_platforms, predict, segment_time)
from floem.explore.sweep import layout

ECHO = os.path.join(ROOT, "examples", "echo", "echo.py")
NAT = os.path.join(ROOT, "examples", "nf", "nat.py")
AES = os.path.join(ROOT, "examples", "nf", "aes.py")
FLOWCLASS = os.path.join(ROOT, "examples", "nf", "flowclass.py")
KVS = os.path.join(ROOT, "examples", "kvs", "kvs.py")


def write_capture(path: str, frames: int, payload: int = 64) -> str:
    """``frames`` Ethernet/IPv4/UDP frames with ``payload`` bytes each."""
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for i in range(frames):
            udp = dpkt.udp.UDP(sport=1000 + i % 7, dport=9000, data=bytes(payload))
            udp.ulen = len(udp)
            ip = dpkt.ip.IP(src=socket.inet_aton("10.0.0.1"), dst=socket.inet_aton("10.0.0.2"),
                            p=17, data=udp)
            ip.len = len(ip)
            writer.writepkt(bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6,
                                                         data=ip)), ts=i * 1e-6)
    return path


# -- reading callgrind's profiles ------------------------------------------------------

PROFILE = """# callgrind format
version: 1
positions: line
events: Ir Ge DLmr

fl=(1) /build/nic.c
fn=(4) start_thread
cfn=(5) run_thread
calls=1 50
9 580 1 5
fn=(5)
cfn=(1) rx_thread
calls=1 50
9 580 1 5
fn=(1) rx_thread
10 100 1 2
+2 50
cfn=(2) parse
calls=40 20
12 400 0 3
fi=(2) /build/runtime.h
30 25
fe=(1)
fn=(2)
20 400 0 3
fl=(1)
fn=(1)
14 5
totals: 580 1 5
"""

def test_a_profile_is_read_exactly_inlined_code_and_calls_included(tmp_path) -> None:
    path = tmp_path / "count.nic"
    path.write_text(PROFILE)
    p = read_profile(str(path))
    assert p.events == ["Ir", "Ge", "DLmr"] and p.totals == [580, 1, 5]
    # its own lines, the call's inclusive cost, the inlined runtime.h line, and a later
    # block of the same function: 100 + 50 + 400 + 25 + 5
    assert p.of("rx_thread", "Ir") == 580 and p.of("rx_thread", "DLmr") == 5
    assert p.of("parse", "Ir") == 400 and p.of("rx_thread", "Ge") == 1
    assert p.of("nothing", "Ir") == 0 and p.of("rx_thread", "ILmr") == 0
    assert p.total("Ge") == 1
    assert p.calls["rx_thread"]["parse"] == [400, 0, 3]


def test_a_file_that_is_not_a_profile_is_an_error(tmp_path) -> None:
    path = tmp_path / "x"
    path.write_text("hello\n")
    with pytest.raises(FloemError, match="not a callgrind profile"):
        read_profile(str(path))


def thread(segment: str, packets: int) -> Thread:
    return Thread(segment, 0, "nic", packets, packets, 0.0)


COUNTS = """events Ir Ge I1mr D1mr I2mr D2mr ILmr DLmr
thread 0 main 0 0 0 0 0 0 0 0
thread 1 rx_thread 580 1 2 3 2 2 1 4
thread 2 rx_thread 580 1 2 3 2 2 1 4
thread 3 worker 300 2 0 0 0 0 0 0
thread 4 worker 0 0 0 0 0 0 0 0
thread 5 worker 200 0 0 0 0 0 0 0
thread 6 device_main 0 0 0 0 0 0 0 0
thread 7 floem_manager_thread 90 1 1 0 1 0 0 0
"""


def test_each_thread_counts_for_its_segment_or_the_function_it_started_in(tmp_path) -> None:
    (tmp_path / "count.app").write_text(COUNTS)
    counts = process_counts(str(tmp_path / "count"), "app", ["rx"],
                            Counters(threads=[thread("rx", 10)]))
    assert counts["rx"] == Tally("app", 2, 1160, 2, 10, 10, 8)
    assert counts["worker[0]"] == Tally("app", 1, 300, 2, 0, 0)     # a thread of the user's
    assert counts["worker[1]"] == Tally("app", 1, 200, 0, 0, 0)     # (one counted nothing)
    assert counts[MANAGERS] == Tally("app", 1, 90, 1, 1, 0, 1)       # the sync layer's rounds
    assert set(counts) == {"rx", "worker[0]", "worker[1]", MANAGERS}


def test_a_segment_missing_from_its_counts_is_an_error(tmp_path) -> None:
    (tmp_path / "count.nic").write_text(COUNTS)
    report = Counters(threads=[thread("rx", 10), thread("tx", 10)])
    with pytest.raises(FloemError, match="miss segment tx .tx_thread., whose threads handled"):
        process_counts(str(tmp_path / "count"), "nic", ["rx", "tx"], report)
    # counting only what runs holding a lock (FLOEM_COUNT=serial), a segment that takes
    # none counts nothing: not an error
    counts = process_counts(str(tmp_path / "count"), "nic", ["rx", "tx"], report, serial=True)
    assert "tx" not in counts and counts["rx"].instructions == 1160


def test_counts_of_an_unnamed_thread_or_a_failed_plugin_are_errors(tmp_path) -> None:
    (tmp_path / "count.nic").write_text(COUNTS.replace("worker 300", "? 300"))
    with pytest.raises(FloemError, match="300 instructions of process nic in a thread it could "
                                         "not name"):
        process_counts(str(tmp_path / "count"), "nic", ["rx"], Counters())
    (tmp_path / "count.nic").write_text("failed more threads than it can count\n" + COUNTS)
    with pytest.raises(FloemError, match="plugin failed .more threads than it can count"):
        process_counts(str(tmp_path / "count"), "nic", ["rx"], Counters())
    (tmp_path / "count.nic").write_text(PROFILE)
    with pytest.raises(FloemError, match="not a file of the counting plugin"):
        process_counts(str(tmp_path / "count"), "nic", ["rx"], Counters())
    with pytest.raises(RunFailed, match="the counting plugin wrote no counts for process host"):
        process_counts(str(tmp_path / "count"), "host", [], Counters())


def test_counters_parse_the_latest_of_each_line() -> None:
    lines = [
        "floem: thread nf[0] (process nic): runs 5, packets 9, busy 100 ns, waited 0 ns, "
        "idle 5 ns, slept 0 ns, cpu 50 ns, wall 100 ns, received 9, sent 9, dma waits 0, "
        "dma bytes 0, engine calls 0, engine bytes 0",
        "floem: thread nf[0] (process nic): runs 10, packets 20, busy 1000 ns, waited 200 ns, "
        "idle 50 ns, slept 0 ns, cpu 400 ns, wall 800 ns, received 20, sent 19, dma waits 3, "
        "dma bytes 192, engine calls 20, engine bytes 20160",
        "floem: thread manager[0] (process nic): runs 0, packets 0, busy 0 ns, waited 0 ns, "
        "idle 0 ns, slept 0 ns, cpu 7 ns, wall 8 ns, received 0, sent 0, dma waits 0, "
        "dma bytes 0, engine calls 0, engine bytes 0",
        "floem: nic sync shadow 0.0: entries 10, read requests 1, write requests 1, "
        "flushes 0, dropped 0, entry bytes 64, moved 400",
        "floem: nic sync shadow 0.1: entries 6, read requests 1, write requests 1, "
        "flushes 0, dropped 0, entry bytes 2112, moved 432",
        "floem: locks (process nic): acquisitions 40",
        "floem: net pcap: queues 1, rx 20, tx 19, rx dropped 0, tx dropped 0, "
        "alloc failed 0, freed 1",
    ]
    c = parse(lines)
    (nf, manager) = sorted(c.threads, key=lambda t: t.segment != "nf")
    assert (nf.runs, nf.packets, nf.on_nic, nf.worker) == (10, 20, True, True)
    assert (nf.received, nf.sent, nf.dma_waits, nf.dma_bytes) == (20, 19, 3, 192)
    assert (nf.engine_calls, nf.engine_bytes) == (20, 20160)
    assert nf.work_ns == pytest.approx((1000 - 200) * 400 / 800)
    assert not manager.worker
    assert c.entries == 16 and c.entry_bytes == 400 + 10 * 4 + 432 + 6 * 4
    assert (c.lock_acquisitions, c.rx, c.tx) == (40, 20, 19)
    later = parse(lines[1:2]).minus(parse(lines[:1]))
    assert (later.threads[0].packets, later.threads[0].received) == (11, 11)


# -- counting, for real ------------------------------------------------------------------

NIC_GEOMETRY = load_platform("liquidio").caches
HOST_GEOMETRY = load_platform("xeon-e5-2680v3", "host").caches


def count(app: str, capture: str, nic_target: str = "emu", **config: str) -> Measurement:
    return measure(app, [f"{k}={v}" for k, v in config.items()], [], Workload.read(capture),
                   layout_of(app, tuple(sorted(config.items()))),
                   [(NIC_GEOMETRY, HOST_GEOMETRY)], nic_target=nic_target)


@functools.lru_cache
def layout_of(app: str, config: tuple[tuple[str, str], ...]) -> Layout:
    """`layout` of ``app`` configured so (it compiles the app: once per configuration)."""
    return layout(app, dict(config))


def nf_capture(path: str, function: str, frames: int, size: int) -> str:
    """examples/nf/load.py's capture of ``frames`` frames of ``size`` bytes for ``function``."""
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "nf", "load.py"), function,
                    "--size", str(size), "--count", str(frames), "--pcap", path], check=True,
                   capture_output=True)
    return path


@pytest.mark.slow
def test_counting_twice_gives_the_same_counts_on_both_sides(tmp_path) -> None:
    """The NAT split between the NIC (packet I/O) and the host (the function): every
    segment in both counts, and the same instructions and atomics per packet: exactly the
    same atomics, and instructions within 0.1% (on a loaded machine two counts of a segment
    have differed by 0.02%, a few dozen instructions in 1,500 packets: paths that depend on
    timing, such as a queue or the pool of kept frames found full, run a little more or
    less)."""
    pcap = str(tmp_path / "nat.pcap")
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "nf", "traffic.py"), "nat",
                    "--pcap", pcap, "--count", "1500", "--size", "64,512"], check=True,
                   capture_output=True)
    first, again = (count(NAT, pcap, device="split") for _ in range(2))
    assert set(first.segments) == set(again.segments) == {"nat_rx", "nat", "nat_tx"}
    for name, s in first.segments.items():
        other = again.segments[name]
        assert s.atomics == other.atomics, name
        assert s.instructions == pytest.approx(other.instructions, rel=1e-3), name
        misses = s.misses[NIC_GEOMETRY if s.on_nic else HOST_GEOMETRY]
        assert s.instructions > 50 and misses.first >= misses.last >= 0
    assert first.segments["nat_rx"].received == 1.0 and first.segments["nat"].on_nic is False
    assert first.machines[""].queue_entries == again.machines[""].queue_entries > 1


@pytest.mark.slow
def test_five_threads_count_what_one_counts_per_packet(tmp_path) -> None:
    pcap = write_capture(str(tmp_path / "w.pcap"), 3000, payload=38)
    one = count(FLOWCLASS, pcap, device="nic", cores="1").segments["flowclass"]
    five = count(FLOWCLASS, pcap, device="nic", cores="5").segments["flowclass"]
    assert (one.threads, five.threads) == (1, 5)
    assert five.instructions == pytest.approx(one.instructions, rel=0.02), (one, five)
    assert one.received == pytest.approx(1.0) and five.received == pytest.approx(1.0)


@pytest.mark.slow
def test_a_users_program_calling_callables_is_counted_per_packet(tmp_path) -> None:
    """The key-value store's external design: the host's threads are a plain C program that
    takes requests with obtain_pkt and answers with get_send...; each is counted from the
    request it takes to the next, its own store's work included, and nothing while idle."""
    pcap = str(tmp_path / "kvs.pcap")
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "kvs", "load.py"), "--pcap",
                    pcap, "--requests", "1500", "--keys", "300"], check=True, capture_output=True)
    first, again = (count(KVS, pcap, design="external") for _ in range(2))
    worker = first.segments["worker[0]"]
    assert (worker.on_nic, worker.threads) == (False, 1)
    assert 150 < worker.instructions < 5000        # the request's work, not idle polling
    assert again.segments["worker[0]"].instructions == pytest.approx(worker.instructions,
                                                                      rel=0.01)
    assert {"nic_rx", "nic_tx"} <= set(first.segments)


@pytest.mark.slow
@pytest.mark.parametrize("target,isa", [("liquidio", "mips64"), ("bluefield", "aarch64")])
def test_nic_segments_are_counted_in_the_nics_isa(tmp_path, target: str, isa: str) -> None:
    """The echo, AES (in software) and flow classification on the NIC, built for it and
    counted under qemu of its ISA: the ISA recorded, each packet's instructions and the
    misses of the NIC's caches, and flow classification's (atomic adds to its sketch) the
    same twice."""
    cases = [(ECHO, "echo", write_capture(str(tmp_path / "echo.pcap"), 300)),
             (AES, "aes", nf_capture(str(tmp_path / "aes.pcap"), "aes", 100, 1024)),
             (FLOWCLASS, "flowclass", nf_capture(str(tmp_path / "fc.pcap"), "flowclass", 500, 80))]
    for app, segment, pcap in cases:
        m = count(app, pcap, target, device="nic")
        assert (m.nic_isa, m.host_isa) == (isa, "x86-64")
        s = m.segments[segment]
        assert s.on_nic and s.threads == 1 and s.received == 1.0
        assert s.instructions > (64 * 10 * 16 if app == AES else 50)    # AES: 64 blocks, 10
        assert s.misses[NIC_GEOMETRY].first >= s.misses[NIC_GEOMETRY].last >= 0   # rounds
    assert s.atomics >= 4                               # an add to each row of the sketch
    again = count(FLOWCLASS, pcap, target, device="nic").segments["flowclass"]
    assert (s.instructions, s.atomics) == (again.instructions, again.atomics)


@pytest.mark.slow
def test_the_key_value_stores_write_back_cache_is_counted_in_mips64(tmp_path) -> None:
    """cache-wb on the LiquidIO: the NIC's receive and send segments in MIPS64, the host's
    in x86-64, each request's work on both sides."""
    pcap = str(tmp_path / "kvs.pcap")
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "kvs", "load.py"), "--pcap",
                    pcap, "--requests", "600", "--keys", "300"], check=True, capture_output=True)
    m = count(KVS, pcap, "liquidio", design="cache-wb")
    assert m.nic_isa == "mips64"
    nic = m.side(True)
    assert {"nic_rx", "nic_tx"} <= set(nic) and nic["nic_rx"].instructions > 100
    assert m.side(False) and all(s.misses for s in m.segments.values() if s.instructions)


def test_a_build_counting_each_element_names_them_for_the_plugin(tmp_path) -> None:
    # for the NIC's own ISA too: the plugin counts each element under qemu-mips64
    result = floem("build", ECHO, "-D", "device=nic", "--nic", "liquidio", "--count-elements",
                   "-o", str(tmp_path / "build"))
    assert result.returncode == 0, result.stderr
    names = (tmp_path / "build" / "elements.txt").read_text().split()
    assert {"FromNet0", "ToNet0"} <= set(names)


def test_a_simulated_cache_needs_counting_and_a_process_of_the_program() -> None:
    result = floem("run", ECHO, "--count-cache", "echo=32768,8,64:32768,8,64:1048576,16,64")
    assert result.returncode == 1 and "give --count-instructions too" in result.stderr
    result = floem("run", ECHO, "--count-instructions", "/tmp/x", "--count-cache", "nic=1,2")
    assert result.returncode == 2 and "need PROCESS=I1:D1:LL" in result.stderr


# -- platforms and the model -------------------------------------------------------------

def test_every_platform_loads_and_cites_each_figure() -> None:
    assert {"liquidio", "bluefield2"} <= set(model_platforms("nic"))
    assert {"xeon-x5650", "xeon-e5-2680v3", "this"} <= set(model_platforms("host"))
    for kind, sections in (("nic", SECTIONS + ("pcie", "link")), ("host", SECTIONS)):
        for name in model_platforms(kind):
            p = load_platform(name, kind)
            assert p.cores > 0 and p.ghz > 0 and p.cpi > 0 and p.dram_ns > 0
            assert set(sections) <= set(p.sources), name
            for section in sections:
                assert len(p.sources[section].strip()) > 80, (name, section)
            sets = [int(size) // (int(ways) * int(line)) for size, ways, line in
                    (c.split(",") for c in p.caches.split(":"))]
            assert all(s & (s - 1) == 0 for s in sets), (name, "callgrind needs 2^n sets")
    assert (load_platform("liquidio").cores, load_platform("liquidio").ghz) == (12, 1.2)


def test_an_unknown_platform_is_an_error_listing_the_models() -> None:
    result = floem("explore", ECHO, "--pcap", "/nonexistent.pcap", "--nic", "liquidio,octeon")
    assert result.returncode == 2           # a wrong command line
    assert "no nic platform 'octeon'" in result.stderr and "liquidio" in result.stderr
    result = floem("explore", ECHO, "--pcap", "/nonexistent.pcap", "--host", "liquidio")
    assert result.returncode == 2 and "(the host platforms: this, " in result.stderr
    assert "Traceback" not in result.stderr


def segment(on_nic: bool, **kw: float) -> SegmentCounts:
    return SegmentCounts("nic" if on_nic else "app", on_nic, **kw)


def test_each_cost_of_a_segment_follows_from_its_counts() -> None:
    nic = load_platform("liquidio")
    s = segment(True, threads=1, instructions=1000.0, atomics=2.0,
                misses={nic.caches: Misses(first=10.0, last=3.0)}, received=1.0, sent=0.5,
                dma_waits=1.0,
                dma_bytes=64.0, engine_calls=1.0, engine_bytes=1008.0)
    t = segment_time(s, nic, nic, share=0.5)
    assert t.work == pytest.approx(1000 * nic.cpi / nic.ghz)
    assert t.memory == pytest.approx(7 * nic.ll_ns + 3 * nic.dram_ns)      # no second level
    assert t.io == pytest.approx(nic.rx_ns + 0.5 * nic.tx_ns)
    assert t.atomics == pytest.approx(2 * (nic.atomic_ns + 0.5 * nic.transfer_ns))
    assert t.dma == pytest.approx(nic.pcie_latency_ns + 64 / nic.pcie_gbytes)
    assert t.crypto == pytest.approx(1008 * nic.crypto_cycles_per_byte / nic.ghz
                                     + nic.crypto_call_ns)
    host = load_platform("xeon-x5650", "host")
    on_host = segment(False, threads=1, misses={host.caches: Misses(first=10.0, last=3.0,
                                                                   second=6.0)})
    assert segment_time(on_host, host, nic, 0.0).memory == pytest.approx(
        4 * host.l2_ns + 3 * host.ll_ns + 3 * host.dram_ns)
    assert segment_time(s, host, nic, 0.0).memory == 0      # no count for its caches
    # a NIC's DMA writes the frames: no cost per byte; this machine's memif copies them
    assert segment_time(s, nic, nic, 0.5, frame_bytes=1024).io == pytest.approx(t.io)
    this = dataclasses.replace(host, io_ns_per_byte=0.05)
    assert segment_time(s, this, nic, 0.0, frame_bytes=1024).io == pytest.approx(
        host.rx_ns + 0.5 * host.tx_ns + 1.5 * 1024 * 0.05)


def measurement(machine: Machine | None = None, **kw) -> Measurement:
    base = dict(packets=1000, frame_bytes=1024.0, replies=1.0)
    return Measurement(**{**base, **kw}, machines={"": machine or Machine()})


def test_capacities_follow_from_the_segments_and_the_platforms() -> None:
    nic, host = load_platform("liquidio"), load_platform("xeon-e5-2680v3", "host")
    m = measurement(segments={
        "rx": segment(True, threads=3, instructions=3000.0, serial_instructions=500.0,
                      atomics=1.0, serial_atomics=1.0, received=1.0),
        "app": segment(False, threads=1, instructions=800.0)},
        machine=Machine(nic_managers=1, queue_entries=2.0, queue_bytes=256.0,
                        managers=segment(True, threads=1, instructions=400.0)))
    pred = predict(m, nic, host)
    assert pred.capacities["NIC managers"] == pytest.approx(1e9 / (400 * nic.cpi / nic.ghz))
    rx = segment_time(m.segments["rx"], nic, nic, share=2 / 3)
    assert pred.capacities["NIC cores (rx)"] == pytest.approx(3 * 1e9 / rx.total)
    app = segment_time(m.segments["app"], host, nic, share=0.0)
    assert pred.capacities["host cores (app)"] == pytest.approx(1e9 / app.total)
    lock_ns = 500 * nic.cpi / nic.ghz + (nic.atomic_ns + 2 / 3 * nic.transfer_ns)
    assert pred.capacities["NIC locks"] == pytest.approx(1e9 / lock_ns)
    pcie = 256 + 2 * nic.tlp_bytes
    assert pred.capacities["PCIe"] == pytest.approx(nic.pcie_gbytes * 1e9 / pcie)
    wire = (1024 + WIRE_OVERHEAD_BYTES) * 8
    assert pred.capacities["link"] == pytest.approx(nic.link_gbps * 1e9 / wire)
    assert pred.packets_per_s == min(pred.capacities.values())
    assert pred.capacities[pred.bottleneck] == pred.packets_per_s
    assert pred.load_pps == pytest.approx(0.8 * pred.packets_per_s)
    assert 0 < pred.latency.p50_us < pred.latency.p99_us < math.inf


def test_the_managers_capacity_is_at_full_batches() -> None:
    """Counted rounds that found 2 entries each (10 rounds for 20 entries a packet, 100
    instructions a round fixed, as an idle round shows, and 20 an entry): with batches of
    32 the same entries take 20/32 of a round's fixed part, not 10."""
    nic, host = load_platform("liquidio"), load_platform("xeon-e5-2680v3", "host")
    counted = 10 * 100 + 20 * 20
    record = Machine(nic_managers=2, queue_entries=20.0, manager_rounds=10.0,
                     round_instructions=100.0, sync_batch=32,
                     managers=segment(True, threads=2, instructions=float(counted)))
    full = 20 / 32 * 100 + 20 * 20
    assert full_batches(counted, 10.0, 20.0, 100.0, 32) == pytest.approx(full / counted)
    per_packet = counted * nic.cpi / nic.ghz * full / counted
    assert predict(measurement(machine=record), nic, host).capacities["NIC managers"] == \
        pytest.approx(2 * 1e9 / per_packet)
    # no idle round counted, or rounds already full: the counted cost stands
    assert full_batches(counted, 10.0, 20.0, 0.0, 32) == 1.0
    assert full_batches(counted, 20 / 32, 20.0, 100.0, 32) == 1.0
    # never below the fixed part of the fewest rounds
    assert full_batches(500.0, 10.0, 20.0, 100.0, 32) == pytest.approx(20 / 32 * 100 / 500)


def test_a_configuration_that_does_not_fit_the_platform() -> None:
    nic, host = load_platform("liquidio"), load_platform("this", "host")
    m = measurement(segments={"s": segment(True, threads=12, instructions=1.0)},
                    machine=Machine(nic_managers=1))
    assert predict(m, nic, host).error == "needs 13 NIC cores; liquidio has 12"


def test_latency_grows_with_the_load_and_is_unbounded_past_capacity() -> None:
    path = [Station("a", 1000.0), Station("b", 500.0, servers=2)]
    low, high = latency(path, 700.0, 1e5), latency(path, 700.0, 8e5)
    assert 1.5 < low.p50_us < high.p50_us and low.p99_us < high.p99_us
    assert latency(path, 700.0, 8e5) == high                # the same every time
    assert math.isinf(latency(path, 0.0, 1.2e6).p99_us)      # past station a's 1 M/s


# -- exploring, for real -----------------------------------------------------------------

COLUMNS = {"study", "configuration", "platform", "host_platform", "predicted_packets_per_s",
           "predicted_latency_us_p50", "predicted_latency_us_p99", "pcie_bytes_per_packet"}


def _same_table(first: list[str], second: list[str]) -> None:
    """Two explore tables agree: every cell equal, except that a figure charged for cache
    misses may differ by 1% (a miss or two in the run; docs/exploration.md)."""
    assert len(first) == len(second)
    for a, b in zip(first, second):
        for x, y in zip(a.split(" | "), b.split(" | "), strict=True):
            if x == y:
                continue
            scale = 1e6 if x.endswith(" M") else 1.0
            u, v = (float(c.removesuffix(" M")) * scale for c in (x, y))
            assert math.isclose(u, v, rel_tol=0.01), (a, b)


@pytest.mark.slow
@pytest.mark.timeout(1300)               # two sweeps of up to 600 s each
def test_explore_the_echo_gives_the_same_table_twice(tmp_path) -> None:
    pcap = write_capture(str(tmp_path / "w.pcap"), 1500)
    tables = []
    for run in ("a", "b"):
        base = str(tmp_path / run / "echo")
        result = floem("explore", ECHO, "--pcap", pcap, "--nic", "liquidio",
                       "--host", "xeon-e5-2680v3,xeon-x5650", "-o", base, timeout=600)
        assert result.returncode == 0, result.stderr
        assert "[1/2] echo: device=cpu: counting" in result.stderr
        table = [ln for ln in result.stdout.splitlines() if ln.startswith("| device=")]
        assert len(table) == 4
        tables.append(table)
        with open(base + ".csv") as f:
            rows = list(csv.DictReader(f))
        assert COLUMNS <= set(rows[0])
        assert {(r["configuration"], r["host_platform"]) for r in rows} == {
            (d, h) for d in ("device=cpu", "device=nic")
            for h in ("xeon-e5-2680v3", "xeon-x5650")}
        for r in rows:
            assert r["error"] == "" and float(r["predicted_packets_per_s"]) > 0
            assert 0 < float(r["predicted_latency_us_p50"]) < float(r["predicted_latency_us_p99"])
            if r["configuration"] == "device=nic":
                assert float(r["nic_instructions_per_packet"]) > 0
            else:
                assert float(r["host_instructions_per_packet"]) > 0
                assert r["bottleneck"] in ("host cores (echo)", "link")
        with open(base + ".json") as f:
            data = json.load(f)
        nic = next(r for r in data["rows"] if r["configuration"] == "device=nic")
        assert math.isclose(nic["predicted_packets_per_s"], min(nic["capacities"].values()))
        assert nic["segments"]["echo"]["time_ns"]["io"] > 0
        for ext in (".svg", ".png"):
            assert os.path.getsize(base + ext) > 1000
    _same_table(tables[0], tables[1])
    # the slower host is slower on the CPU design, the same on the NIC design
    rates = {(ln.split(" | ")[0][2:], ln.split(" | ")[2]): ln.split(" | ")[8] for ln in tables[0]}
    assert rates[("device=nic", "xeon-x5650")] == rates[("device=nic", "xeon-e5-2680v3")]


FAILING_APP = '''
from floem import Segment, param, target
from floem.library import FromNet, ToNet

mode = param("mode", "ok", choices=["ok", "broken"])

class fwd(Segment):
    def impl(self):
        if mode == "broken":
            raise ValueError("this configuration does not build")
        FromNet() >> ToNet()

fwd("fwd")
'''


@pytest.mark.slow
def test_a_failing_configuration_gets_its_row_and_the_sweep_goes_on(tmp_path) -> None:
    app = tmp_path / "fwd.py"
    app.write_text(FAILING_APP)
    pcap = write_capture(str(tmp_path / "w.pcap"), 300)
    result = floem("explore", str(app), "--pcap", pcap, "--nic", "liquidio",
                   "-o", str(tmp_path / "fwd"), timeout=300)
    assert result.returncode == 0, result.stderr
    assert "mode=broken: failed: " in result.stderr and "does not build" in result.stderr
    broken = next(ln for ln in result.stdout.splitlines() if ln.startswith("| mode=broken"))
    assert "failed: " in broken
    ok = next(ln for ln in result.stdout.splitlines() if ln.startswith("| mode=ok"))
    assert result.stdout.index(ok) < result.stdout.index(broken)


def test_a_workload_command_must_name_its_capture(tmp_path) -> None:
    result = floem("explore", ECHO, "--workload", "true")
    assert result.returncode == 1 and "must write the capture to {pcap}" in result.stderr
    result = floem("explore", ECHO, "--workload", "false {pcap}")
    assert result.returncode == 1 and "the workload command failed" in result.stderr
    assert "Traceback" not in result.stderr
