"""Per-element packet counters: `floem run --report`'s table and `floem stats`, live (with
the segment threads' statistics).

Counters add up at every element (packets in = packets out + runs that sent nothing on)
over a pcap replay with malformed frames, on the CPU and on the NIC; they match what the
echo must do with the capture; `floem stats` reads a running program's counters; and
`--no-counters` leaves them out.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from floem.stats import owned
from test_echo import ECHO, capture, on, write_capture

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: A row of the table: element, segment, in, ended, then "port N, port N" (or "-").
ROW = re.compile(r"^floem:   (\S+)\s+(\S+)\s+(\S+)\s+(\S+)  (.*)$")


def floem(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "floem.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, **kw)


def table(stderr: str) -> dict[str, tuple[int | None, int | None, dict[str, int]]]:
    """The element table of a --report: element -> (in, ended, packets out by port)."""
    rows = {}
    for line in stderr.splitlines():
        m = ROW.match(line)
        if m is None or m.group(1) == "element":
            continue
        name, _, packets_in, ended, outs = m.groups()
        ports = {} if outs == "-" else {p.rsplit(" ", 1)[0]: int(p.rsplit(" ", 1)[1])
                                        for p in outs.split(", ")}
        rows[name] = (None if packets_in == "-" else int(packets_in),
                      None if ended == "-" else int(ended), ports)
    return rows


@pytest.mark.parametrize("device", ["cpu", "nic"])
def test_counters_add_up_over_a_replay_with_malformed_frames(device: str, tmp_path) -> None:
    frames, valid = capture()
    assert 0 < len(valid) < len(frames)
    src, out = str(tmp_path / "in.pcap"), str(tmp_path / "out.pcap")
    write_capture(src, frames)
    result = floem("run", ECHO, *on(device), "--report", "--net", "pcap", "--pcap-in", src,
                   "--pcap-out", out, "--duration", "1")
    assert result.returncode == 0, result.stderr
    process = "nic" if device == "nic" else "echo"
    assert f"floem: elements of process {process} (packets):" in result.stderr
    rows = table(result.stderr)
    assert set(rows) == {"FromNet0", "CheckUDP0", "SwapUDP0", "ToNet0", "NetFree0"}
    for name, (packets_in, ended, outs) in rows.items():
        if packets_in is not None:
            assert packets_in == sum(outs.values()) + ended, name
    assert rows["FromNet0"] == (None, None, {"out": len(frames)})
    assert rows["CheckUDP0"] == (len(frames), 0,
                                 {"out": len(valid), "drop": len(frames) - len(valid)})
    assert rows["SwapUDP0"] == (len(valid), 0, {"out": len(valid)})
    assert rows["ToNet0"] == (len(valid), len(valid), {})
    assert rows["NetFree0"] == (len(frames) - len(valid), len(frames) - len(valid), {})


def test_a_callable_and_a_join_count_their_own_runs() -> None:
    """fanout_join: a callable segment (fed by its caller, not a counted port) whose
    fan-out meets again at a join, called twice by main."""
    result = floem("run", "--report", "tests/programs/fanout_join.py")
    assert result.returncode == 0, result.stderr
    assert table(result.stderr) == {name: (2, 0, {"out": 2})
                                    for name in ("Square0", "Negate0", "Sum0")}


def test_a_port_every_run_sends_on_counts_the_packets_in() -> None:
    """sent_as_received: the Doubles send every packet on once, so their ports have no
    counter of their own and count what came in; Odd may `return` before its output block,
    so its port keeps one; the table adds up either way."""
    result = floem("run", "--report", "tests/programs/sent_as_received.py")
    assert result.returncode == 0, result.stderr
    assert table(result.stderr) == {"Double0": (4, 0, {"out": 4}), "Double1": (4, 0, {"out": 4}),
                                    "Odd0": (4, 2, {"out": 2}), "Show0": (4, 4, {}),
                                    "Show1": (2, 2, {})}


def test_floem_stats_shows_a_running_programs_counters(tmp_path) -> None:
    frames, valid = capture()
    src = str(tmp_path / "in.pcap")
    write_capture(src, frames)
    run = subprocess.Popen([sys.executable, "-m", "floem.cli", "run", ECHO, "-D", "device=nic",
                            "--net", "pcap", "--pcap-in", src, "--pcap-loop", "0",
                            "--pcap-out", os.devnull, "--duration", "90"],
                           cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # Live: a count past one replay of the capture, then a larger one (a slow machine
        # may take seconds per replay).
        deadline, first, seen = time.monotonic() + 120, None, None
        while time.monotonic() < deadline and run.poll() is None:
            stats = floem("stats", str(run.pid), "--json")
            if stats.returncode == 0:
                processes = json.loads(stats.stdout)
                nic = [p for p in processes if p["process"] == "nic"]
                received = nic[0]["elements"][0]["outs"]["out"] if nic else 0
                if first is None and received > len(frames):
                    first = received
                elif first is not None and received > first:
                    seen = nic[0]
                    break
            time.sleep(0.5)
        assert seen is not None, "floem stats never showed the NIC's counters rising"
        # One snapshot of counters that do not move: read live, `runs` may be read before
        # the packets it counted have reached the output ports' counters.
        os.kill(seen["pid"], signal.SIGSTOP)
        try:
            stopped = floem("stats", str(run.pid), "--json")
        finally:
            os.kill(seen["pid"], signal.SIGCONT)
        assert stopped.returncode == 0, stopped.stderr
        [nic] = [p for p in json.loads(stopped.stdout) if p["process"] == "nic"]
        check = {e["name"]: e for e in nic["elements"]}["CheckUDP0"]
        assert check["outs"]["drop"] > 0 and check["outs"]["out"] > 0
        assert check["runs"] >= check["outs"]["out"] + check["outs"]["drop"]
        # the segment thread's statistics, which it keeps in the same file
        [thread] = nic["threads"]
        assert (thread["segment"], thread["index"]) == ("echo", 0)
        assert 0 < thread["runs"] <= thread["packets"] and thread["busy_ns"] > 0
        text = floem("stats", str(run.pid), "--once")
        assert text.returncode == 0, text.stderr
        assert re.search(r"^process nic \(pid \d+, run /floem-%d-" % run.pid, text.stdout, re.M)
        # CheckUDP's output switch has an else case: it ends no packet, even read live
        assert re.search(r"^  CheckUDP0\s+echo\s+\d+\s+0\s+out \d+, drop \d+$", text.stdout, re.M)
        assert re.search(r"^  echo\[0\]\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+$", text.stdout,
                         re.M)
        # without a PID: the caller's programs, this one among them
        for args in ([], ["--all"]):
            listed = floem("stats", "--once", *args)
            assert f"run /floem-{run.pid}-" in listed.stdout, listed.stderr
    finally:
        run.terminate()
        run.wait(30)
    gone = floem("stats", str(run.pid), "--once")
    assert gone.returncode == 1
    assert gone.stderr.startswith(f"floem: error: no element counters found for process {run.pid}")
    assert "Traceback" not in gone.stderr


def test_floem_stats_lists_the_callers_own_programs() -> None:
    """Another user's process is not the caller's (`floem stats` without --all leaves its
    programs out); the caller's own is."""
    if os.getuid() != 0:
        pytest.skip("starting a process as another user needs root")
    other = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              "sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while os.stat(f"/proc/{other.pid}").st_uid != 65534 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not owned(other.pid)
        assert owned(os.getpid())
    finally:
        other.kill()
        other.wait()


def test_no_counters_leaves_them_out(tmp_path) -> None:
    out = str(tmp_path / "out")
    result = floem("build", ECHO, "--no-counters", "-o", out)
    assert result.returncode == 0, result.stderr
    with open(os.path.join(out, "echo.c")) as f:
        assert "floem_counters" not in f.read()
    frames, _ = capture()
    src = str(tmp_path / "in.pcap")
    write_capture(src, frames)
    result = floem("run", ECHO, "--no-counters", "--report", "--net", "pcap", "--pcap-in", src,
                   "--pcap-out", os.devnull, "--duration", "1")
    assert result.returncode == 0, result.stderr
    assert "floem: elements of process" not in result.stderr


def test_a_runs_counters_drawn_on_its_graph(tmp_path) -> None:
    """floem run --stats writes the counters when the program ends; floem graph --stats
    puts them on the edges and elements, and each queue edge says what its entries carry."""
    frames, valid = capture()
    src, counts = str(tmp_path / "in.pcap"), str(tmp_path / "echo.json")
    write_capture(src, frames)
    result = floem("run", ECHO, "-D", "device=nic", "--net", "pcap", "--pcap-in", src,
                   "--pcap-out", os.devnull, "--duration", "1", "--stats", counts)
    assert result.returncode == 0, result.stderr
    with open(counts) as f:
        [nic] = json.load(f)
    assert nic["process"] == "nic"
    [thread] = nic["threads"]           # ended: its CPU time and lifetime are in too
    assert thread["packets"] == len(frames) and 0 < thread["cpu_ns"] <= thread["wall_ns"]
    check = {e["name"]: e for e in nic["elements"]}["CheckUDP0"]
    assert (check["runs"], check["ended"], check["outs"]) == (
        len(frames), 0, {"out": len(valid), "drop": len(frames) - len(valid)})
    dot = floem("graph", ECHO, "-D", "device=nic", "--stats", counts)
    assert dot.returncode == 0, dot.stderr
    assert f'"FromNet0" -> "CheckUDP0" [taillabel="out", headlabel="inp", label="{len(frames)} pkts' \
        in dot.stdout
    assert f'"CheckUDP0" -> "NetFree0" [taillabel="drop", headlabel="inp", ' \
           f'label="{len(frames) - len(valid)} pkts' in dot.stdout
    assert f'"CheckUDP0" [label="CheckUDP0\\nCheckUDP\\nin {len(frames)}"]' in dot.stdout
    queues = floem("graph", "tests/programs/nic_roundtrip.py")
    assert 'label="queue to_nic[0]\\na, b, c, d (15 B)"' in queues.stdout


def test_an_element_that_sends_nothing_on_is_outlined_with_its_drops(tmp_path) -> None:
    counts = tmp_path / "counts.json"
    counts.write_text(json.dumps([{"process": "echo", "pid": 1, "run": "", "elements": [
        {"name": "CheckUDP0", "segment": "echo", "runs": 9, "ended": 4,
         "outs": {"out": 3, "drop": 2}}]}]))
    dot = floem("graph", ECHO, "--stats", str(counts))
    assert dot.returncode == 0, dot.stderr
    assert '"CheckUDP0" [label="CheckUDP0\\nCheckUDP\\nin 9, dropped 4", color="#c0392b"' \
        in dot.stdout
    counts.write_text("[1, 2]")
    bad = floem("graph", ECHO, "--stats", str(counts))
    assert bad.returncode == 1
    assert bad.stderr == f"floem: error: {counts}: not the counters of floem run --stats " \
                         "or floem stats --json\n"


def test_a_program_named_like_a_runtime_header_builds() -> None:
    """examples/demo/counters.py: its process header counters.h must not hide the runtime's
    floem/counters.h (their include guards once had the same name)."""
    result = floem("run", "--timeout", "60", "examples/demo/counters.py")
    assert result.returncode == 0, result.stderr
    assert "small packets:" in result.stdout


@pytest.mark.parametrize("device", ["cpu", "nic"])
def test_queue_counts_on_the_graphs_queue_edges(device: str, tmp_path) -> None:
    """floem run --stats keeps the counters of the queue instances each process counts when
    it ends; floem graph --stats writes them on the queue's edges: what was enqueued,
    dequeued and dropped, where the process that counts them sees it (the NIC's end of a
    queue in host memory counts nothing there)."""
    lossy = str(tmp_path / "lossy.json")
    result = floem("run", "tests/programs/queue_lossy.py", "--stats", lossy)
    assert result.returncode == 0, result.stderr
    dot = floem("graph", "tests/programs/queue_lossy.py", "--stats", lossy)
    assert 'label="queue small[0]\\nvalue (4 B)\\n5 enqueued, 5 dequeued, 6 dropped"' \
        in dot.stdout       # 10 pushes into 4 entries, then one more after the drain
    counts = str(tmp_path / "trace_path.json")
    result = floem("run", "tests/programs/trace_path.py", "-D", f"device={device}",
                   "--stats", counts)
    assert result.returncode == 0, result.stderr
    dot = floem("graph", "tests/programs/trace_path.py", "-D", f"device={device}",
                "--stats", counts)
    taken = ("4 enqueued, 0 dropped", "3 dequeued") if device == "nic" else \
        ("4 enqueued, 4 dequeued, 0 dropped", "3 enqueued, 3 dequeued, 0 dropped")
    assert f'label="queue requests[0]\\nop, key (5 B)\\n{taken[0]}"' in dot.stdout
    assert f'label="queue replies[0]\\nkey, value, ratio (20 B)\\n{taken[1]}"' in dot.stdout
