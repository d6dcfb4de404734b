#!/usr/bin/env python3
"""The Storm topology's designs side by side: tuples/s and host CPU per tuple.

Usage: python3 benchmarks/storm/run.py [--tweets N] [--repeats N] [--only NAME,...] [--json FILE]
       python3 benchmarks/storm/run.py --short   # SHORT's designs, one run of 5,000 tweets

Every configuration (CONFIGS: the Floem paper's Figure 9 designs, shared and separate
output queues (its H2), and the bypass design without the sync layer (its H4)) runs the
default topology (examples/storm/topology.toml: three servers, 4 spouts, 4 counters,
4 intermediate rankers, 1 total ranker) over the same generated stream (Zipf user ids),
through examples/storm/run.py over kernel UDP on loopback, NIC designs on the emulated NIC.
Every run's ranking is checked against a Counter over the stream.

* tuples/s: tweets over the time from the first spout's first tuple to the total ranker's
  final ranking (the workers print both clocks).
* host CPU per tweet: the CPU time of the three host processes (workers, and in the cpu
  design the data plane too; not the emulated NIC processes), over the tweets.

The median of --repeats runs of each; configurations alternate run by run, so that a
change in the machine's load hits all of them alike. Prints a Markdown table; --json writes
the raw numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STORM = os.path.join(ROOT, "examples", "storm")
sys.path.insert(0, STORM)

from tweets import top_users, write_tweets  # noqa: E402

#: name -> (run.py arguments, what it is)
CONFIGS: dict[str, tuple[list[str], str]] = {
    "cpu": (["-D", "design=cpu"], "CPU-only: the data plane on host cores"),
    "cpu-separate": (["-D", "design=cpu", "-D", "shared_out=false"],
                     "CPU-only, an output queue instance per worker"),
    "split": (["-D", "design=split"], "split: demux, mux, transport on the NIC"),
    "split-separate": (["-D", "design=split", "-D", "shared_out=false"],
                       "split, an output queue instance per worker"),
    "bypass": (["-D", "design=bypass"], "bypass: split, local tuples stay on the host"),
    "bypass-no-sync": (["-D", "design=bypass", "--floem-option=--no-sync-layer"],
                       "bypass without the sync layer (H4)"),
}

#: The configurations of --short: the CPU-only design and one with the NIC.
SHORT = ("cpu", "bypass")

_CPU = re.compile(r"storm: cpu (\d+) ns")
_STARTED = re.compile(r"storm: spout\d+: started (\d+)")
_FINISHED = re.compile(r"storm: total: finished (\d+)")


def run_once(stream: str, tweets: int, args: list[str]) -> dict[str, float]:
    """One run of the topology: tuples/s and host CPU ns per tweet."""
    result = subprocess.run([sys.executable, os.path.join(STORM, "run.py"), "--input", stream,
                             *args], capture_output=True, text=True, timeout=1800)
    if result.returncode != 0 or result.stdout != top_users(stream, 10):
        raise RuntimeError(f"run {' '.join(args)} failed:\n{result.stderr[-2000:]}")
    started = [int(m) for m in _STARTED.findall(result.stderr)]
    finished = [int(m) for m in _FINISHED.findall(result.stderr)]
    cpu = [int(m) for m in _CPU.findall(result.stderr)]
    if not started or len(finished) != 1 or len(cpu) != 3:
        raise RuntimeError(f"run {' '.join(args)}: missing timing lines:\n{result.stderr[-2000:]}")
    seconds = (finished[0] - min(started)) / 1e9
    return {"tuples_per_s": tweets / seconds, "host_cpu_ns_per_tweet": sum(cpu) / tweets}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tweets", type=int, default=300_000)
    p.add_argument("--users", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", help="comma-separated configuration names")
    p.add_argument("--json", help="write the raw numbers here")
    p.add_argument("--short", action="store_true",
                   help=f"one run of {', '.join(SHORT)} (unless --only says otherwise) over "
                        "5,000 tweets, not built first: checks that everything builds and runs")
    args = p.parse_args()
    if args.short:
        args.tweets, args.repeats, args.only = 5000, 1, args.only or ",".join(SHORT)
    names = args.only.split(",") if args.only else list(CONFIGS)
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        p.error(f"unknown configuration(s) {', '.join(unknown)} (have {', '.join(CONFIGS)})")
    with tempfile.TemporaryDirectory() as tmp:
        stream = os.path.join(tmp, "tweets.txt")
        write_tweets(stream, tweets=args.tweets, users=args.users, zipf=1.1, seed=1)
        for name in names if not args.short else ():    # build everything before timing
            run_once(stream, args.tweets, CONFIGS[name][0])
        runs: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        for _ in range(args.repeats):
            for name in names:
                runs[name].append(run_once(stream, args.tweets, CONFIGS[name][0]))
    base = statistics.median(r["tuples_per_s"] for r in runs[names[0]])
    print(f"| configuration | tuples/s | vs {names[0]} | host CPU ns/tweet | what |")
    print("| --- | --- | --- | --- | --- |")
    table = {}
    for name in names:
        tps = statistics.median(r["tuples_per_s"] for r in runs[name])
        cpu = statistics.median(r["host_cpu_ns_per_tweet"] for r in runs[name])
        table[name] = {"tuples_per_s": tps, "host_cpu_ns_per_tweet": cpu, "runs": runs[name]}
        print(f"| {name} | {tps / 1e3:,.1f} k | {tps / base:.2f}x | {cpu:,.0f} "
              f"| {CONFIGS[name][1]} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tweets": args.tweets, "repeats": args.repeats, "configurations": table},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
