#!/usr/bin/env python3
"""What counting costs, and what each counting tool counts: qemu-user with Floem's counting
plugin against callgrind on the same x86-64 build, and the NIC's segments in their own
ISA (MIPS64 for the LiquidIO, AArch64 for the BlueField-2).

Usage: python3 benchmarks/counting/run.py [--cases CASE,...] [--frames N] [--short]

For each case (`CASES`: the echo, AES and flow classification on the NIC or the CPU, the
key-value store's cpu and cache-wb designs), replays one capture through ``floem run --net pcap
--count-instructions`` as `floem explore` does (no per-element counters, the LiquidIO's
caches on the NIC, the E5-2680 v3's on the host), until every frame is in and the counters
stand still:

* on ``--nic emu``, twice on the same build: under qemu-x86_64 with the plugin (what
  `floem explore` counts with) and under callgrind (what ``--count-elements`` counts
  with; the harness asks for it without that option's build);
* on ``--nic liquidio`` and ``--nic bluefield`` with the plugin.

It prints, per segment, instructions and atomics per packet and first- and last-level
misses per packet, with each run's time (its processes' start to the counters standing
still and the run stopped; the build excluded) and its segment threads' work per frame
(the runtime's measure of their busy turns as CPU time); a run not counted (``none``)
gives each target's times without counting. ``--short`` runs the echo alone on 50 frames
(what the slow tests run, to keep the script working).
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, ROOT)

from floem.explore.callgrind import read_profile  # noqa: E402
from floem.explore.counters import parse  # noqa: E402
from floem.explore.measure import Replay, Workload, process_counts  # noqa: E402
from floem.explore.model import load_platform  # noqa: E402
from floem.explore.sweep import layout  # noqa: E402
from floem.ir.cnames import c_global  # noqa: E402

NF = os.path.join(ROOT, "examples", "nf")
ECHO = os.path.join(ROOT, "examples", "echo", "echo.py")
ECHO_CAPTURE = ["traffic.py", "forwarder", "--size", "106", "--malformed", "0"]
#: name -> (app, -D values, the capture: examples/nf's script and its arguments, or "kvs")
CASES = {
    "echo": (ECHO, {"device": "nic"}, ECHO_CAPTURE),
    "aes": (os.path.join(NF, "aes.py"), {"device": "nic"}, ["load.py", "aes", "--size", "1024"]),
    "flowclass": (os.path.join(NF, "flowclass.py"), {"device": "nic"},
                  ["load.py", "flowclass", "--size", "80"]),
    "echo-cpu": (ECHO, {"device": "cpu"}, ECHO_CAPTURE),
    "aes-cpu": (os.path.join(NF, "aes.py"), {"device": "cpu"},
                ["load.py", "aes", "--size", "1024"]),
    "flowclass-cpu": (os.path.join(NF, "flowclass.py"), {"device": "cpu"},
                      ["load.py", "flowclass", "--size", "80"]),
    "kvs": (os.path.join(ROOT, "examples", "kvs", "kvs.py"), {"design": "cache-wb"}, ["kvs"]),
    "kvs-cpu": (os.path.join(ROOT, "examples", "kvs", "kvs.py"), {"design": "cpu"}, ["kvs"]),
}
#: The runs of each case: the --nic and the tool (a case with no NIC segment: emu only).
RUNS = (("emu", "none"), ("emu", "qemu"), ("emu", "callgrind"), ("liquidio", "none"),
        ("liquidio", "qemu"), ("bluefield", "none"), ("bluefield", "qemu"))
NIC_CACHES = load_platform("liquidio").caches
HOST_CACHES = load_platform("xeon-e5-2680v3", "host").caches


def capture(name: str, frames: int, path: str) -> Workload:
    """The case's capture of ``frames`` frames (the key-value store's: its preload, then
    ``frames`` requests)."""
    command = CASES[name][2]
    if command[0] == "kvs":
        argv = [os.path.join(ROOT, "examples", "kvs", "load.py"), "--pcap", path,
                "--requests", str(frames), "--keys", "2000"]
    else:
        argv = [os.path.join(NF, command[0]), *command[1:], "--count", str(frames),
                "--pcap", path]
    subprocess.run([sys.executable, *argv], check=True, capture_output=True)
    return Workload.read(path)


def counted(name: str, nic: str, tool: str, workload: Workload) -> tuple[dict, float, float]:
    """One replay, counted by ``tool`` (``qemu``, ``callgrind``; ``none``: not counted, run
    natively and under qemu-user of the NIC's ISA as `floem run` does): each segment's
    (instructions, atomics, first, last) per frame, the run's seconds (its processes' start
    to the run stopped) and its segment threads' work per frame in microseconds (their
    busy turns as CPU time, the runtime's measure: what the tool costs per packet, apart
    from starting, idling and stopping)."""
    app, config, _ = CASES[name]
    defines = [f"{k}={v}" for k, v in config.items()]
    lay = layout(app, config)
    with tempfile.TemporaryDirectory(prefix="floem-counting-") as tmp:
        base = os.path.join(tmp, "count")
        options = ["--no-counters", "--nic", nic]
        if tool != "none":
            options += ["--count-instructions", base]
            for process, on_nic in lay.processes.items():
                options += ["--count-cache",
                            f"{process}={NIC_CACHES if on_nic else HOST_CACHES}"]
        run = Replay(app, defines, options, workload)
        run.command[1:4] = [__file__, "--run", tool]
        with run:
            run.finished()
            stderr = run.stop()
            end = time.monotonic()
        started = next(float(line.split()[-1]) for line in stderr.splitlines()
                       if line.startswith("counting: started "))
        report = parse(stderr.splitlines())
        work = sum(t.work_ns for t in report.threads if t.worker) / workload.frames / 1000
        counts = {}
        for process in lay.processes if tool != "none" else []:
            segments = [s for s, p in lay.segments.items() if p == process]
            n = workload.frames
            if tool == "qemu":
                for segment, t in process_counts(base, process, segments, report,
                                                 stderr).items():
                    counts[segment] = (t.instructions / n, t.atomics / n, t.first_misses / n,
                                       t.last_misses / n)
            else:
                for segment, t in callgrind_counts(base, process, segments).items():
                    counts[segment] = tuple(v / n for v in t)
    return counts, end - started, work


def callgrind_counts(base: str, process: str, segments: list[str]) -> dict[str, tuple]:
    """callgrind's profiles of ``process`` (one a thread): each segment's (instructions,
    atomics, first-level and last-level load and fetch misses)."""
    counts: dict[str, tuple] = {}
    for path in sorted(glob.glob(f"{glob.escape(base)}.{process}-*")):
        p = read_profile(path)
        if not p.total("Ir"):
            continue
        ran = [s for s in segments if p.of(c_global("segment", s, "thread"), "Ir")]
        name = ran[0] if ran else max(p.calls.get("floem_count_thread", {"?": [0]}).items(),
                                      key=lambda kv: kv[1][0])[0]
        total = (p.total("Ir"), p.total("Ge"), p.total("I1mr") + p.total("D1mr"),
                 p.total("ILmr") + p.total("DLmr"))
        before = counts.get(name, (0, 0, 0, 0))
        counts[name] = tuple(a + b for a, b in zip(before, total))
    return counts


def serve(tool: str, argv: list[str]) -> int:
    """``floem run ARGV``, saying on stderr when the build is done and the run starts (the
    monotonic clock), with every process under ``tool``: ``qemu`` (the plugin, as
    ``floem run`` counts) or ``callgrind``."""
    import floem.cli
    from floem.builder import Counting
    run_built = floem.cli.run_built

    def timed(*args, **keywords):
        print(f"counting: started {time.monotonic()}", file=sys.stderr, flush=True)
        return run_built(*args, **keywords)

    class Callgrind(Counting):
        """Every process under callgrind, natively, instead of qemu with the plugin: one
        profile per thread (BASE.PROCESS-N), collected between the runtime's client
        requests, its caches simulated as the plugin's (callgrind has no second level)."""

        def prefix(self, process: str, emulator: list[str], cpu: int,
                   elements: str | None = None) -> list[str]:
            command = ["valgrind", "-q", "--tool=callgrind", "--collect-atstart=no",
                       "--collect-bus=yes", "--separate-threads=yes",
                       f"--callgrind-out-file={self.base}.{process}",
                       f"--log-file={self.base}.{process}.log"]
            if process in self.caches:
                levels = self.caches[process].split(":")
                command += ["--cache-sim=yes", f"--I1={levels[0]}", f"--D1={levels[1]}",
                            f"--LL={levels[-1]}"]
            return command

        def check(self) -> None:
            if shutil.which("valgrind") is None:
                sys.exit("the callgrind runs need valgrind: apt-get install valgrind")

    def callgrind(args):
        return Callgrind(args.count_instructions, dict(args.count_cache))
    floem.cli.run_built = timed
    if tool == "callgrind":
        floem.cli._counting = callgrind
    return floem.cli.main(["run", *argv])


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--run":
        sys.exit(serve(sys.argv[2], sys.argv[3:]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--short", action="store_true",
                        help="the echo alone on 50 frames: a check that the script works")
    args = parser.parse_args()
    if args.short:
        args.cases, args.frames = "echo", 50
    with tempfile.TemporaryDirectory(prefix="floem-counting-") as tmp:
        for name in args.cases.split(","):
            workload = capture(name, args.frames, os.path.join(tmp, f"{name}.pcap"))
            print(f"\n{name} {CASES[name][1]}: {workload.frames} frames")
            print("| target | tool | segment | instr/pkt | atomics/pkt | first-level misses/pkt "
                  "| last-level misses/pkt | run s | work µs/pkt |")
            print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            lay = layout(CASES[name][0], CASES[name][1])
            on_nic = any(lay.processes[p] for p in lay.segments.values())
            for nic, tool in RUNS if on_nic else RUNS[:3]:
                counts, seconds, work = counted(name, nic, tool, workload)
                for segment, (ir, ge, first, last) in sorted(counts.items()) or [
                        ("-", (0.0, 0.0, 0.0, 0.0))]:
                    print(f"| {nic} | {tool} | {segment} | {ir:.1f} | {ge:.3f} | {first:.3f} "
                          f"| {last:.3f} | {seconds:.1f} | {work:.2f} |", flush=True)

if __name__ == "__main__":
    main()
