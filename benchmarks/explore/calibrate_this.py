#!/usr/bin/env python3
"""Measure this machine for the performance model's host platform "this".

Usage: python3 benchmarks/explore/calibrate_this.py [--write]

Prints floem/platforms/this.toml as measured now (with --write, writes it there):
the cores and clock (the kernel's), the caches (sysfs), cycles per instruction of
packet code (calibrate.c's flow classification: callgrind's instructions against the
native time, best of five), a last-level miss (a dependent load through 256 MiB), an
atomic add on a line the core holds and a line's move between two cores (calibrate.c),
AES-128-CBC with the CPU's instructions (``openssl speed -evp``). Packet I/O is not
measured (no NIC here): DPDK's published cycles per packet at this clock. Takes about
a minute; run it on a quiet machine.
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PLATFORM = os.path.join(HERE, "..", "..", "floem", "platforms", "this.toml")
#: DPDK's vector poll-mode driver, receive only and transmit only, cycles per packet (Intel's
#: DPDK test plan "Unit Tests: PMD Performance", pmd_perf_autotest, "Burst Mode Performance").
RX_CYCLES, TX_CYCLES = 34, 23
PACKETS = 10_000_000


def run(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def nanoseconds(binary: str, *argv: str, repeat: int = 3) -> float:
    """The least of ``repeat`` runs of ``binary argv`` (each prints "N ns" first)."""
    return min(float(run(binary, *argv).split()[0]) for _ in range(repeat))


def instructions(binary: str, packets: int, tmp: str) -> int:
    """callgrind's instruction count of ``binary work packets``."""
    out = os.path.join(tmp, f"callgrind.{packets}")
    subprocess.run(["valgrind", "-q", "--tool=callgrind", f"--callgrind-out-file={out}",
                    binary, "work", str(packets)], capture_output=True, check=True)
    with open(out) as f:
        return int(re.search(r"^totals: (\d+)", f.read(), re.M).group(1))


def clock_ghz() -> float:
    with open("/proc/cpuinfo") as f:
        mhz = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([\d.]+)", f.read(), re.M)]
    return round(max(mhz) / 1000, 2)


def caches() -> dict[str, list[int]]:
    """The first-level caches and the last level, as callgrind simulates them: the size
    kept, the ways changed where needed so that the number of sets is a power of two."""
    found = {}
    root = "/sys/devices/system/cpu/cpu0/cache"
    for index in sorted(os.listdir(root)):
        if not index.startswith("index"):
            continue
        def read(name: str, index: str = index) -> str:
            with open(os.path.join(root, index, name)) as f:
                return f.read().strip()
        level, kind = int(read("level")), read("type")
        size = int(read("size").rstrip("K")) * 1024
        key = "l1i" if kind == "Instruction" else "l1d" if level == 1 else f"l{level}"
        found[key] = [size, int(read("ways_of_associativity")), int(read("coherency_line_size"))]
    last = found[max(k for k in found if k[1:].isdigit() and k != "l1")]
    return {"l1i": power_of_two_sets(found["l1i"]), "l1d": power_of_two_sets(found["l1d"]),
            "ll": power_of_two_sets(last)}


def power_of_two_sets(cache: list[int]) -> list[int]:
    """``cache`` (bytes, ways, line) with as many sets as a power of two allows, the size
    kept: the most sets that divide its lines into at least its ways each."""
    size, ways, line = cache
    lines = size // line
    sets = 1
    while lines % (sets * 2) == 0 and lines // (sets * 2) >= ways:
        sets *= 2
    return [size, lines // sets, line]


def aes_cycles_per_byte(ghz: float) -> tuple[float, float]:
    """AES-128-CBC encryption with the CPU's instructions: cycles per byte of 1 KB
    buffers, and the extra nanoseconds per call (16-byte buffers against 1 KB)."""
    rates = {}
    for size in (16, 1024):
        text = run("openssl", "speed", "-elapsed", "-evp", "aes-128-cbc", "-bytes", str(size),
                   "-seconds", "1")
        rates[size] = float(re.search(r"^AES-128-CBC\s+([\d.]+)k", text, re.M).group(1)) * 1e3
    per_byte_ns = 1e9 / rates[1024]
    return round(per_byte_ns * ghz, 2), round(max(16 * (1e9 / rates[16] - per_byte_ns), 0), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help=f"write {os.path.relpath(PLATFORM)}")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "calibrate")
        subprocess.run(["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread",
                        "-o", binary, os.path.join(HERE, "calibrate.c")], check=True)
        per_packet = (instructions(binary, 200_000, tmp) - instructions(binary, 100_000, tmp)) \
            / 100_000
        ns = nanoseconds(binary, "work", str(PACKETS), repeat=5)
        ghz = clock_ghz()
        cpi = round(ns / (per_packet * PACKETS) * ghz, 3)
        dram, cache, atomic, transfer = (nanoseconds(binary, what) for what in
                                         ("dram", "cache", "atomic", "transfer"))
    geometry = caches()
    aes, call = aes_cycles_per_byte(ghz)
    cores = os.cpu_count() or 1
    day = datetime.date.today().isoformat()
    text = f'''# This machine, measured by benchmarks/explore/calibrate_this.py on {day}: the
# default host of floem explore. Run the script again (--write) on another machine.
name = "this"
kind = "host"
title = "This machine ({cores} cores at {ghz} GHz), as measured on {day}"

[cores]
count = {cores}
ghz = {ghz}
cpi = {cpi}
source = """
count: os.cpu_count(); ghz: the highest "cpu MHz" of /proc/cpuinfo.
cpi: calibrate.c's flow classification of cached frames ({per_packet:.0f} instructions per
  packet by callgrind; {PACKETS:,} packets in {ns / 1e6:.0f} ms, the best of five runs):
  {ns / (per_packet * PACKETS):.3f} ns per instruction.
"""

[caches]
l1i = {geometry["l1i"]}
l1d = {geometry["l1d"]}
ll = {geometry["ll"]}
source = """
/sys/devices/system/cpu/cpu0/cache; the ways changed where needed so that the set count is
  a power of two (callgrind simulates no other), the size kept.
"""

[memory]
cache_ns = {cache:.1f}
dram_ns = {dram:.1f}
atomic_ns = {atomic:.1f}
transfer_ns = {max(transfer - atomic, 0):.1f}
source = """
calibrate.c: cache_ns and dram_ns, a dependent load through 128 KiB and through 256 MiB
  in a random cycle (a first-level miss, a last-level one); atomic_ns, an atomic add on a
  line the core holds; transfer_ns, two threads on CPUs 0 and 1 taking turns on one line
  ({transfer:.1f} ns a turn) less atomic_ns. Each the best of three.
"""

[packet_io]
rx_ns = {RX_CYCLES / ghz:.1f}
tx_ns = {TX_CYCLES / ghz:.1f}
source = """
Not measured (no NIC): DPDK's vector poll-mode driver, "rxonly 34, txonly 23" cycles per
  packet (Intel's DPDK test plan "Unit Tests: PMD Performance", pmd_perf_autotest), at this
  clock.
"""

[crypto]
cycles_per_byte = {aes}
call_ns = {call}
source = """
openssl speed -elapsed -evp aes-128-cbc: 1 KB buffers for the rate, 16-byte ones for the
  extra cost of a call.
"""
'''
    if args.write:
        with open(PLATFORM, "w") as f:
            f.write(text)
        print(f"wrote {os.path.relpath(PLATFORM)}")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
