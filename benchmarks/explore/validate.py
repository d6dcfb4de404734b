#!/usr/bin/env python3
"""The performance model against the Floem paper's hardware: one row per claim of section 7.

Usage: python3 benchmarks/explore/validate.py [--from DIR] [-o DIR]

Runs `floem explore` on the paper's experiments (figure8.toml, figure9.toml,
figure10.toml and hypotheses.toml beside this file: the LiquidIO beside the paper's
Westmere and Haswell servers), or with --from reads the JSON an earlier run wrote there,
and prints one row per quantitative claim of the paper's section 7: the paper's figure,
the model's, whether the ordering is right, the ratio of the model's figure to the
paper's, and a closing line "N of M claims reproduced (ordering right, within 2x)" with
the median ratio error. A claim the paper states as a range is met by any figure inside
it (the ratio is then 1); a claim it states only in words ("slightly", "no benefit") is
an ordering, with the bounds the claim's text gives. The paper's results are only
compared against here: no figure of the model comes from them (docs/exploration.md,
"Validation").

The whole run takes about an hour and a half on a two-core machine; -o DIR (default
docs/exploration) is where the explorations are written. --short explores only the first
study of figure10.toml, on 100 packets, into a temporary directory, and prints the table
its rows give (what the slow tests run, to keep the script working).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass

from floem.explore import provenance

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SWEEPS = ("figure8", "figure9", "figure10", "hypotheses")
WESTMERE, HASWELL = "xeon-x5650", "xeon-e5-2680v3"
HOSTS = {WESTMERE: "Westmere", HASWELL: "Haswell"}
#: Build options every experiment has, which a claim need not name.
COMMON_OPTIONS = {"--no-counters"}
#: Table 2's write-back configurations: #N -> the -D values that make it.
WRITE_BACK = {1: "buckets=32768 entries=0", 2: "buckets=32768 entries=5",
              3: "buckets=16384 entries=5", 4: "buckets=8192 entries=5",
              5: "buckets=4096 entries=5", 6: "buckets=2048 entries=5"}


class Rows:
    """The rows of the explorations, found by study, configuration words and host; the
    rows found since `forget` are `used`."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows
        self.used: list[dict] = []

    def forget(self) -> None:
        """Start a claim: no row used yet."""
        self.used = []

    def find(self, study: str, words: str, host: str = HASWELL) -> dict:
        """The one row of ``study`` (a prefix of its title) on ``host`` whose configuration
        holds every word of ``words`` (and no option it does not name)."""
        want = words.split()
        found = [r for r in self.rows if r["study"].startswith(study) and r["host_platform"] == host
                 and all(w in r["configuration"].split() for w in want)
                 and all(w in want or w in COMMON_OPTIONS
                         for w in r["configuration"].split() if w.startswith("--"))]
        if len(found) != 1:
            raise SystemExit(f"validate.py: {len(found)} rows of {study!r} match {words!r} on "
                             f"{host} (want one)")
        if found[0]["error"]:
            raise SystemExit(f"validate.py: {study} {words} on {host} failed: {found[0]['error']}")
        self.used.append(found[0])
        return found[0]

    def rate(self, study: str, words: str, host: str = HASWELL, per_core: bool = False) -> float:
        """Predicted packets/s (per host core, when asked and the host works)."""
        row = self.find(study, words, host)
        value = row["predicted_packets_per_s_per_host_core"] if per_core else None
        return value if value is not None else row["predicted_packets_per_s"]


@dataclass
class Claim:
    """One quantitative claim: the paper's figure (a value, or a range low..high; None when
    it states only an ordering) and how to get the model's from the rows. ``ordering``
    says whether the model's figure has the paper's ordering."""

    figure: str
    text: str
    paper: tuple[float, float] | None
    model: Callable[[Rows], float]
    ordering: Callable[[float], bool]
    scales: bool = True                     # the figure is a ratio of rates (not a count)

    def verdict(self, value: float) -> tuple[bool, float | None, bool]:
        """Whether ``value`` has the paper's ordering, its ratio to the paper's figure, and
        whether the claim is reproduced (ordering right, within 2x)."""
        ordered = self.ordering(value)
        ratio = self.ratio(value)
        return ordered, ratio, ordered and (ratio is None or 0.5 <= ratio <= 2)

    def ratio(self, value: float) -> float | None:
        """The model's figure over the paper's (1 inside the paper's range)."""
        if self.paper is None:
            return None
        low, high = self.paper
        return value / low if value < low else value / high if value > high else 1.0


def kvs_over_cpu(words: str, host: str) -> Callable[[Rows], float]:
    return lambda r: (r.rate("Key-value", words, host, per_core=True)
                      / r.rate("Key-value", "design=cpu", host, per_core=True))


def best(r: Rows, study: str, words: str, cores: list[int]) -> tuple[int, float]:
    """The fewest of ``cores`` that come within 2% of the highest prediction, and the
    highest prediction."""
    rates = {n: r.rate(study, f"{words} cores={n}") for n in cores}
    top = max(rates.values())
    return min(n for n in cores if rates[n] >= 0.98 * top), top


NIC_CORES = [1, 2, 3, 4, 6, 8, 12]


def claims() -> list[Claim]:
    out = []
    for host, name in HOSTS.items():
        out += [
            Claim("8", f"{name}: split (the paper's, items read by DMA) below CPU-only, per core",
                  None, kvs_over_cpu("design=split-pointer", host), lambda v: v < 1),
            Claim("8", f"{name}: write-through #2 gives no benefit over CPU-only (at most 1.05)",
                  None, kvs_over_cpu(f"design=cache-wt {WRITE_BACK[2]}", host),
                  lambda v: v <= 1.05),
        ]
        for n in (1, 2, 3):
            paper = (2.8, 3.6) if host == WESTMERE else (1.28, 1.6)
            out.append(Claim("8", f"{name}: write-back #{n} over CPU-only", paper,
                             kvs_over_cpu(f"design=cache-wb {WRITE_BACK[n]}", host),
                             lambda v: v > 1))
        out.append(Claim(
            "8", f"{name}: write-back #4-#6 below #1-#3 (best of #4-#6 over worst of #1-#3)",
            None, lambda r, h=host: max(kvs_over_cpu(f"design=cache-wb {WRITE_BACK[n]}", h)(r)
                                        for n in (4, 5, 6))
            / min(kvs_over_cpu(f"design=cache-wb {WRITE_BACK[n]}", h)(r) for n in (1, 2, 3)),
            lambda v: v < 1))
    out.append(Claim(
        "8", "write-back #1-#3 almost the same on both servers (Westmere over Haswell, the "
        "least; 0.9 to 1.1)", None, lambda r: min((r.rate("Key-value", f"design=cache-wb {WRITE_BACK[n]}",
                                          WESTMERE) /
                                   r.rate("Key-value", f"design=cache-wb {WRITE_BACK[n]}",
                                          HASWELL)) for n in (1, 2, 3)),
        lambda v: 0.9 <= v <= 1.1))
    for host, name, paper in ((WESTMERE, "Westmere", 1.96), (HASWELL, "Haswell", 1.75)):
        out += [
            Claim("9", f"{name}: Storm split slightly below CPU-only, per core (2/3 to 1)", None,
                  lambda r, h=host: (r.rate("Storm", "design=split", h, per_core=True)
                                     / r.rate("Storm", "design=cpu", h, per_core=True)),
                  lambda v: 2 / 3 < v < 1),
            Claim("9", f"{name}: Storm bypass over CPU-only, per core", (paper, paper),
                  lambda r, h=host: (r.rate("Storm", "design=bypass", h, per_core=True)
                                     / r.rate("Storm", "design=cpu", h, per_core=True)),
                  lambda v: v > 1),
        ]
    out += [
        Claim("H2", "Storm (bypass): workers sharing one output queue over one queue each",
              (1.16, 1.16), lambda r: (r.rate("H2 for Storm", "shared_out=true")
                                       / r.rate("H2 for Storm", "shared_out=false")),
              lambda v: v > 1),
        Claim("H4", "Storm (bypass): sync layer over blocking DMA", (3.7, 3.7),
              lambda r: (r.rate("Storm top-N", "design=bypass")
                         / r.rate("H4 for Storm", "--no-sync-layer")), lambda v: v > 1),
        Claim("10", "AES: the NIC (crypto units) over one core with AES-NI", (2.5, 2.5),
              lambda r: r.rate("AES", "device=nic engine=true")
              / r.rate("AES", "device=cpu aesni=true"), lambda v: v > 1),
        Claim("10", "AES: the NIC (crypto units) over one core without AES-NI", (17.5, 17.5),
              lambda r: r.rate("AES", "device=nic engine=true")
              / r.rate("AES", "device=cpu aesni=false"), lambda v: v > 1),
        Claim("10", "flow classification: the NIC slightly faster than one core (1 to 1.5)",
              None, lambda r: best(r, "Flow", "device=nic", NIC_CORES)[1]
              / r.rate("Flow", "device=cpu"), lambda v: 1 < v < 1.5),
        Claim("10", "sequencer: one core over the NIC (its best core count)", (1.82, 1.82),
              lambda r: r.rate("Network sequencer", "device=cpu")
              / best(r, "Network sequencer", "device=nic", NIC_CORES)[1], lambda v: v > 1),
        Claim("10", "sequencer: the NIC gains nothing beyond 3 cores (the fewest within 2% "
              "of its best)", None,
              lambda r: best(r, "Network sequencer", "device=nic", NIC_CORES)[0],
              lambda v: v == 3, scales=False),
    ]
    for host, name in HOSTS.items():
        out += [
            Claim("H2", f"{name}: KVS split, GET/SET/DELETE on queues of their own over shared",
                  (1.07, 1.07), lambda r, h=host: (r.rate("H2:", "share_queues=false", h)
                                                   / r.rate("H2:", "share_queues=true", h)),
                  lambda v: v > 1),
            Claim("H3", f"{name}: KVS split, live fields only over every field", (1.065, 1.065),
                  lambda r, h=host: (r.rate("H3:", "design=split", h)
                                     / r.rate("H3:", "--send-all-fields", h)),
                  lambda v: v > 1),
            Claim("H4", f"{name}: KVS write-back #2, sync layer over blocking DMA", (7.2, 14.1),
                  lambda r, h=host: (r.rate("H4:", "design=cache-wb", h)
                                     / r.rate("H4:", "--no-sync-layer", h)),
                  lambda v: v > 1),
        ]
    return out


def explore(sweep: str, out_dir: str) -> None:
    """`floem explore` of one sweep file, written to ``out_dir``/SWEEP.*."""
    command = [sys.executable, "-m", "floem.cli", "explore", os.path.join(HERE, sweep + ".toml"),
               "-o", os.path.join(out_dir, sweep)]
    print(f"validate.py: {' '.join(command[2:])}", file=sys.stderr, flush=True)
    subprocess.run(command, check=True, cwd=ROOT)


def short_sweep(path: str) -> None:
    """A sweep file at ``path``: figure10.toml's first study, its workload cut to 100
    packets, its paths absolute."""
    with open(os.path.join(HERE, "figure10.toml"), "rb") as f:
        sweep = tomllib.load(f)
    study = sweep["study"][0]
    workload = study["workload"].replace("{here}", HERE).replace("--count 5000", "--count 100")
    lines = [f"title = {json.dumps(sweep['title'])}", f"nic = {json.dumps(sweep['nic'])}",
             f"host = {json.dumps(sweep['host'])}", "", "[[study]]",
             f"title = {json.dumps(study['title'])}",
             f"app = {json.dumps(os.path.normpath(os.path.join(HERE, study['app'])))}",
             f"workload = {json.dumps(workload)}",
             f"define = {json.dumps(study['define'])}",
             f"options = {json.dumps(study.get('options', []))}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def load(out_dir: str) -> Rows:
    rows = []
    for sweep in SWEEPS:
        path = os.path.join(out_dir, sweep + ".json")
        if os.path.exists(path):
            with open(path) as f:
                rows += json.load(f)["rows"]
    return Rows(rows)


def table(rows: Rows) -> list[str]:
    """The validation table and its closing lines.

    A claim's rows were each counted twice when their threads interleave; their spreads
    (relative differences of packets/s) add up to the claim's uncertainty ("±"): a claim
    whose verdict changes within it is "undetermined". A claim whose rows are all bound by
    the same resource, at the same capacity, holds by construction: it says "structural".
    A claim resting on a row whose app changed since it was counted says "stale"."""
    lines = ["| figure | claim | paper | model | ± | ordering | model / paper | reproduced |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    reproduced = total = structural = undetermined = 0
    errors: list[float] = []
    stale_rows: set[int] = set()
    for c in claims():
        total += 1
        rows.forget()
        try:
            value = c.model(rows)
        except SystemExit as missing:
            lines.append(f"| {c.figure} | {c.text} | {_paper(c)} | not run: {missing} | | | | |")
            continue
        used = list({id(r): r for r in rows.used}.values())
        spread = sum(r.get("spread") or 0.0 for r in used) if c.scales else 0.0
        ordered, ratio, ok = c.verdict(value)
        stale = [why for r in used if (why := provenance.stale(r))]
        stale_rows |= {id(r) for r in used if provenance.stale(r)}
        if stale:
            outcome = f"stale: {stale[0]}"
        elif spread and len({c.verdict(v)[2] for v in (value * (1 - spread), value,
                                                       value * (1 + spread))}) > 1:
            outcome = "undetermined"
            undetermined += 1
        elif ok and (bound := _same_bound(used)):
            outcome = f"yes (structural: every row bound by {bound})"
            reproduced += 1
            structural += 1
        else:
            outcome = "yes" if ok else "no"
            reproduced += ok
        if ratio is not None and not stale:
            errors.append(max(ratio, 1 / ratio))
        lines.append(f"| {c.figure} | {c.text} | {_paper(c)} | {value:.2f} | "
                     f"{f'{100 * spread:.1f}%' if spread else '-'} | "
                     f"{'right' if ordered else 'wrong'} | "
                     f"{'-' if ratio is None else f'{ratio:.2f}'} | {outcome} |")
    lines.append("")
    lines.append(f"{reproduced} of {total} claims reproduced (ordering right, within 2x)"
                 + (f", {structural} of them structural" if structural else "")
                 + (f"; {undetermined} undetermined" if undetermined else ""))
    if errors:
        lines.append(f"median ratio error {statistics.median(errors):.2f}x over the "
                     f"{len(errors)} claims with a figure")
    if stale_rows:
        lines.append(f"{len(stale_rows)} rows are stale: they no longer describe the tree "
                     "(each claim says why)")
    return lines


def _same_bound(used: list[dict]) -> str | None:
    """The resource every row of a claim is bound by, at the same capacity, if there is one
    and the claim compares several rows."""
    bounds = {r["bottleneck"] for r in used}
    if len(used) < 2 or len(bounds) != 1:
        return None
    bound = bounds.pop()
    rates = [r["capacities"][bound] for r in used]
    return bound if max(rates) <= min(rates) * (1 + 1e-6) else None


def _paper(c: Claim) -> str:
    if c.paper is None:
        return "ordering"
    low, high = c.paper
    return f"{low:g}" if low == high else f"{low:g}-{high:g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="source", metavar="DIR",
                    help="read the explorations an earlier run wrote to DIR instead of running")
    ap.add_argument("-o", dest="out", default=os.path.join(ROOT, "docs", "exploration"),
                    metavar="DIR", help="where to write the explorations (default "
                                        "docs/exploration)")
    ap.add_argument("--short", action="store_true",
                    help="explore figure10.toml's first study on 100 packets, and print what "
                         "it gives")
    args = ap.parse_args()
    if args.short:
        with tempfile.TemporaryDirectory() as tmp:
            short_sweep(os.path.join(tmp, "figure10.toml"))
            command = [sys.executable, "-m", "floem.cli", "explore",
                       os.path.join(tmp, "figure10.toml"), "-o", os.path.join(tmp, "figure10")]
            subprocess.run(command, check=True, cwd=tmp)
            print("\n".join(table(load(tmp))))
        return
    if args.source is None:
        for sweep in SWEEPS:
            if os.path.exists(os.path.join(HERE, sweep + ".toml")):
                explore(sweep, args.out)
    print("\n".join(table(load(args.source or args.out))))


if __name__ == "__main__":
    main()
