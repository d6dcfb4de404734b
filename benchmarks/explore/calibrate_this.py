#!/usr/bin/env python3
"""Measure this machine for the performance model's host platform "this".

Usage: python3 benchmarks/explore/calibrate_this.py [--write]

Prints floem/platforms/this.toml as measured now (with --write, writes it there):
the processor, cores and clock (the kernel's), the caches (sysfs), cycles per instruction of
integer code in the caches (calibrate.c's rounds of CoreMark's kind of work: callgrind's
instructions against the native time, best of five, as the other platforms' CPI come
from CoreMark), the latency of a hit in the second and in the last level and of a
last-level miss (dependent loads through a size each level holds), how much of the last
level this core gets (the largest size, doubling up to sysfs's, whose dependent loads
stay nearer a last-level hit's latency than DRAM's), an atomic add on a
line the core holds and a line's move between two cores (calibrate.c), AES-128-CBC with
the CPU's instructions (``openssl speed -evp``), and what a frame costs DPDK's memif
port here (io.py receiving alone, and receiving and sending, each on one core, fed by
replay.c from the other, as this_machine.py measures, and what each byte of a frame adds
(memif copies it); as root, with DPDK: otherwise DPDK's published cycles per packet of a
NIC's port at this clock, and no cost per byte). Takes a few minutes;
run it on a quiet machine. --short measures each figure once, briefly, and writes
nothing (what the slow tests run, to keep the script working).
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import subprocess
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
PLATFORM = os.path.join(HERE, "..", "..", "floem", "platforms", "this.toml")
#: DPDK's vector poll-mode driver, receive only and transmit only, cycles per packet (Intel's
#: DPDK test plan "Unit Tests: PMD Performance", pmd_perf_autotest, "Burst Mode Performance").
RX_CYCLES, TX_CYCLES = 34, 23
#: Rounds of calibrate.c's integer work timed natively, and counted (the difference of two
#: counts, so that what runs once does not count).
ROUNDS, COUNTED = 400_000, (20_000, 40_000)
#: The larger frames io.py is measured on, for the packet I/O's cost per byte.
IO_BYTES = 1024


def run(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def nanoseconds(binary: str, *argv: str, repeat: int = 3) -> float:
    """The least of ``repeat`` runs of ``binary argv`` (each prints "N ns" first)."""
    return min(float(run(binary, *argv).split()[0]) for _ in range(repeat))


def instructions(binary: str, rounds: int, tmp: str) -> int:
    """callgrind's instruction count of ``binary work rounds``."""
    out = os.path.join(tmp, f"callgrind.{rounds}")
    subprocess.run(["valgrind", "-q", "--tool=callgrind", f"--callgrind-out-file={out}",
                    binary, "work", str(rounds)], capture_output=True, check=True)
    with open(out) as f:
        return int(re.search(r"^totals: (\d+)", f.read(), re.M).group(1))


def cpu_name() -> str:
    """This machine's processor as /proc/cpuinfo names it: the model name, family and model
    (a virtual machine may run on another kind of host from one day to the next)."""
    with open("/proc/cpuinfo") as f:
        text = f.read()
    field = {key: re.search(rf"^{key}\s*:\s*(.*)$", text, re.M) for key in
             ("model name", "cpu family", "model")}
    name, family, model = (m.group(1).strip() if m else "?" for m in field.values())
    return f"{name}, family {family}, model {model}"


def clock_ghz() -> float:
    with open("/proc/cpuinfo") as f:
        mhz = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([\d.]+)", f.read(), re.M)]
    return round(max(mhz) / 1000, 2)


def caches() -> dict[str, list[int]]:
    """The caches as sysfs gives them, as the counting simulates them: the first level's,
    a second level of the core's own (when there is one below a shared last level), the
    last; each (bytes, ways, line) with the ways changed where needed so that the number
    of sets is a power of two."""
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
    levels = sorted(int(k[1:]) for k in found if k[1:].isdigit())
    chosen = {"l1i": found["l1i"], "l1d": found["l1d"], "ll": found[f"l{levels[-1]}"]}
    if len(levels) > 1 and levels[0] == 2:
        chosen["l2"] = found["l2"]
    return {k: power_of_two_sets(v) for k, v in chosen.items()}


def power_of_two_sets(cache: list[int]) -> list[int]:
    """``cache`` (bytes, ways, line) with as many sets as a power of two allows, the size
    kept: the most sets that divide its lines into at least its ways each."""
    size, ways, line = cache
    lines = size // line
    sets = 1
    while lines % (sets * 2) == 0 and lines // (sets * 2) >= ways:
        sets *= 2
    return [size, lines // sets, line]


def last_level(binary: str, sysfs: int, first: int, first_ns: float, dram_ns: float,
               repeat: int) -> tuple[int, dict[int, float]]:
    """The part of the last level this core gets, and the latencies that show it: a
    dependent load through ``first`` bytes (a size the last level holds and the level above
    does not: ``first_ns``), through twice that and so on up to the last level's ``sysfs``
    size, and through 256 MiB (DRAM: ``dram_ns``). The last level is the largest of these
    sizes whose load is nearer the first's latency than DRAM's (at least the first): on a
    machine shared with other virtual machines the core may get much less of it than sysfs
    says."""
    latency = {first: first_ns}
    size = first * 2
    while size <= sysfs:
        latency[size] = nanoseconds(binary, "chase", str(size), repeat=repeat)
        size *= 2
    middle = (first_ns + dram_ns) / 2
    gets = max(size for size, ns in latency.items() if size == first or ns < middle)
    return gets, {**latency, 256 << 20: dram_ns}


def io_ns(short: bool) -> tuple[float, float, float] | None:
    """What a frame costs this machine's DPDK memif port (ns of a core per frame), measured
    with io.py and replay.c as this_machine.py measures a design: receiving a 64-byte frame,
    sending it back, and each byte more of a frame each way (memif copies every byte between
    its ring and the mbuf: the 1,024-byte frames' receiving and sending against the 64-byte
    ones'). None when that cannot run here (not root, no DPDK, one CPU)."""
    import this_machine as bench            # beside this script
    floem = shutil.which("floem")
    if os.geteuid() != 0 or floem is None or len(os.sched_getaffinity(0)) < 2 or \
            subprocess.run(["pkg-config", "--exists", "libdpdk"]).returncode != 0:
        return None
    seconds = 0.5 if short else 3.0
    with tempfile.TemporaryDirectory(prefix="floem-calibrate-") as tmp:
        replay = bench.build_replay(tmp)
        rates = {}
        for size, send in ((64, "false"), (64, "true"), (IO_BYTES, "true")):
            capture = bench.write_capture(
                f"python {bench.ROOT}/examples/nf/load.py aes --size {size} --count {bench.LARGE_FRAMES} "
                "--pcap {pcap}", os.path.join(tmp, f"io{size}.pcap"))
            design = bench.Design(f"io, send={send}", "benchmarks/explore/io.py",
                                  (f"send={send}",), "")
            rates[size, send] = max(bench.measure(design, {"loop": capture}, floem, replay,
                                                  tmp, seconds, n)
                                    for n in range(1 if short else 3))
    rx = 1e9 / rates[64, "false"]
    both, both_large = 1e9 / rates[64, "true"], 1e9 / rates[IO_BYTES, "true"]
    return rx, max(both - rx, 0.0), max(both_large - both, 0.0) / (2 * (IO_BYTES - 64))


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
    ap.add_argument("--short", action="store_true",
                    help="each figure measured once, briefly; nothing written")
    args = ap.parse_args()
    rounds, repeat = (ROUNDS // 20, 1) if args.short else (ROUNDS, 5)
    geometry = caches()
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "calibrate")
        subprocess.run(["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread",
                        "-o", binary, os.path.join(HERE, "calibrate.c")], check=True)
        few, more = (n // 20 if args.short else n for n in COUNTED)
        per_round = (instructions(binary, more, tmp) - instructions(binary, few, tmp)) \
            / (more - few)
        ns = nanoseconds(binary, "work", str(rounds), repeat=repeat)
        ghz = clock_ghz()
        cpi = round(ns / (per_round * rounds) * ghz, 3)
        # A working set each level holds and the one above it does not: four times the
        # level above, at most half the level itself.
        above = geometry["l2"][0] if "l2" in geometry else geometry["l1d"][0]
        chases = {"dram": 256 << 20, "ll": min(4 * above, geometry["ll"][0] // 2)}
        if "l2" in geometry:
            chases["l2"] = min(4 * geometry["l1d"][0], geometry["l2"][0] // 2)
        chased = {k: nanoseconds(binary, "chase", str(v), repeat=1 if args.short else 3)
                  for k, v in chases.items()}
        sysfs_ll = geometry["ll"][0]
        gets, scanned = last_level(binary, sysfs_ll, chases["ll"], chased["ll"],
                                   chased["dram"], 1 if args.short else 3)
        geometry["ll"] = power_of_two_sets([gets, geometry["ll"][1], geometry["ll"][2]])
        atomic, transfer = (nanoseconds(binary, what, repeat=1 if args.short else 3)
                            for what in ("atomic", "transfer"))
    aes, call = aes_cycles_per_byte(ghz)
    io = io_ns(args.short)
    cores = os.cpu_count() or 1
    day = datetime.date.today().isoformat()
    second = "l2" in geometry
    l2_lines = f"l2 = {geometry['l2']}\n" if second else ""
    l2_memory = f"l2_ns = {chased['l2']:.1f}\n" if second else ""
    l2_source = (f"l2_ns, a dependent load through {chases['l2'] >> 10} KiB;\n  " if second
                 else "")
    scan = ", ".join(f"{size >> 10} KiB {ns:.1f} ns" for size, ns in scanned.items())
    caches_source = textwrap.fill(
        "/sys/devices/system/cpu/cpu0/cache; the ways changed where needed so that the set "
        f"count is a power of two, the size kept. ll: sysfs gives {sysfs_ll >> 10} KiB, but "
        "a dependent load (calibrate.c, in a random cycle, the least of three runs) through "
        f"{scan} (the last: DRAM): this core gets {gets >> 10} KiB of it, the largest size "
        "whose load is nearer the first's latency than DRAM's.",
        width=90, subsequent_indent="  ")
    per_byte = 0.0
    if io is None:
        rx, tx = RX_CYCLES / ghz, TX_CYCLES / ghz
        io_source = ('Not measured here (as root, with DPDK, it would be): DPDK\'s vector '
                     'poll-mode driver of a NIC,\n  "rxonly 34, txonly 23" cycles per packet '
                     '(Intel\'s DPDK test plan "Unit Tests: PMD\n  Performance", '
                     'pmd_perf_autotest), at this clock.')
    else:
        rx, tx, per_byte = io
        io_source = ("Measured here: DPDK's net_memif port (a memif server, no hugepages) "
                     "fed by replay.c from\n  the other CPU, io.py on one core receiving "
                     "alone (rx_ns: its CPU time per 64-byte frame)\n  and receiving and "
                     "sending (tx_ns: the difference), the best of three runs; ns_per_byte:"
                     "\n  receiving and sending 1,024-byte frames against 64-byte ones, per "
                     "byte each way (memif\n  copies every byte). It includes the few "
                     "instructions of FromNet, ToNet and NetFree.")
    text = f'''# This machine, measured by benchmarks/explore/calibrate_this.py on {day}: the
# default host of floem explore. Run the script again (--write) on another machine.
name = "this"
kind = "host"
title = "This machine ({cores} cores at {ghz} GHz), as measured on {day}"

[cores]
cpu = "{cpu_name()}"
count = {cores}
ghz = {ghz}
cpi = {cpi}
source = """
cpu: /proc/cpuinfo's model name, family and model (this_machine.py warns when the machine
  it runs on is not this one); count: os.cpu_count(); ghz: the highest "cpu MHz" of
  /proc/cpuinfo.
cpi: calibrate.c's integer work in the caches, CoreMark's kind ({per_round:,.0f} instructions
  a round by callgrind; {rounds:,} rounds in {ns / 1e6:.0f} ms, the least of {repeat} runs):
  {ns / (per_round * rounds):.3f} ns per instruction.
"""

[caches]
l1i = {geometry["l1i"]}
l1d = {geometry["l1d"]}
{l2_lines}ll = {geometry["ll"]}
source = """
{caches_source}
"""

[memory]
{l2_memory}ll_ns = {chased["ll"]:.1f}
dram_ns = {chased["dram"]:.1f}
atomic_ns = {atomic:.1f}
transfer_ns = {max(transfer - atomic, 0):.1f}
source = """
calibrate.c: {l2_source}ll_ns, through {chases["ll"] >> 10} KiB; dram_ns, through 256 MiB
  (each in a random cycle); atomic_ns, an atomic add on a line the core holds;
  transfer_ns, two threads on CPUs 0 and 1 taking turns on one line ({transfer:.1f} ns a
  turn) less atomic_ns.
"""

[packet_io]
rx_ns = {rx:.1f}
tx_ns = {tx:.1f}
ns_per_byte = {per_byte:.4f}
source = """
{io_source}
"""

[crypto]
cycles_per_byte = {aes}
call_ns = {call}
source = """
openssl speed -elapsed -evp aes-128-cbc: 1 KB buffers for the rate, 16-byte ones for the
  extra cost of a call.
"""
'''
    if args.write and not args.short:
        with open(PLATFORM, "w") as f:
            f.write(text)
        print(f"wrote {os.path.relpath(PLATFORM)}")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
