#!/usr/bin/env python3
"""The host model's cycles per instruction, measured: emulated NIC CPU time over instructions.

Usage: python3 benchmarks/explore/calibrate_host.py EXPLORATION.json [--ghz 2.6]

Reads an exploration's JSON (``floem explore ... -o BASE`` writes BASE.json) and, for
every configuration that ran a NIC segment on one core without an engine, divides the
emulated NIC worker's CPU time per packet on this machine (measured in the native run)
by the instructions callgrind counted per packet, times the clock: this machine's
cycles per instruction on that code. Prints each and their median, the figure for
floem/platforms/host.toml. The CPU time includes the emulated packet I/O, which the
count leaves out, so light functions overstate it.
"""
from __future__ import annotations

import argparse
import json
import statistics


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exploration", help="the JSON written by floem explore")
    ap.add_argument("--ghz", type=float, default=2.6, help="this machine's clock")
    args = ap.parse_args()
    with open(args.exploration) as f:
        rows = json.load(f)["rows"]
    seen = {}
    for r in rows:
        config = f"{r['study']}: {r['configuration']}"
        if (r["error"] or not r["nic_instructions_per_packet"] or r["nic_cores"] != 1
                or r["engine_bytes_per_packet"] or config in seen):
            continue
        seen[config] = r["nic_ns_per_packet_emulated"] * args.ghz / r["nic_instructions_per_packet"]
        print(f"{config}: {r['nic_ns_per_packet_emulated']:,.0f} ns, "
              f"{r['nic_instructions_per_packet']:,.0f} instructions per packet: "
              f"CPI {seen[config]:.2f}")
    if not seen:
        raise SystemExit("calibrate_host.py: no single-core NIC configuration without an engine")
    print(f"median CPI {statistics.median(seen.values()):.2f} over {len(seen)} configurations")


if __name__ == "__main__":
    main()
