"""`floem explore` and the NIC performance model (floem/explore, floem/platforms/*.toml).

The platform files load and cite every figure; the model's capacities follow from a
measurement and the platform's figures; counter lines parse as the runtime prints them;
callgrind's instruction counts of a NIC segment are deterministic and per packet; an
exploration of the echo on the CPU and the NIC prints and writes its table and plot, and
a configuration that does not build gets a failed row while the sweep goes on.
"""
from __future__ import annotations

import csv
import json
import math
import os
import socket

import dpkt
import pytest

from conftest import ROOT, floem
from floem.explore.counters import parse
from floem.explore.measure import Measurement, segment_instructions
from floem.explore.model import WIRE_OVERHEAD_BYTES, load_platform, model_platforms, predict

ECHO = os.path.join(ROOT, "examples", "echo", "echo.py")


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


# -- platforms and the model ----------------------------------------------------------

def test_every_platform_loads_and_cites_each_figure() -> None:
    assert {"liquidio", "bluefield2", "host"} <= set(model_platforms())
    for name in model_platforms():
        p = load_platform(name)
        assert p.cores > 0 and p.ghz > 0 and p.cpi > 0 and p.dma_gbps > 0 and p.link_gbps > 0
        assert set(p.sources) == {"cores", "crypto", "dma", "link"}
        assert all(len(text.strip()) > 40 for text in p.sources.values()), name
    liquidio = load_platform("liquidio")
    assert (liquidio.cores, liquidio.ghz, liquidio.build) == (12, 1.2, "liquidio")


def test_an_unknown_platform_is_an_error_listing_the_models() -> None:
    result = floem("explore", ECHO, "--pcap", "/nonexistent.pcap", "--nic", "octeon")
    assert result.returncode == 1
    assert "no performance model of platform 'octeon'" in result.stderr
    assert "liquidio" in result.stderr and "Traceback" not in result.stderr


def measurement(**kw) -> Measurement:
    base = dict(packets=1000, frame_bytes=1024.0, replies=1.0, host_io=False)
    return Measurement(**{**base, **kw})


def test_capacities_follow_from_the_counts_and_the_platform() -> None:
    p = load_platform("liquidio")
    m = measurement(nic_instructions={"nf": 3000.0}, nic_threads={"nf": 3}, nic_managers=1,
                    serial_instructions=500.0, dma_bytes=256.0,
                    engine_bytes={"crypto": 1008.0}, engine_calls={"crypto": 1.0})
    pred = predict(m, p)
    ns = p.cpi / p.ghz
    assert pred.capacities["NIC cores (nf)"] == pytest.approx(3 * 1e9 / (3000 * ns))
    assert pred.capacities["NIC locks"] == pytest.approx(1e9 / (500 * ns))
    engine_ns = 1008 * 8 / p.crypto_gbps + p.crypto_call_ns / p.crypto_engines
    assert pred.capacities["crypto engines"] == pytest.approx(1e9 / engine_ns)
    assert pred.capacities["PCIe"] == pytest.approx(p.dma_gbps * 1e9 / 256)
    wire = (1024 + WIRE_OVERHEAD_BYTES) * 8
    assert pred.capacities["link"] == pytest.approx(p.link_gbps * 1e9 / wire)
    assert pred.packets_per_s == min(pred.capacities.values())
    assert pred.capacities[pred.bottleneck] == pred.packets_per_s
    assert pred.nic_us == pytest.approx(3000 * ns / 1e3)
    assert pred.error is None


def test_host_work_and_frames_through_a_plain_nic() -> None:
    p = load_platform("bluefield2")
    m = measurement(host_io=True, host_ns={"echo": 400.0, "log": 100.0},
                    host_threads={"echo": 2, "log": 1}, frame_bytes=100.0)
    pred = predict(m, p)
    assert pred.capacities["host CPU (echo)"] == pytest.approx(2 * 1e9 / 400)
    assert pred.capacities["host CPU (log)"] == pytest.approx(1e9 / 100)
    assert pred.capacities["PCIe"] == pytest.approx(p.dma_gbps * 1e9 / 200)   # in and out
    assert pred.bottleneck == "host CPU (echo)"


def test_a_configuration_that_does_not_fit_the_platform() -> None:
    p = load_platform("liquidio")
    assert "needs 13 NIC cores; liquidio has 12" in predict(
        measurement(nic_instructions={"s": 1.0}, nic_threads={"s": 12}, nic_managers=1), p).error
    host = load_platform("host")
    assert predict(measurement(engine_bytes={"crypto": 16.0}, engine_calls={"crypto": 1.0}),
                   host).error == "host has no crypto engine"


def test_counters_parse_the_latest_of_each_line() -> None:
    lines = [
        "floem: thread nf[0] (process nic): runs 5, packets 9, busy 100 ns, waited 0 ns, "
        "idle 5 ns, slept 0 ns, cpu 50 ns, wall 100 ns",
        "floem: thread nf[0] (process nic): runs 10, packets 20, busy 1000 ns, waited 200 ns, "
        "idle 50 ns, slept 0 ns, cpu 400 ns, wall 800 ns",
        "floem: thread manager[0] (process nic): runs 0, packets 0, busy 0 ns, waited 0 ns, "
        "idle 0 ns, slept 0 ns, cpu 7 ns, wall 8 ns",
        "floem: nic sync shadow 0.0: entries 10, read requests 1, write requests 1, "
        "flushes 0, dropped 0, entry bytes 64, moved 400",
        "floem: nic sync shadow 0.1: entries 6, read requests 1, write requests 1, "
        "flushes 0, dropped 0, entry bytes 2112, moved 432",
        "floem: engine crypto (process nic): calls 20, bytes 20160",
        "floem: locks (process nic): acquisitions 40",
        "floem: net pcap: queues 1, rx 20, tx 19, rx dropped 0, tx dropped 0, "
        "alloc failed 0, freed 1",
    ]
    c = parse(lines)
    (nf, manager) = sorted(c.threads, key=lambda t: t.segment != "nf")
    assert (nf.runs, nf.packets, nf.on_nic, nf.worker) == (10, 20, True, True)
    assert nf.work_ns == pytest.approx((1000 - 200) * 400 / 800)
    assert not manager.worker and c.nic_cpu_ns == nf.work_ns and c.host_cpu_ns == 0
    assert c.entry_bytes == 400 + 10 * 4 + 432 + 6 * 4        # what moved, not whole entries
    assert (c.engine_calls, c.engine_bytes) == ({"crypto": 20}, {"crypto": 20160})
    assert (c.lock_acquisitions, c.rx, c.tx) == (40, 20, 19)


# -- counting and exploring, for real --------------------------------------------------

def counted(tmp_path, frames: int, name: str) -> dict[str, int]:
    pcap = write_capture(str(tmp_path / f"{name}.pcap"), frames)
    out = str(tmp_path / f"{name}.callgrind")
    result = floem("run", ECHO, "-D", "device=nic", "--net", "pcap", "--pcap-in", pcap,
                   "--pcap-out", str(tmp_path / f"{name}.out.pcap"), "--duration", "4",
                   "--count-instructions", out, timeout=180)
    assert result.returncode == 0, result.stderr
    return segment_instructions(out)


@pytest.mark.slow
def test_instruction_counts_are_deterministic_and_per_packet(tmp_path) -> None:
    first, again, double = (counted(tmp_path, n, name)
                            for n, name in ((400, "a"), (400, "b"), (800, "c")))
    assert set(first) == {"echo"} and first == again
    per_packet = first["echo"] / 400
    assert 20 < per_packet < 2000
    assert double["echo"] / 800 == pytest.approx(per_packet, rel=0.02)


def test_counting_needs_the_emulated_nic() -> None:
    result = floem("run", ECHO, "-D", "device=nic", "--nic", "liquidio",
                   "--count-instructions", "/tmp/x")
    assert result.returncode == 1 and "use --nic emu" in result.stderr


@pytest.mark.slow
def test_explore_the_echo_on_cpu_and_nic(tmp_path) -> None:
    pcap = write_capture(str(tmp_path / "w.pcap"), 1500)
    base = str(tmp_path / "out" / "echo")
    result = floem("explore", ECHO, "--pcap", pcap, "--nic", "liquidio,host", "-o", base,
                   timeout=600)
    assert result.returncode == 0, result.stderr
    assert "[1/2] echo: device=cpu: measuring" in result.stderr
    assert "[2/2] echo: device=nic:" in result.stderr
    table = [ln for ln in result.stdout.splitlines() if ln.startswith("| device=")]
    assert len(table) == 4
    with open(base + ".csv") as f:
        rows = list(csv.DictReader(f))
    assert {(r["configuration"], r["platform"]) for r in rows} == {
        (d, p) for d in ("device=cpu", "device=nic") for p in ("liquidio", "host")}
    for r in rows:
        assert r["error"] == "" and float(r["predicted_packets_per_s"]) > 0
        if r["configuration"] == "device=nic":
            assert float(r["nic_instructions_per_packet"]) > 0
            assert float(r["host_ns_per_packet"]) == 0
        else:
            assert float(r["host_ns_per_packet"]) > 0 and r["bottleneck"] == "host CPU (echo)"
    rates = [float(r["predicted_packets_per_s"]) for r in rows]
    printed = [float(r["predicted_packets_per_s"]) for r in sorted(
        rows, key=lambda r: table.index(next(t for t in table if t.startswith(
            f"| {r['configuration']} | {r['platform']} |"))))]
    assert printed == sorted(rates, reverse=True)                  # best first
    with open(base + ".json") as f:
        data = json.load(f)
    assert [p["name"] for p in data["platforms"]] == ["liquidio", "host"]
    nic = next(r for r in data["rows"] if r["configuration"] == "device=nic"
               and r["platform"] == "liquidio")
    assert math.isclose(nic["predicted_packets_per_s"], min(nic["capacities"].values()))
    for ext in (".svg", ".png"):
        assert os.path.getsize(base + ext) > 1000


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
    result = floem("explore", str(app), "--pcap", pcap, "--nic", "host",
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
