#!/usr/bin/env python3
"""The performance model against this machine: each host-only design predicted on the
``this`` platform and measured over DPDK's net_memif, side by side in one run.

Usage: python3 benchmarks/explore/this_machine.py [--rounds 3] [--seconds 3] [--short]
                                                  [--json FILE]

The only hardware this model can be checked on is the machine it runs on. For each
design whose segments are all on the host (the echo, the key-value store's cpu design,
AES-128-CBC with AES-NI, flow classification, the network sequencer), with the workloads
`floem explore` is given elsewhere:

* **predicted**: `floem explore` counts the design on its workload capture and predicts it
  on the ``this`` platform (floem/platforms/this.toml, measured by calibrate_this.py):
  packets per second of one host thread, its segment's capacity;
* **measured**: the same build (``--no-counters``) runs over ``--net dpdk`` as the server
  of a net_memif pair, one thread pinned to the first CPU, and replay.c (a DPDK program
  beside it, not Floem) replays the capture into it from the second CPU as fast as the
  memif ring takes frames (the key-value store preloaded first, as its baseline capture
  does); packets per second per server core = the frames the server took while the client
  ran, over the CPU time the server's processes used meanwhile (what the scheduler gave
  them, so other jobs on this shared machine change neither figure). Each round runs
  every design once, the order rotating; the table gives medians.

The ratio measured / predicted is the model's error on this machine (the target: within
25%). ``--short`` runs one round of half a second on smaller captures (what the slow tests
run, to keep the script working). Needs root (network namespaces for EAL's runtime files:
each DPDK process runs under ``unshare -m`` with a tmpfs on /run), DPDK (libdpdk-dev) and
libpcap.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EAL = "--no-huge --no-pci -m 256 --no-shconf --no-telemetry"
SERVER_CPU, CLIENT_CPU = 0, 1
#: Frames in the captures of 1 KB frames, at most: as many as calibrate_this.py measures the
#: port's cost per byte with, so that the server finds the bytes memif copies in the same
#: caches in both (the client's frames: 5,000 of them outgrow this machine's last level, and
#: the echo of 1 KB frames then took 146 ns a frame, of 2,000 frames 104).
LARGE_FRAMES = 2000


@dataclass(frozen=True)
class Design:
    """A host-only design: its app and ``-D`` values, and the commands writing its workload
    capture to {pcap} (with ``requests`` requests or packets), and, for a store, the
    capture of its warm-up (the preload, also explore's baseline) and of the requests
    alone."""

    name: str
    app: str
    defines: tuple[str, ...]
    workload: str
    warmup: str | None = None
    requests_only: str | None = None


def designs(count: int) -> list[Design]:
    nf = f"python {ROOT}/examples/nf/load.py"
    kvs = f"python {ROOT}/examples/kvs/load.py --pcap {{pcap}}"
    large = min(LARGE_FRAMES, count // 4)
    return [
        Design("echo", "examples/echo/echo.py", (),
               f"{nf} aes --size 128 --count {count} --pcap {{pcap}}"),
        Design("key-value store, cpu", "examples/kvs/kvs.py", ("design=cpu",),
               f"{kvs} --requests {count}", f"{kvs} --requests 0",
               f"{kvs} --no-preload --requests {count}"),
        Design("AES-128-CBC, AES-NI", "examples/nf/aes.py", ("device=cpu", "aesni=true"),
               f"{nf} aes --size 1024 --count {large} --pcap {{pcap}}"),
        Design("flow classification", "examples/nf/flowclass.py", ("device=cpu",),
               f"{nf} flowclass --size 80 --count {count} --pcap {{pcap}}"),
        Design("sequencer", "examples/nf/sequencer.py", ("device=cpu",),
               f"{nf} sequencer --size 1024 --count {large} --pcap {{pcap}}"),
    ]


def write_capture(command: str, path: str) -> str:
    argv = [sys.executable if w == "python" else w.replace("{pcap}", path)
            for w in command.split()]
    subprocess.run(argv, check=True, capture_output=True)
    return path


def build_replay(tmp: str) -> str:
    """replay.c compiled into ``tmp``."""
    replay = os.path.join(tmp, "replay")
    pkg = subprocess.run(["pkg-config", "--cflags", "--libs", "libdpdk"],
                         capture_output=True, text=True, check=True).stdout.split()
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2",
                    os.path.join(HERE, "replay.c"), *pkg, "-lpcap", "-o", replay], check=True)
    return replay


def predict(design: Design, floem: str, tmp: str) -> tuple[float, str]:
    """The design's predicted packets/s on one host thread of ``this``, and its bound."""
    out = os.path.join(tmp, "predicted")
    command = [floem, "explore", os.path.join(ROOT, design.app), "--workload", design.workload,
               "--nic", "liquidio", "--host", "this", "--option=--no-counters", "-o", out]
    for d in design.defines:
        command += ["-D", d]
    if design.warmup:
        command += ["--baseline", design.warmup]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    with open(out + ".json") as f:
        row = json.load(f)["rows"][0]
    host = {k: v for k, v in row["capacities"].items() if k.startswith("host cores")}
    bound = min(host, key=lambda k: host[k])
    return host[bound], bound


def in_namespace(argv: list[str]) -> list[str]:
    """``argv`` in a mount namespace of its own with a tmpfs on /run (EAL's runtime files
    vanish with it)."""
    return ["unshare", "-m", "sh", "-c", 'mount -t tmpfs none /run && exec "$@"', "sh", *argv]


def cpu_seconds(root: int) -> float:
    """The CPU time (user + system) of process ``root`` and its live descendants."""
    stats = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            stats[int(pid)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    ticks, tree = 0, {root}
    for pid in sorted(stats):
        parent, used = stats[pid]
        if pid == root or parent in tree:
            tree.add(pid)
            ticks += used
    return ticks / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def serving(design: Design, floem: str, tmp: str, n: int) -> Iterator[tuple[int, str]]:
    """The design over DPDK as the memif server on SERVER_CPU: its process id and the
    socket, once the socket is there."""
    socket = os.path.join(tmp, f"memif{n}.sock")
    command = ["taskset", "-c", str(SERVER_CPU), floem, "run", os.path.join(ROOT, design.app),
               "--no-counters", "--net", "dpdk", "--eal",
               f"{EAL} --file-prefix=fs{os.getpid()}x{n} "
               f"--vdev=net_memif0,role=server,socket={socket},socket-abstract=no"]
    for d in design.defines:
        command += ["-D", d]
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(in_namespace(command), stdout=subprocess.DEVNULL, stderr=err,
                                text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while not os.path.exists(socket):
                if proc.poll() is not None or time.monotonic() > deadline:
                    err.seek(0)
                    raise SystemExit(f"{design.name} did not serve:\n{err.read()[-2000:]}")
                time.sleep(0.2)
            yield proc.pid, socket
        finally:
            os.killpg(proc.pid, 2)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()


def measure(design: Design, captures: dict[str, str], floem: str, replay: str, tmp: str,
            seconds: float, n: int) -> float:
    """Packets per second per server core of ``design`` over memif."""
    with serving(design, floem, tmp, n) as (server, socket):
        command = ["taskset", "-c", str(CLIENT_CPU), replay, *EAL.split(),
                   "--single-file-segments", f"--file-prefix=fc{os.getpid()}x{n}",
                   f"--vdev=net_memif0,role=client,socket={socket},socket-abstract=no,"
                   "zero-copy=yes", "--",
                   captures["loop"], str(seconds)] + (
                       [captures["warmup"]] if "warmup" in captures else [])
        client = subprocess.Popen(in_namespace(command), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        assert client.stdout is not None
        lines, used = [], 0.0
        for line in client.stdout:
            lines.append(line.strip())
            if line.strip() == "running":
                used = -cpu_seconds(server)
            elif line.strip() == "stopped":
                used += cpu_seconds(server)
        _, stderr = client.communicate()
        if client.returncode != 0 or not lines or "=" not in lines[-1]:
            raise SystemExit(f"replay failed for {design.name}:\n{stderr[-2000:]}")
    result = dict(word.split("=") for word in lines[-1].split())
    return float(result["sent"]) / used


def table(results: dict[str, dict[str, object]]) -> str:
    lines = ["| design | predicted pkt/s per core | bound | measured pkt/s per core | "
             "measured / predicted |", "| --- | --- | --- | --- | --- |"]
    for name, r in results.items():
        predicted, measured = float(r["predicted"]), float(r["measured"])   # type: ignore[arg-type]
        lines.append(f"| {name} | {predicted / 1e6:.2f} M | {r['bound']} | "
                     f"{measured / 1e6:.2f} M | {measured / predicted:.2f} |")
    errors = [abs(float(r["measured"]) / float(r["predicted"]) - 1)  # type: ignore[arg-type]
              for r in results.values()]
    lines.append("")
    lines.append(f"{sum(e <= 0.25 for e in errors)} of {len(errors)} within 25%; largest "
                 f"error {100 * max(errors):.0f}%")
    return "\n".join(lines)


def platform_cpu() -> str | None:
    """A line saying that floem/platforms/this.toml was measured on another processor than
    this machine's (a virtual machine may run on another kind of host from one day to the
    next), or None when it was measured on this one."""
    import calibrate_this                   # beside this script
    with open(calibrate_this.PLATFORM, "rb") as f:
        measured_on = tomllib.load(f)["cores"].get("cpu", "an unrecorded processor")
    here = calibrate_this.cpu_name()
    if measured_on == here:
        return None
    return (f"floem/platforms/this.toml was measured on {measured_on}; this machine is "
            f"{here}, so the predictions are the other's (python3 "
            "benchmarks/explore/calibrate_this.py --write measures this one)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0, help="each client's run")
    ap.add_argument("--short", action="store_true",
                    help="one round of half a second on small captures")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if args.short:
        args.rounds, args.seconds = 1, 0.5
    floem = shutil.which("floem") or sys.exit("floem is not on PATH (scripts/setup.sh)")
    if os.geteuid() != 0:
        sys.exit("this_machine.py needs root (unshare -m for DPDK's runtime files)")
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("this_machine.py needs two CPUs: the server's and the client's")
    other = platform_cpu()
    if other:
        print(other, file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="floem-this-") as tmp:
        replay = build_replay(tmp)
        chosen = designs(2000 if args.short else 20000)
        results: dict[str, dict[str, object]] = {}
        captures: dict[str, dict[str, str]] = {}
        for d in chosen:
            predicted, bound = predict(d, floem, tmp)
            results[d.name] = {"predicted": predicted, "bound": bound, "rounds": []}
            name = d.name.split(",")[0].replace(" ", "-")
            captures[d.name] = {"loop": write_capture(d.requests_only or d.workload,
                                                      os.path.join(tmp, f"{name}.pcap"))}
            if d.warmup:
                captures[d.name]["warmup"] = write_capture(
                    d.warmup, os.path.join(tmp, f"{name}-warmup.pcap"))
            print(f"{d.name}: predicted {predicted / 1e6:.2f} M packets/s per core",
                  file=sys.stderr)
        n = 0
        for r in range(args.rounds):
            order = chosen[r % len(chosen):] + chosen[:r % len(chosen)]
            for d in order:
                n += 1
                rate = measure(d, captures[d.name], floem, replay, tmp, args.seconds, n)
                results[d.name]["rounds"].append(rate)          # type: ignore[union-attr]
                print(f"round {r + 1}: {d.name}: {rate / 1e6:.2f} M packets/s per core",
                      file=sys.stderr)
        for r in results.values():
            r["measured"] = statistics.median(r["rounds"])      # type: ignore[arg-type]
    if other:
        print(other + "\n")
    print(table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
