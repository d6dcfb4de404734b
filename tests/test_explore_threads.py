"""Each design at its best: ``--threads SEGMENT=N``, ``parallel=False`` segments, and the
search of thread assignments of ``floem explore --best-threads`` (floem/explore/threads.py).

The option gives a segment its threads or says clearly why it cannot; the search tries
every integer assignment within the NIC's free cores and the host's, never gives a queue's
consumer more threads than the queue has instances, counts the best with its own threads
and reports that count; the model credits only the threads that can work.
"""
from __future__ import annotations

import json
import os

import pytest

from conftest import ROOT, floem
from floem.builder import check_program
from floem.errors import FloemError
from floem.api import load_app
from floem.explore import threads
from floem.explore.measure import MANAGERS, Machine, Measurement, SegmentCounts
from floem.explore.model import load_platform, predict, segment_time
from floem.explore.sweep import layout
from floem.ir import BuildOptions

KVS = os.path.join(ROOT, "examples", "kvs", "kvs.py")
FLOWCLASS = os.path.join(ROOT, "examples", "nf", "flowclass.py")
STORM = os.path.join(ROOT, "examples", "storm", "storm.py")


def cores_of(app: str, defines: dict[str, str], **options: object) -> dict[str, int]:
    ir = check_program(load_app(app, defines), BuildOptions.from_keywords(**options))
    return {s.name: len(s.cores) for s in ir.segments.values() if s.kind == "thread"}


def test_threads_option_gives_a_segment_its_threads() -> None:
    written = cores_of(KVS, {"design": "cache-wb", "nic_cores": "5"})
    assert written == {"nic_rx": 5, "store": 1, "nic_tx": 5}
    given = cores_of(KVS, {"design": "cache-wb", "nic_cores": "5"},
                     threads=(("nic_rx", 10), ("nic_tx", 1)))
    assert given == {"nic_rx": 10, "store": 1, "nic_tx": 1}


def test_threads_option_naming_no_segment_lists_those_with_threads() -> None:
    with pytest.raises(FloemError, match=r"'nix' names no segment \(segments with threads: "
                                         r"nic_rx, nic_tx, store\)"):
        cores_of(KVS, {"design": "cache-wb"}, threads=(("nix", 2),))
    with pytest.raises(FloemError, match="'obtain_pkt' is a callable segment"):
        cores_of(KVS, {"design": "external"}, threads=(("obtain_pkt", 2),))
    with pytest.raises(FloemError, match="gives segment 'store' threads twice"):
        BuildOptions(threads=(("store", 1), ("store", 2)))


def test_command_line_threads_are_checked_before_compiling(tmp_path) -> None:
    r = floem("check", KVS, "--threads", "nic_rx=0", cwd=str(tmp_path))
    assert r.returncode == 2
    assert "--threads takes SEGMENT=N, N threads (1 or more), not 'nic_rx=0'" in r.stderr
    r = floem("check", KVS, "-D", "design=split", "--threads", "nic_rx=4", "--threads",
              "store=2", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr


def test_a_segment_that_is_not_parallel_keeps_one_thread() -> None:
    with pytest.raises(FloemError, match=r"storm\.py:\d+: .*segment 'demux' is "
                                         r"parallel=False: it runs on one thread"):
        cores_of(STORM, {"design": "split"}, threads=(("demux", 2),))
    assert cores_of(STORM, {"design": "split"}, threads=(("demux", 1),))["demux"] == 1


def test_layout_knows_how_many_threads_can_work_in_each_segment() -> None:
    lay = layout(KVS, {"design": "cache-wb", "cores": "2"})
    assert lay.limits == {"nic_rx": 0, "store": 2, "nic_tx": 2}
    assert lay.shadows == 4                 # two queues to and from the host, two instances each
    assert lay.sync_batch == 32             # 256 entries each: a quarter, at most 32
    queues = layout(KVS, {"design": "cache-wb", "queues": "3", "queue_size": "64"})
    assert (queues.limits["nic_tx"], queues.limits["store"]) == (3, 3)
    assert (queues.shadows, queues.sync_batch) == (6, 16)
    assert layout(KVS, {"design": "cpu"}).shadows == 0
    assert layout(STORM, {"design": "split"}).limits["demux"] == 1


def test_every_assignment_within_the_free_cores() -> None:
    rooms = {"rx": threads.Room(True), "tx": threads.Room(True, limit=2),
             "app": threads.Room(False)}
    found = threads.assignments(rooms, nic_free=4, host_cores=2)
    expected = [(("app", a), ("rx", r), ("tx", t)) for a in (1, 2) for r in range(1, 4)
                for t in (1, 2) if r + t <= 4]
    assert sorted(found) == sorted(expected)
    assert threads.assignments({"a": threads.Room(False), "b": threads.Room(False)}, 4, 1) == []


def segment(on_nic: bool, **kw: float) -> SegmentCounts:
    return SegmentCounts("nic" if on_nic else "app", on_nic, **kw)


def two_nic_segments(rx_threads: int, tx_threads: int, rx_instructions: float = 2000.0,
                     tx_instructions: float = 100.0) -> Measurement:
    return Measurement(packets=1000, frame_bytes=0.0, replies=1.0, segments={
        "nic_rx": segment(True, threads=rx_threads, instructions=rx_instructions),
        "nic_tx": segment(True, threads=tx_threads, instructions=tx_instructions, limit=1),
        "store": segment(False, threads=1, instructions=500.0)},
        machines={"": Machine(nic_managers=1)})


def test_the_model_credits_only_the_threads_that_can_work() -> None:
    nic, host = load_platform("liquidio"), load_platform("xeon-e5-2680v3", "host")
    m = two_nic_segments(5, 5)
    tx = segment_time(m.segments["nic_tx"], nic, nic, 0.0).total
    assert predict(m, nic, host).capacities["NIC cores (nic_tx)"] == pytest.approx(1e9 / tx)


def test_the_search_counts_the_best_with_its_own_threads() -> None:
    nic, host = load_platform("liquidio"), load_platform("xeon-e5-2680v3", "host")
    rooms = {"nic_rx": threads.Room(True), "nic_tx": threads.Room(True, limit=1),
             "store": threads.Room(False)}
    counted = []

    def count(a: threads.Assignment) -> Measurement:
        counted.append(a)
        given = dict(a)     # recounted: the receive segment costs a little more per packet
        return two_nic_segments(given["nic_rx"], given["nic_tx"], rx_instructions=2100.0)

    written = (("nic_rx", 5), ("nic_tx", 5), ("store", 1))
    known = {written: two_nic_segments(5, 5)}
    best = threads.search(known, rooms, count, nic, host, host_cores=1, per_core=False)
    assert best.assignment == (("nic_rx", 10), ("nic_tx", 1), ("store", 1))
    assert counted == [best.assignment] and best.recounted == 1
    assert best.tried == 10                           # nic_rx 1..10, nic_tx 1, store 1
    assert best.measurement.segments["nic_rx"].instructions == 2100.0
    assert best.prediction.capacities["NIC cores (nic_rx)"] == pytest.approx(
        10 * 1e9 / segment_time(best.measurement.segments["nic_rx"], nic, nic, 0.0).total)
    again = threads.search(known, rooms, count, nic, host, host_cores=1, per_core=False)
    assert again.assignment == best.assignment and again.recounted == 0


def test_the_search_gives_the_sync_layer_managers_cores_too() -> None:
    """The managers are a NIC budget item like a segment: when their rounds bound the
    design, the search moves cores to them from a segment (at most one a queue instance
    they manage), and counts the best with that many (`--nic-managers`)."""
    nic, host = load_platform("liquidio"), load_platform("xeon-e5-2680v3", "host")
    rooms = {"nic_rx": threads.Room(True), "nic_tx": threads.Room(True, limit=1),
             "store": threads.Room(False), MANAGERS: threads.Room(True, limit=4)}

    def measured(a: threads.Assignment) -> Measurement:
        given = dict(a)
        m = two_nic_segments(given["nic_rx"], given["nic_tx"])
        m.machines[""] = Machine(nic_managers=given[MANAGERS], managers=segment(
            True, threads=given[MANAGERS], instructions=1000.0))
        return m

    counted: list[threads.Assignment] = []

    def count(a: threads.Assignment) -> Measurement:
        counted.append(a)
        return measured(a)

    written = ((MANAGERS, 1), ("nic_rx", 5), ("nic_tx", 5), ("store", 1))
    best = threads.search({written: measured(written)}, rooms, count, nic, host, host_cores=1,
                          per_core=False)
    # rx at 2,000 instructions a packet against the managers' 1,000: 7 and 4 of the 12 cores
    assert best.assignment == ((MANAGERS, 4), ("nic_rx", 7), ("nic_tx", 1), ("store", 1))
    assert counted == [best.assignment]
    assert best.prediction.capacities["NIC managers"] == pytest.approx(
        4 * 1e9 / segment_time(best.measurement.machines[""].managers, nic, nic, 0.0).total)
    assert best.tried == sum(min(4, 11 - rx) for rx in range(1, 11))


def test_of_assignments_predicted_alike_the_search_keeps_the_fewest_cores() -> None:
    """A send segment that can use one thread bounds every assignment: more receive
    threads or managers would take cores and add nothing."""
    nic, host = load_platform("liquidio"), load_platform("xeon-e5-2680v3", "host")
    rooms = {"nic_rx": threads.Room(True), "nic_tx": threads.Room(True, limit=1),
             "store": threads.Room(False), MANAGERS: threads.Room(True, limit=4)}

    def measured(a: threads.Assignment) -> Measurement:
        given = dict(a)
        m = two_nic_segments(given["nic_rx"], given["nic_tx"], rx_instructions=100.0,
                             tx_instructions=5000.0)
        m.machines[""] = Machine(nic_managers=given[MANAGERS], managers=segment(
            True, threads=given[MANAGERS], instructions=100.0))
        return m

    written = ((MANAGERS, 2), ("nic_rx", 5), ("nic_tx", 1), ("store", 1))
    best = threads.search({written: measured(written)}, rooms, measured, nic, host,
                          host_cores=1, per_core=False)
    assert best.assignment == ((MANAGERS, 1), ("nic_rx", 1), ("nic_tx", 1), ("store", 1))
    assert best.prediction.bottleneck == "NIC cores (nic_tx)"


def test_no_assignment_fits_when_segments_outnumber_the_cores() -> None:
    nic, host = load_platform("liquidio"), load_platform("xeon-e5-2680v3", "host")
    rooms = {"a": threads.Room(False), "b": threads.Room(False)}
    m = Measurement(packets=1, frame_bytes=0.0, replies=0.0, machines={"": Machine()})
    with pytest.raises(FloemError, match="no assignment of threads fits: .*2 host segments on "
                                         "1 host cores"):
        threads.search({(("a", 1), ("b", 1)): m}, rooms, lambda a: m, nic, host, 1, False)


@pytest.mark.slow
def test_explore_best_threads_reports_the_assignment_it_counted(tmp_path) -> None:
    capture = str(tmp_path / "fc.pcap")
    r = floem("explore", FLOWCLASS, "-D", "device=nic", "--workload",
              f"python {ROOT}/examples/nf/load.py flowclass --size 80 --count 1000 "
              "--pcap {pcap}", "--nic", "liquidio", "--host", "xeon-e5-2680v3",
              "--best-threads", "-o", str(tmp_path / "fc"), timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(capture)
    row = json.load(open(tmp_path / "fc.json"))["rows"][0]
    nic = load_platform("liquidio")
    assert row["threads"] == f"flowclass={nic.cores}"         # no queue: no manager core
    assert row["nic_cores"] == nic.cores
    assert row["threads_searched"] == (f"{nic.cores} assignments predicted, 1 counted with "
                                       "their own threads")
    assert row["spread"] is not None and row["spread"] < 0.05
    assert "| flowclass=12 |" in r.stdout
