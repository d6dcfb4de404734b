#!/usr/bin/env python3
"""Only live fields vs the whole per-packet state across a NIC -> CPU queue.

Usage: python3 benchmarks/live_fields/run.py [--repeats 7] [--quarters 1,2,3,4] [--packets N]
                                             [--nic-managers N]
                                             [-- EXTRA FLOEM OPTIONS, e.g. --dma-gbps 1]
       python3 benchmarks/live_fields/run.py --short   # 1/4 live, one run of 20,000 packets

Runs live.py (see README.md) with `floem run --report` (with `--nic-managers N` when
given), once as built (only the live fields cross the queue) and once with
--send-all-fields (the whole 256-byte state crosses), alternating, `--repeats` times per live fraction, and prints
two Markdown tables: medians, and the fastest run of each configuration. Same DMA cost
model for both (the runtime's defaults unless extra options say otherwise); both use the
sync layer. 4/4 live is the control: both variants send the same bytes, so its ratio
shows the noise.
"""
import argparse
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sync_layer"))
from transfer_runs import floem_command, managers_text, run_transfer  # noqa: E402
APP = os.path.join(HERE, "live.py")
ENTRY = re.compile(r"^\s+entry: (\d+) bytes", re.M)
VARIANTS = {"live": [], "all": ["--send-all-fields"]}


def run_once(floem, quarters, variant, packets, managers, extra):
    """One run of live.py: run_transfer's figures and the queue entry's size."""
    r, stderr = run_transfer(floem, APP, {"LIVE_QUARTERS": str(quarters)}, VARIANTS[variant],
                             packets, managers, extra, f"live {quarters}/4 of 256 bytes")
    entry = ENTRY.search(stderr)
    if not entry:
        sys.exit(f"run.py: live.py printed no queue entry size:\n{stderr}")
    return {**r, "entry": int(entry.group(1))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--quarters", default="1,2,3,4")
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--nic-managers", type=int, default=None, metavar="N",
                    help="floem run --nic-managers N (default: the default configuration)")
    ap.add_argument("extra", nargs="*", help="extra floem options (after --)")
    ap.add_argument("--short", action="store_true",
                    help="1/4 live only, one run of 20,000 packets of each variant: checks that "
                         "everything builds and runs")
    args = ap.parse_args()
    if args.short:
        args.repeats, args.quarters, args.packets = 1, "1", 20_000
    floem = floem_command()
    quarters = [int(q) for q in args.quarters.split(",")]
    results = {(q, v): [] for q in quarters for v in VARIANTS}
    start, load_before = time.monotonic(), os.getloadavg()[0]
    for rep in range(args.repeats):
        for q in quarters:
            for variant in (VARIANTS if rep % 2 == 0 else reversed(list(VARIANTS))):
                r = run_once(floem, q, variant, args.packets, args.nic_managers, args.extra)
                results[q, variant].append(r)
                print(f"run {rep + 1}/{args.repeats}: {q}/4 live, send {variant:4s} "
                      f"{r['pps'] / 1e6:7.3f} Mpackets/s", file=sys.stderr, flush=True)

    def median_run(runs):
        return {k: statistics.median(r[k] for r in runs) for k in runs[0]}

    def fastest_run(runs):
        return max(runs, key=lambda r: r["pps"])

    setting = (f"{args.packets} packets per run; floem run {managers_text(args.nic_managers)}"
               f"{' ' + ' '.join(args.extra) if args.extra else ''}; {os.cpu_count()} CPUs")
    for title, pick in ((f"medians of {args.repeats} alternating runs", median_run),
                        (f"fastest of the {args.repeats} runs of each configuration (the least "
                         f"disturbed one; its own DMA counts)", fastest_run)):
        print(f"Live fields vs whole 256-byte state, NIC -> CPU through the sync layer, {title} ({setting})")
        print()
        print("| live | entry live / all | live-only Mpkt/s | all-fields Mpkt/s | ratio | DMA req/pkt live "
              "| DMA req/pkt all | DMA bytes/pkt live (read + written) | DMA bytes/pkt all (read + written) |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for q in quarters:
            lv, al = pick(results[q, "live"]), pick(results[q, "all"])
            print(f"| {q}/4 | {lv['entry']:.0f} / {al['entry']:.0f} B "
                  f"| {lv['pps'] / 1e6:.2f} | {al['pps'] / 1e6:.2f} | {lv['pps'] / al['pps']:.2f}x "
                  f"| {lv['req']:.3f} | {al['req']:.3f} "
                  f"| {lv['read']:.0f} + {lv['written']:.0f} | {al['read']:.0f} + {al['written']:.0f} |")
        print()
    extra = max(r["extra_requests"] for rs in results.values() for r in rs)
    for q in quarters:
        ratios = [a["pps"] / b["pps"] for a, b in zip(results[q, "live"], results[q, "all"])]
        print(f"{q}/4 live: per-repeat ratios " + ", ".join(f"{x:.2f}x" for x in ratios) + ".")
    print(f"DMA counts are for the transfer window (go .. done); the whole-run `--report` line "
          f"counted at most {extra} more requests per run (start-up reads, go/done polls).")
    print(f"Total time {time.monotonic() - start:.0f} s; 1-minute load average {load_before:.2f} "
          f"before, {os.getloadavg()[0]:.2f} after (other work on the machine skews the numbers).")


if __name__ == "__main__":
    main()
