"""memcached 1.6 against the key-value store's ``cpu`` design, side by side, over kernel UDP.

    python3 benchmarks/kvs/vs_memcached.py                 # 3 rounds, about 5 minutes
    python3 benchmarks/kvs/vs_memcached.py --rounds 1 --seconds 2 --json out.json

Servers, each on a UDP port of 127.0.0.1: memcached with one worker thread (``-t 1``) and
with two, and ``floem run examples/kvs/kvs.py -D design=cpu`` with one thread and with two.
Clients, each run against every server in turn, the servers' order alternating between
rounds:

* ``memcaslap -U`` (libmemcached-tools; the text protocol, 90% get, 64-byte values) for
  ``--seconds``: requests/s as it counts them;
* ``udp_blast`` (runtime/tests/udp_blast.c) in template mode, sending the paper's workload
  (examples/kvs/load.py: 100,000 keys of 32 bytes, 64-byte values, Zipf 0.9, 90% GET, in
  the binary protocol) as fast as two sockets can, the keys preloaded first: requests
  answered per second;
* ``load.py --rate`` (an open loop well below either server's saturation): the p50 and
  p99 latency of a request.

Server CPU per request: the CPU time of the server's processes (utime + stime, /proc)
during a client's run over the requests it answered; cores: that CPU time over the run's
wall time. The store's threads poll, so it takes its threads' cores whatever the load.
Client and server share the machine's cores. Every figure is the median over the rounds;
ratios are against memcached with the same number of threads, measured in the same run.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from typing import Callable, Iterator

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "kvs"))
import load  # noqa: E402
from run import free_udp_port  # noqa: E402  (benchmarks/kvs/run.py)

KVS = os.path.join(ROOT, "examples", "kvs", "kvs.py")
BLAST = os.path.join(ROOT, "runtime", "tests", "udp_blast.c")
#: Where a binary request's opaque field is in a datagram: the 8-byte frame header, then 12.
OPAQUE_AT = 8 + 12
TEMPLATES = 100_000
SERVERS = ("memcached -t 1", "memcached -t 2", "floem cpu, 1 thread", "floem cpu, 2 threads")
CLIENTS = ("memcaslap", "udp_blast", "latency")


def tree_cpu_seconds(root: int) -> float:
    """The CPU time (user + system) of process ``root`` and its live descendants."""
    stats = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            stats[int(pid)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    ticks, tree = 0, {root}
    for pid in sorted(stats):               # a child's pid is usually above its parent's
        parent, used = stats[pid]
        if pid == root or parent in tree:
            tree.add(pid)
            ticks += used
    return ticks / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def server(name: str, floem: str) -> Iterator[tuple[int, int]]:
    """Start server ``name`` (one of SERVERS) in a session of its own; yield its port and
    process id once it answers a NOOP."""
    port = free_udp_port()
    threads = name.split()[-2] if name.startswith("floem") else name.split()[-1]
    if name.startswith("memcached"):
        command = [shutil.which("memcached") or "memcached", "-U", str(port), "-p", "0",
                   "-t", threads, "-l", "127.0.0.1", "-u", "root", "-m", "1024"]
    else:
        command = [floem, "run", KVS, "-D", "design=cpu", "-D", f"cores={threads}",
                   "--port", str(port)]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not load.answers_noop(load.Server("127.0.0.1", port), 0.2):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{name} did not start: {' '.join(command)}\n"
                                 + proc.stderr.read().decode())
        yield port, proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def run_memcaslap(port: int, seconds: float) -> int:
    """memcaslap's requests (gets and sets) against ``port``."""
    done = subprocess.run(["memcaslap", "-s", f"127.0.0.1:{port}", "-U", "-t", f"{seconds:g}s",
                           "-T", "1", "-c", "16", "-X", "64"],
                          capture_output=True, text=True, timeout=seconds + 60)
    counts = dict(re.findall(r"^(cmd_get|cmd_set): (\d+)$", done.stdout, re.M))
    if done.returncode != 0 or len(counts) != 2:
        raise SystemExit(f"memcaslap failed:\n{done.stdout}{done.stderr}")
    return sum(map(int, counts.values()))


def write_templates(path: str) -> None:
    """The paper's workload as udp_blast's templates (a 16-bit length, then the datagram)."""
    workload = load.Workload()
    with open(path, "wb") as f:
        for op in workload.operations(TEMPLATES):
            datagram = op.encode(0, 0)
            f.write(struct.pack("<H", len(datagram)) + datagram)


def run_blast(exe: str, templates: str, port: int, seconds: float) -> int:
    """The requests udp_blast's two sockets had answered."""
    with tempfile.TemporaryDirectory() as replies:
        done = subprocess.run([exe, str(port), "2", f"{seconds:g}", str(1 << 30), templates,
                               str(OPAQUE_AT), os.path.join(replies, "r")],
                              capture_output=True, text=True, timeout=seconds + 90)
    answered = re.findall(r"answered (\d+)", done.stdout)
    if done.returncode != 0 or len(answered) != 2:
        raise SystemExit(f"udp_blast failed:\n{done.stdout}{done.stderr}")
    return sum(map(int, answered))


def run_latency(port: int, seconds: float, rate: float) -> tuple[int, dict[str, float]]:
    """load.py's open loop at ``rate``: requests answered and the p50/p99 latency (µs)."""
    summary = load.run_live(load.Workload(keys=10_000), [load.Server("127.0.0.1", port)],
                            requests=None, duration=seconds, rate=rate)
    if not summary.ok:
        raise SystemExit(f"load.py failed:\n{summary.format()}")
    return summary.answered, {"p50_us": summary.latency_us["p50"],
                              "p99_us": summary.latency_us["p99"]}


def measure(name: str, floem: str, clients: dict[str, Callable[[int], tuple[int, dict]]]
            ) -> dict[str, dict[str, float]]:
    """Every client against server ``name``: requests/s, CPU µs per request, cores."""
    results = {}
    with server(name, floem) as (port, pid):
        load.run_live(load.Workload(), [load.Server("127.0.0.1", port)], requests=1)
        for client, run in clients.items():
            cpu, start = tree_cpu_seconds(pid), time.monotonic()
            answered, extra = run(port)
            wall, cpu = time.monotonic() - start, tree_cpu_seconds(pid) - cpu
            results[client] = {"requests_per_s": answered / wall,
                               "cpu_us_per_request": 1e6 * cpu / max(answered, 1),
                               "cores": cpu / wall, **extra}
    return results


def medians(rounds: list[dict[str, dict[str, dict[str, float]]]]) -> dict:
    """Each figure's median over the rounds, by server and client."""
    return {s: {c: {k: statistics.median(r[s][c][k] for r in rounds) for k in rounds[0][s][c]}
                for c in rounds[0][s]} for s in rounds[0]}


def table(result: dict) -> str:
    """The medians as markdown, with each floem figure's ratio to memcached's."""
    rows = ["| server | client | requests/s | server cores | per server core | vs memcached | "
            "server CPU µs/request | p50 / p99 µs |", "| --- " * 8 + "|"]
    for name in SERVERS:
        peer = f"memcached -t {name.split()[-2]}" if name.startswith("floem") else None
        for client, r in result[name].items():
            per_core = r["requests_per_s"] / max(r["cores"], 1e-9)
            if client == "latency":         # an offered load, not a capacity
                rows.append(f"| {name} | {client} at {r['requests_per_s']:,.0f}/s | | "
                            f"{r['cores']:.2f} | | | {r['cpu_us_per_request']:.2f} | "
                            f"{r['p50_us']:.0f} / {r['p99_us']:.0f} |")
                continue
            ratio = ""
            if peer:
                p = result[peer][client]
                ratio = f"{per_core / (p['requests_per_s'] / max(p['cores'], 1e-9)):.2f}x"
            rows.append(f"| {name} | {client} | {r['requests_per_s']:,.0f} | {r['cores']:.2f} | "
                        f"{per_core:,.0f} | {ratio} | {r['cpu_us_per_request']:.2f} | |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4.0, help="each client's run")
    ap.add_argument("--rate", type=float, default=5000,
                    help="the latency run's offered load, requests/s")
    ap.add_argument("--json", help="write the medians here")
    args = ap.parse_args()
    floem = shutil.which("floem") or sys.exit("floem is not on PATH (scripts/setup.sh)")
    shutil.which("memcaslap") or sys.exit("memcaslap is missing (libmemcached-tools)")
    with tempfile.TemporaryDirectory() as tmp:
        exe, templates = os.path.join(tmp, "udp_blast"), os.path.join(tmp, "templates")
        subprocess.run([os.environ.get("CC", "gcc"), "-std=c11", "-O2", "-pthread", BLAST,
                        "-o", exe], check=True)
        write_templates(templates)
        clients = {"memcaslap": lambda port: (run_memcaslap(port, args.seconds), {}),
                   "udp_blast": lambda port: (run_blast(exe, templates, port, args.seconds), {}),
                   "latency": lambda port: run_latency(port, args.seconds, args.rate)}
        rounds = []
        for r in range(args.rounds):
            order = SERVERS if r % 2 == 0 else SERVERS[::-1]
            rounds.append({name: measure(name, floem, clients) for name in order})
            print(f"round {r + 1} of {args.rounds} done", file=sys.stderr)
    result = medians(rounds)
    print(table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
