#!/usr/bin/env python3
"""Sync layer vs blocking unbatched DMA: NIC -> CPU transfer of 32/64/128/256-byte entries.

Usage: python3 benchmarks/sync_layer/run.py [--repeats 7] [--sizes 32,64,128,256]
                                            [--packets-sync N] [--packets-blocking N]
                                            [--nic-managers N]
                                            [-- EXTRA FLOEM OPTIONS, e.g. --dma-latency-ns 500]
       python3 benchmarks/sync_layer/run.py --short   # 64-byte entries, one run of each, briefly

Runs transfer.py (see README.md) with `floem run --report` (with `--nic-managers N` when
given), once with the sync layer and once with --no-sync-layer, alternating, `--repeats`
times per entry size, and prints two Markdown tables: medians, and the fastest run of each
configuration.
Same DMA cost model for both (the runtime's defaults unless extra options say otherwise).
"""
import argparse
import os
import statistics
import sys
import time

from transfer_runs import floem_command, managers_text, run_transfer

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "transfer.py")
MODES = {"sync": [], "blocking": ["--no-sync-layer"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--sizes", default="32,64,128,256")
    ap.add_argument("--packets-sync", type=int, default=2_000_000)
    ap.add_argument("--packets-blocking", type=int, default=200_000)
    ap.add_argument("--nic-managers", type=int, default=None, metavar="N",
                    help="floem run --nic-managers N (default: the default configuration)")
    ap.add_argument("extra", nargs="*", help="extra floem options (after --)")
    ap.add_argument("--short", action="store_true",
                    help="64-byte entries only, one run of each mode (20,000 packets with the "
                         "sync layer, 2,000 blocking): checks that everything builds and runs")
    args = ap.parse_args()
    if args.short:
        args.repeats, args.sizes, args.packets_sync, args.packets_blocking = 1, "64", 20_000, 2000
    floem = floem_command()
    sizes = [int(s) for s in args.sizes.split(",")]
    packets = {"sync": args.packets_sync, "blocking": args.packets_blocking}
    results = {(s, m): [] for s in sizes for m in MODES}
    start, load_before = time.monotonic(), os.getloadavg()[0]
    for rep in range(args.repeats):
        for size in sizes:
            for mode in (MODES if rep % 2 == 0 else reversed(list(MODES))):
                r, _ = run_transfer(floem, APP, {"ENTRY_BYTES": str(size)}, MODES[mode],
                                    packets[mode], args.nic_managers, args.extra,
                                    f"entry {size} bytes")
                results[size, mode].append(r)
                print(f"run {rep + 1}/{args.repeats}: {size:3d} B {mode:8s} {r['pps'] / 1e6:7.3f} Mpackets/s",
                      file=sys.stderr, flush=True)

    def median_run(runs):
        return {k: statistics.median(r[k] for r in runs) for k in runs[0]}

    def fastest_run(runs):
        return max(runs, key=lambda r: r["pps"])

    setting = (f"{args.packets_sync} packets with the sync layer, {args.packets_blocking} blocking; "
               f"floem run {managers_text(args.nic_managers)}"
               f"{' ' + ' '.join(args.extra) if args.extra else ''}; "
               f"{os.cpu_count()} CPUs")
    for title, pick in ((f"medians of {args.repeats} alternating runs", median_run),
                        (f"fastest of the {args.repeats} runs of each configuration (the least "
                         f"disturbed one; its own DMA counts)", fastest_run)):
        print(f"Sync layer vs blocking DMA, NIC -> CPU, {title} ({setting})")
        print()
        print("| entry | sync Mpkt/s | blocking Mpkt/s | ratio | DMA req/pkt sync | DMA req/pkt blocking "
              "| DMA bytes/pkt sync (read + written) | DMA bytes/pkt blocking (read + written) |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for size in sizes:
            s, b = pick(results[size, "sync"]), pick(results[size, "blocking"])
            print(f"| {size} B | {s['pps'] / 1e6:.2f} | {b['pps'] / 1e6:.3f} | {s['pps'] / b['pps']:.1f}x "
                  f"| {s['req']:.3f} | {b['req']:.2f} "
                  f"| {s['read']:.0f} + {s['written']:.0f} | {b['read']:.1f} + {b['written']:.0f} |")
        print()
    ratios = [r_s["pps"] / r_b["pps"] for size in sizes
              for r_s, r_b in zip(results[size, "sync"], results[size, "blocking"])]
    extra = max(r["extra_requests"] for rs in results.values() for r in rs)
    print(f"Per-run ratios (sync run / blocking run of the same repeat): {min(ratios):.1f}x to {max(ratios):.1f}x.")
    print(f"DMA counts are for the transfer window (go .. done); the whole-run `--report` line "
          f"counted at most {extra} more requests per run (start-up reads, go/done polls).")
    print(f"Total time {time.monotonic() - start:.0f} s; 1-minute load average {load_before:.2f} "
          f"before, {os.getloadavg()[0]:.2f} after (other work on the machine skews the numbers).")


if __name__ == "__main__":
    main()
