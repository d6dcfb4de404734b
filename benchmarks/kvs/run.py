#!/usr/bin/env python3
"""The key-value store's designs side by side: host CPU per request, throughput, hit rate, DMA.

Usage: python3 benchmarks/kvs/run.py [--net pcap,udp] [--pcap-requests N] [--udp-requests N]
                                     [--keys N] [--only NAME,...] [--value-max N]
                                     [--repeats N] [--json FILE] [--loc-only] [--demo]
       python3 benchmarks/kvs/run.py --short   # SHORT's designs, one run of 2,000 requests

Every configuration (CONFIGS below: the Floem paper's Figure 8 designs, Table 2's cache
sizes, and its H2/H3/H4 comparisons) serves the paper's workload, made by the KVS's own
driver (examples/kvs/load.py: 100,000 keys of 32 bytes, 64-byte values, Zipf 0.9, 90% GET,
every key SET first), NIC designs on the emulated NIC, in two ways:

* ``pcap``: the workload as a capture, replayed through ``floem run --net pcap`` as fast as
  the pipeline goes (deterministic input, no client on the measured path, network I/O as
  cheap as DPDK's); twice, the preload alone and then the preload and N requests, each
  number the difference over N so the preload cancels. While a replay runs, SIGUSR1 makes
  every process print its counters; the snapshot taken once the last reply has gone out is
  the measurement (the sync layer keeps polling by DMA when idle).
* ``udp``: live, over kernel UDP: load.py preloads, the counters are snapshot (SIGUSR1),
  load.py sends N requests (closed loop, 32 outstanding), and the counters again.

Host CPU per request is the work of every host thread (the turns of its loop that found
work, less their waits for room in a full queue) scaled to CPU time by the share of its
runnable time the thread was on a core, over the requests. Also: requests/s (pcap: the
extra requests over the extra replay time; udp: what the client saw), NIC cache hit rate,
and for pcap DMA requests and bytes and NIC work (busy NIC worker threads) per request. Prints Markdown tables and the lines of code per
design; --json writes the raw numbers. --demo is the README's demo: three designs, live,
30,000 requests after the preload, in well under a minute once built.
"""
from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KVS_DIR = os.path.join(ROOT, "examples", "kvs")
KVS = os.path.join(KVS_DIR, "kvs.py")
sys.path.insert(0, KVS_DIR)

from floem.explore.counters import Counters, parse  # noqa: E402
from floem.explore.measure import handles_sigusr1  # noqa: E402

#: name -> (-D definitions, extra floem options). Table 2 (Floem paper): bucket counts and
#: entries per bucket (0: an unbounded chain) of the NIC cache configurations #1-#6.
TABLE2 = {1: (2 ** 15, 0), 2: (2 ** 15, 5), 3: (2 ** 14, 5), 4: (2 ** 13, 5), 5: (2 ** 12, 5),
          6: (2 ** 11, 5)}
CONFIGS = {
    "cpu": (["design=cpu"], []),
    "split": (["design=split"], []),
    "split-pointer": (["design=split-pointer"], []),
    "split / own queues (H2)": (["design=split", "share_queues=false"], []),
    "split / all fields (H3)": (["design=split"], ["--send-all-fields"]),
    "cache-wt #2": (["design=cache-wt", f"buckets={2 ** 15}", "entries=5"], []),
    **{f"cache-wb #{n}": (["design=cache-wb", f"buckets={b}", f"entries={e}"], [])
       for n, (b, e) in TABLE2.items()},
    "cache-wb #2 / no sync layer (H4)": (["design=cache-wb", f"buckets={2 ** 15}", "entries=5"],
                                        ["--no-sync-layer"]),
    "cache-wb #6 / no sync layer (H4)": (["design=cache-wb", f"buckets={2 ** 11}", "entries=5"],
                                        ["--no-sync-layer"]),
    "split / no sync layer (H4)": (["design=split"], ["--no-sync-layer"]),
    "external": (["design=external"], []),
}
#: The configurations of --short: a host design and a NIC design with a cache, so that
#: every column is computed.
SHORT = ("cpu", "cache-wb #2")


def floem_command() -> str:
    found = shutil.which("floem") or os.path.join(ROOT, ".venv", "bin", "floem")
    if not os.path.exists(found):
        sys.exit("run.py: no `floem` on PATH (export PATH=/path/to/floem/.venv/bin:$PATH)")
    return found


class FloemRun:
    """``floem run kvs.py`` for one configuration in the background, its stderr kept so
    SIGUSR1 can snapshot the counters; stopped with SIGINT on leaving the ``with``."""

    def __init__(self, floem: str, name: str, value_max: int, *options: str) -> None:
        defines, extra = CONFIGS[name]
        self.command = [floem, "run", KVS, *options, "--report", *extra]
        for d in defines + [f"value_max={value_max}"]:
            self.command += ["-D", d]

    def __enter__(self) -> FloemRun:
        self._err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=self._err,
                                     text=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait()
        self._err.close()

    def _stderr(self) -> str:
        self._err.seek(0)
        return self._err.read()

    def check(self, deadline: float) -> None:
        """Exit with the run's stderr if it stopped or ``deadline`` (monotonic) has passed."""
        if self.proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"run.py: {' '.join(self.command)} failed:\n{self._stderr()[-4000:]}")

    def counters(self, settle: float) -> Snapshot:
        """Ask every process for its counters (SIGUSR1); the snapshot ``settle`` s later."""
        self.proc.send_signal(signal.SIGUSR1)
        time.sleep(settle)
        return Snapshot.parse(self._stderr().splitlines())


SPAN = re.compile(r"^floem: net pcap: replay span (\d+) ns")
DMA = re.compile(r"^floem: nic dma: requests (\d+), descriptors \d+, bytes read (\d+), "
                 r"bytes written (\d+)")


@dataclass(frozen=True)
class Snapshot:
    """A run's counters (the model's, floem.explore.counters) and what this benchmark reads
    besides: the pcap replay's span and the NIC's DMA requests and bytes (polling included),
    each the latest value printed."""

    counters: Counters
    span_ns: int = 0
    dma_requests: int = 0
    dma_bytes: int = 0

    @staticmethod
    def parse(lines: list[str]) -> Snapshot:
        span = requests = dma_bytes = 0
        for line in lines:
            if m := SPAN.match(line):
                span = int(m.group(1))
            elif m := DMA.match(line):
                requests, dma_bytes = int(m.group(1)), int(m.group(2)) + int(m.group(3))
        return Snapshot(parse(lines), span, requests, dma_bytes)

    def minus(self, other: Snapshot) -> Snapshot:
        return Snapshot(self.counters.minus(other.counters), self.span_ns - other.span_ns,
                        self.dma_requests - other.dma_requests, self.dma_bytes - other.dma_bytes)


def per_request(d: Counters, requests: int) -> dict[str, float]:
    """Host and NIC work per request and the NIC cache hit rate of a counter difference."""
    lookups = d.hits + d.misses
    return {"host_us": d.host_cpu_ns / requests / 1e3,
            "hit_rate": d.hits / lookups if lookups else float("nan"),
            "nic_us": d.nic_cpu_ns / requests / 1e3}


def replay(floem: str, name: str, value_max: int, pcap: str, frames: int) -> Snapshot:
    """Replay ``pcap`` through one configuration; the counters when every reply is out."""
    with FloemRun(floem, name, value_max, "--net", "pcap", "--pcap-in", pcap,
                  "--duration", "1800") as run:
        last_tx, stable, deadline = -1, 0, time.monotonic() + 900
        while stable < 2:
            time.sleep(0.5)
            run.check(deadline)
            if not handles_sigusr1(run.proc.pid):
                continue
            s = run.counters(0.3)
            c = s.counters
            done = c.rx == frames and c.tx >= frames and c.tx == last_tx
            stable = stable + 1 if done else 0
            last_tx = c.tx
        return s


def measure_pcap(floem: str, name: str, pcaps: dict[str, tuple[str, int]], requests: int,
                 value_max: int) -> dict[str, float]:
    runs = {phase: replay(floem, name, value_max, pcap, frames)
            for phase, (pcap, frames) in pcaps.items()}
    d = runs["workload"].minus(runs["preload"])
    return {**per_request(d.counters, requests),
            "requests_per_s": requests / (d.span_ns / 1e9) if d.span_ns > 0 else 0.0,
            "dma_requests": d.dma_requests / requests, "dma_bytes": d.dma_bytes / requests}


def repeated(names: list[str], repeats: int, measure, mode: str) -> dict[str, dict[str, float]]:
    """Each configuration ``repeats`` times, the order reversed every other round; medians."""
    runs: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    for r in range(repeats):
        for name in (names if r % 2 == 0 else reversed(names)):
            runs[name].append(measure(name))
            print(f"  {mode} {r + 1}/{repeats}: {name}: {runs[name][-1]['host_us']:.3f} µs/request "
                  "of host CPU", file=sys.stderr, flush=True)
    return {n: {k: statistics.median(run[k] for run in runs[n]) for k in runs[n][0]}
            for n in names}


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure_udp(floem: str, name: str, keys: int, requests: int,
                value_max: int) -> dict[str, float]:
    """Serve a free UDP port; snapshot after load.py's preload and after its N requests."""
    import load
    port = free_udp_port()
    server = [load.Server("127.0.0.1", port)]
    with FloemRun(floem, name, value_max, "--port", str(port), "--timeout", "1800") as run:
        deadline = time.monotonic() + 300
        while not load.answers_noop(server[0]):
            run.check(deadline)
            time.sleep(0.5)
        load.run_live(load.Workload(keys=keys, seed=1), server, requests=1)
        before = run.counters(0.5)
        summary = load.run_live(load.Workload(keys=keys, seed=1, preload=False), server,
                                requests=requests)
        d = run.counters(0.5).minus(before).counters
    if summary.errors or summary.timeouts:
        sys.exit(f"run.py: {name} over udp: {summary.format()}")
    return {**per_request(d, requests), "requests_per_s": summary.requests_per_second,
            "p50_us": summary.latency_us["p50"], "p99_us": summary.latency_us["p99"]}


# -- lines of code ------------------------------------------------------------

def design_lines() -> dict[str, list[str]]:
    """Each design's code in kvs.py: its function and the helpers it calls, without blank
    lines, comments and docstrings."""
    with open(KVS) as f:
        source = f.read()
    tree = ast.parse(source)
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}

    def used(name: str, seen: set[str]) -> list[str]:
        if name in seen:
            return []
        seen.add(name)
        node = defs[name]
        names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in defs]
        return [name] + [x for n in names for x in used(n, seen)]

    def code(name: str) -> list[str]:
        node = defs[name]
        doc_lines = set()
        for d in ast.walk(node):
            if isinstance(d, ast.Expr) and isinstance(d.value, ast.Constant) \
                    and isinstance(d.value.value, str):
                doc_lines |= set(range(d.lineno, d.end_lineno + 1))
        lines = source.splitlines()[node.lineno - 1:node.end_lineno]
        return [ln.strip() for i, ln in enumerate(lines, node.lineno)
                if ln.strip() and not ln.strip().startswith("#") and i not in doc_lines]

    designs = {"cpu": ["cpu"], "split": ["split"], "cache-wt / cache-wb": ["cache"],
               "external": ["split", "external_store"]}
    def lines(functions: list[str]) -> list[str]:
        seen: set[str] = set()                  # a helper shared by two functions counts once
        return [ln for fn in functions for n in used(fn, seen) for ln in code(n)]

    return {d: lines(fns) for d, fns in designs.items()}


def loc_table() -> str:
    lines = design_lines()
    cpu = lines["cpu"]
    rows = ["| design | lines (kvs.py, with the helpers it uses) | lines added or changed vs cpu |",
            "| --- | --- | --- |"]
    for design, code in lines.items():
        diff = [d for d in difflib.ndiff(cpu, code) if d[:2] in ("+ ", "- ")]
        added = sum(1 for d in diff if d.startswith("+ "))
        rows.append(f"| {design} | {len(code)} | {added if design != 'cpu' else '-'} |")
    with open(os.path.join(KVS_DIR, "elements.py")) as f:
        elements = sum(1 for ln in f if ln.strip() and not ln.strip().startswith("#"))
    with open(os.path.join(KVS_DIR, "external", "server.c")) as f:
        server = sum(1 for ln in f if ln.strip() and not ln.strip().startswith(("/*", "*", "//")))
    rows.append(f"\nShared by every design: elements.py ({elements} lines), proto.c/h and "
                f"store.c/h (C). The external design adds external/server.c ({server} lines "
                "of C).")
    return "\n".join(rows)


PCAP_COLUMNS = [
    ("requests/s", lambda r: f"{r['requests_per_s']:,.0f}"),
    ("NIC cache hit rate", lambda r: _rate(r)),
    ("DMA requests/request", lambda r: f"{r['dma_requests']:.2f}"),
    ("DMA bytes/request", lambda r: f"{r['dma_bytes']:,.0f}"),
    ("NIC work µs/request", lambda r: f"{r['nic_us']:.3f}"),
]
UDP_COLUMNS = [
    ("requests/s (client)", lambda r: f"{r['requests_per_s']:,.0f}"),
    ("latency p50 / p99 µs", lambda r: f"{r['p50_us']:.0f} / {r['p99_us']:.0f}"),
    ("NIC cache hit rate", lambda r: _rate(r)),
    ("NIC work µs/request", lambda r: f"{r['nic_us']:.3f}"),
]


def table(results: dict[str, dict[str, float]], columns: list) -> str:
    """A Markdown table: host CPU per request and the saving against cpu, then ``columns``."""
    base = results.get("cpu", {}).get("host_us")
    heads = ["configuration", "host CPU µs/request", "host CPU saved vs cpu"]
    rows = [heads + [h for h, _ in columns], ["---"] * (len(heads) + len(columns))]
    for name, r in results.items():
        rows.append([name, _host(name, r), "-" if name in UNCOUNTED else _saving(base, r)]
                    + [cell(r) for _, cell in columns])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


#: Configurations whose host work runs on threads the runtime does not count (the
#: external design's are its C program's own).
UNCOUNTED = {"external"}


def _host(name: str, r: dict[str, float]) -> str:
    return "not counted" if name in UNCOUNTED else f"{r['host_us']:.3f}"


def _saving(base: float | None, r: dict[str, float]) -> str:
    if not base:
        return "-"
    return f"{base / r['host_us']:.1f}x" if r["host_us"] > 0 else "all"


def _rate(r: dict[str, float]) -> str:
    return "-" if r["hit_rate"] != r["hit_rate"] else f"{100 * r['hit_rate']:.1f}%"


DEMO = {"cpu": "Figure 1a: one CPU segment parses, serves and replies",
        "split": "Figure 1b: the NIC parses and steers, the host serves, the NIC replies",
        "cache-wb #2": "Figure 1c: a write-back cache on the NIC in front of the host's store"}


def demo(floem: str) -> None:
    """Three designs of the paper's key-value store, each serving load.py over UDP."""
    print("The Floem paper's key-value store in three designs, one `-D design=` apart "
          "(docs/kvs.md):\n")
    for name, what in DEMO.items():
        print(f"  {name:12s} {what}")
    print("\nEach is built (floem run), preloaded and then sent 30,000 requests of the "
          "paper's workload\n(100,000 keys, Zipf 0.9, 90% GET) by examples/kvs/load.py over "
          "UDP; the NIC is emulated.\n", flush=True)
    results = {}
    for name in DEMO:
        print(f"  {name}: building and serving ...", file=sys.stderr, flush=True)
        results[name] = measure_udp(floem, name, keys=100_000, requests=30_000, value_max=64)
    print(table(results, UDP_COLUMNS))
    print("\nHost CPU per request counts the host threads' work (busy turns, scaled to CPU "
          "time); the NIC\ndesigns move packet I/O and, with the cache, most requests off the "
          "host. The full comparison:\npython3 benchmarks/kvs/run.py (docs/benchmarks.md).")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--net", default="pcap,udp", help="pcap, udp or both (default)")
    ap.add_argument("--pcap-requests", type=int, default=1_000_000,
                    help="replayed requests after the preload (ten times it: the difference "
                         "of two replays must dwarf the preload's noise)")
    ap.add_argument("--udp-requests", type=int, default=200_000,
                    help="live requests after the preload")
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--value-max", type=int, default=64,
                    help="-D value_max for every design (sizes queue entries; default: the "
                         "workload's 64-byte values)")
    ap.add_argument("--only", help="comma-separated configuration names (default: all)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="runs of every configuration, in alternating order; medians reported")
    ap.add_argument("--json", help="write the raw numbers here")
    ap.add_argument("--loc-only", action="store_true", help="print the lines-of-code table only")
    ap.add_argument("--demo", action="store_true", help="cpu, split and cache-wb side by side, "
                    "live over UDP, 30,000 requests (scripts/demo.sh)")
    ap.add_argument("--short", action="store_true",
                    help=f"one run of {', '.join(SHORT)} (unless --only says otherwise), 1,000 "
                         "keys and 2,000 requests: checks that everything builds and runs")
    args = ap.parse_args()
    if args.short:
        args.repeats, args.keys, args.pcap_requests, args.udp_requests = 1, 1000, 2000, 2000
        args.only = args.only or ",".join(SHORT)
    if args.loc_only:
        print(loc_table())
        return
    if args.demo:
        demo(floem_command())
        return
    import load
    names = [n.strip() for n in args.only.split(",")] if args.only else list(CONFIGS)
    unknown = [n for n in names if n not in CONFIGS]
    modes = args.net.split(",")
    if unknown or not set(modes) <= {"pcap", "udp"}:
        sys.exit(f"run.py: unknown configuration(s) {unknown} or --net {args.net}; "
                 f"configurations: {list(CONFIGS)}")
    floem = floem_command()
    start = time.monotonic()
    results: dict[str, dict[str, dict[str, float]]] = {}
    if "pcap" in modes:
        workdir = tempfile.mkdtemp(prefix="kvs-bench-")
        workload = load.Workload(keys=args.keys, seed=1)
        pcaps = {}
        for phase, requests in (("preload", 0), ("workload", args.pcap_requests)):
            path = os.path.join(workdir, f"{phase}.pcap")
            pcaps[phase] = (path, load.write_pcap(workload, path, requests=requests))
        results["pcap"] = repeated(names, args.repeats, lambda name: measure_pcap(
            floem, name, pcaps, args.pcap_requests, args.value_max), "pcap")
        shutil.rmtree(workdir)
    if "udp" in modes:
        results["udp"] = repeated(names, args.repeats, lambda name: measure_udp(
            floem, name, args.keys, args.udp_requests, args.value_max), "udp")
    print(f"\n{len(names)} configurations, {args.repeats} runs each (medians), a preload of "
          f"{args.keys:,} SETs then {args.pcap_requests:,} replayed / {args.udp_requests:,} live "
          f"requests, -D value_max={args.value_max}, {time.monotonic() - start:.0f} s, "
          f"load average {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    if "pcap" in results:
        print("\nReplayed captures (--net pcap):\n\n" + table(results["pcap"], PCAP_COLUMNS))
    if "udp" in results:
        print("\nLive over kernel UDP (--net udp, load.py):\n\n" + table(results["udp"], UDP_COLUMNS))
    print("\n" + loc_table())


if __name__ == "__main__":
    main()
