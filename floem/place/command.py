"""The ``floem place`` command: enumerate, count, predict, rank, check, write."""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time

from floem.api import load_app
from floem.builder import check_program
from floem.errors import FloemError
from floem.explore import output
from floem.explore.command import stoppable
from floem.explore.measure import RunFailed, Workload
from floem.explore.model import Platform, load_platform, predict
from floem.explore.sweep import make_workload
from floem.ir import Cut, Device, ProgramIR
from floem.lang import params
from floem.lang.program import Program
from floem.place import app_file
from floem.place.check import one_thread, same_output, sent_frames
from floem.place.counts import Probe, count_probe, require
from floem.place.cuts import Candidate, candidates, segment_order
from floem.place.search import (OBJECTIVES, Figures, Placement, crossings, measurement,
                                placements, rank)

#: Rows of the ranked table printed (every row is in the CSV and JSON).
SHOWN = 15
COLUMNS = ["#", "placement (NIC rx | CPU || NIC tx)", "threads", "predicted pkt/s",
           "per host core", "p50 µs", "bottleneck", "checked"]


def place(args: argparse.Namespace) -> int:
    """Search the cuts of the app's ``target.AUTO`` segments; print and write the ranking.
    SIGTERM and SIGINT end the search with status 143 or 130."""
    return stoppable("place", lambda: _place(args))


def parse_objective(text: str) -> tuple[str, float | None]:
    """``throughput``, ``per-host-core``, ``latency`` or ``host-cores-at RATE`` (RATE in
    packets/s, with an optional k, M or G and ``pps``: ``2Mpps``)."""
    name, _, rate = text.partition(" ")
    if name not in OBJECTIVES:
        raise FloemError(f"--objective must be one of {', '.join(OBJECTIVES)} (host-cores-at "
                         f"with a rate), not {text!r}")
    if name != "host-cores-at":
        if rate:
            raise FloemError(f"--objective {name} takes no rate")
        return name, None
    word = rate.strip().lower().removesuffix("pps")
    scale = {"k": 1e3, "m": 1e6, "g": 1e9}.get(word[-1:], 1.0)
    try:
        value = float(word[:-1] if scale != 1.0 else word) * scale
    except ValueError:
        value = -1.0
    if value <= 0:
        raise FloemError(f"--objective host-cores-at takes a rate, e.g. 'host-cores-at 2Mpps', "
                         f"not {text!r}")
    return name, value


def _place(args: argparse.Namespace) -> int:
    objective, rate = parse_objective(" ".join(args.objective))
    nic = load_platform(args.nic, "nic")
    host = load_platform(args.host, "host")
    defines = params.parse_definitions(args.define)
    define_args = [f"{k}={v}" for k, v in defines.items()]
    app = os.path.abspath(args.app)
    program = load_app(app, defines)
    front = check_program(program, stop_after="parse_bodies")
    auto = [s for s in front.segments.values() if s.auto]
    if not auto:
        raise FloemError("no target.AUTO segment to place: declare one with "
                         "device=target.AUTO (an app passing its device parameter on: "
                         "-D device=auto)", app)
    orders = {s.name: segment_order(front, s) for s in auto}
    layouts: dict[tuple, ProgramIR] = {}
    found = {s.name: [_compiled(program, c, orders[s.name], layouts) for c in candidates(front, s)]
             for s in auto}
    valid = {name: [_cut(c, orders[name]) for c in cands if c.problem is None]
             for name, cands in found.items()}
    if args.explain:
        _explain(found, orders)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="floem-place-") as workdir:
        workload = make_workload(args.workload, args.pcap, workdir)
        probes = _probe_cuts(valid)[:max(1, args.max_builds)]
        progress = output.Progress(len(probes), command="place")
        figures = _count(app, program, define_args, args.option, workload, probes, nic, host,
                         progress)
        rows = _predict(front, program, valid, orders, figures, workload, nic, host,
                        args.nic_managers, layouts,
                        host.cores if args.host_cores is None else args.host_cores)
        ranked = rank(rows, objective, rate)
        builds = max(0, args.max_builds - len(probes) - 1)     # the all-CPU reference too
        _check(app, define_args, args.option, workload, ranked, min(args.top, builds),
               started + args.timeout if args.timeout else None, progress)
        progress.done()
    considered = sum(len(v) for v in valid.values())
    rejected = sum(len(v) for v in found.values()) - considered
    print(f"\n{os.path.basename(app)} on {nic.name} beside {host.name}, objective "
          f"{' '.join(args.objective)}: {len(rows)} placements predicted ({considered} valid "
          f"cuts x threads; {rejected} cuts rejected{', see above' if args.explain else ''}); "
          f"{len(probes)} counted builds\n")
    print(_table(ranked[:SHOWN]))
    if objective == "host-cores-at" and rate is not None and ranked \
            and ranked[0].packets_per_s < rate:
        best = max(rows, key=lambda p: p.packets_per_s)
        print(f"\nno placement reaches {output.rate_text(rate)}pkt/s: the best predicts "
              f"{output.rate_text(best.packets_per_s)}pkt/s, bound by "
              f"{best.prediction.bottleneck}")
    base = args.out or os.path.splitext(os.path.basename(app))[0]
    cores = f" --host-cores {args.host_cores}" if args.host_cores is not None else ""
    written = _write(ranked, app, base, f"floem place --nic {nic.name} --host {host.name} "
                     f"--objective {' '.join(args.objective)}{cores}")
    print(f"\nfloem: wrote {', '.join(written)}")
    bugs = {_key(p.cuts): p for p in reversed(ranked) if p.checked is False}
    for p in bugs.values():
        print(f"floem: compiler bug: the cut {p.describe()} changes the output: "
              f"{p.check_note}", file=sys.stderr)
    return 1 if bugs else 0


def _compiled(program: Program, c: Candidate, order: list[str],
              layouts: dict[tuple, ProgramIR]) -> Candidate:
    """``c``, rejected with the compiler's reason when its program does not pass every
    pass (what a cut carries is known after liveness); the compiled IR into ``layouts``."""
    if c.problem is not None:
        return c
    cut = _cut(c, order)
    try:
        layouts[_key([cut])] = check_program(program, nic="emu", cuts=(cut,))
    except FloemError as e:
        return Candidate(c.segment, c.rx, c.tx, e.message)
    return c


def _key(cuts: list[Cut]) -> tuple:
    """What the front end's result of ``cuts`` depends on (not their threads)."""
    return tuple((c.segment, c.rx, c.tx) for c in cuts)


def _cut(c: Candidate, order: list[str]) -> Cut:
    return Cut(c.segment, tuple(e for e in order if e in c.rx),
               tuple(e for e in order if e in (c.tx or ())))


def _explain(found: dict[str, list[Candidate]], orders: dict[str, list[str]]) -> None:
    """Every cut of every AUTO segment, valid or with the reason it is not."""
    for name, cands in found.items():
        print(f"segment {name}: {len(cands)} cuts, "
              f"{sum(c.problem is None for c in cands)} valid")
        for c in cands:
            text = _cut(c, orders[name]).describe(orders[name])
            if c.tx is None:
                text = text.replace("|| -", "|| (any)")
            print(f"  {'ok  ' if c.problem is None else 'no  '}{text}"
                  + (f"\n        {c.problem}" if c.problem else ""))


def _probe_cuts(valid: dict[str, list[Cut]]) -> list[tuple[str, list[Cut]]]:
    """The placements counted: all on the CPU; as much as can be on the NIC; one with both
    boundaries (when the NIC one lacks one)."""
    def size(c: Cut) -> int:
        return len(c.rx) + len(c.tx)
    cpu = [Cut(name) for name in valid]
    nic = [max(cuts, key=size) for cuts in valid.values()]
    both = [max((c for c in cuts if c.rx and c.tx), key=size, default=None)
            or max((c for c in cuts if c.rx and c not in nic), key=size, default=n)
            for cuts, n in zip(valid.values(), nic)]
    probes = [("all on the CPU", cpu)]
    if any(size(c) for c in nic):
        probes.append(("most on the NIC", nic))
    if both != nic and any(size(c) for c in both):
        probes.append(("both boundaries", both))
    return probes


def _count(app: str, program: Program, defines: list[str], options: list[str],
           workload: Workload, probes: list[tuple[str, list[Cut]]], nic: Platform,
           host: Platform, progress: output.Progress) -> Figures:
    """Count every probe; their figures merged."""
    caches = {True: nic.caches, False: host.caches}
    counted: list[tuple[Probe, list[Cut]]] = []
    for label, cuts in probes:
        progress.start(f"counting {label}")
        placed = check_program(program, nic="emu", cuts=tuple(cuts), count_elements=True)
        try:
            probe = count_probe(app, defines, options, workload, placed, cuts, caches)
        except RunFailed as e:
            raise FloemError(f"the {label} probe failed: {e}") from None
        require(probe, label)
        progress.finish(f"counting {label}", f"{len(probe.elements)} elements counted")
        counted.append((probe, cuts))
    cpu = counted[0][0]
    others = []
    for probe, cuts in counted[1:]:
        crossed = {"rx": 0.0, "tx": 0.0}
        for cut in cuts:
            for boundary, taken in crossings(cpu.edges, cut).items():
                crossed[boundary] += taken
        others.append((probe, crossed))
    return Figures.merge(cpu, others)


def _predict(front: ProgramIR, program: Program, valid: dict[str, list[Cut]],
             orders: dict[str, list[str]], figures: Figures, workload: Workload,
             nic: Platform, host: Platform, nic_managers: int,
             layouts: dict[tuple, ProgramIR], host_cores: int) -> list[Placement]:
    """Every placement (cuts and threads, at most ``host_cores`` host threads a part)
    predicted (``layouts``: the compiled cuts)."""
    fixed_nic = sum(len(s.cores) for s in front.segments.values()
                    if s.device == Device.NIC and not s.auto)
    free = nic.cores - nic_managers - fixed_nic
    sizes = {name: len(order) for name, order in orders.items()}
    rows = []
    for cuts in placements(list(valid.values()), sizes, free, host_cores):
        key = _key(cuts)
        if key not in layouts:
            layouts[key] = check_program(program, nic="emu", cuts=tuple(
                Cut(c.segment, c.rx, c.tx) for c in cuts))
        m, host_threads, estimated = measurement(front, layouts[key], cuts, figures, workload,
                                                 nic_managers)
        rows.append(Placement(cuts, orders, predict(m, nic, host), host_threads, estimated))
    return rows


def _check(app: str, defines: list[str], options: list[str], workload: Workload,
           ranked: list[Placement], top: int, deadline: float | None,
           progress: output.Progress) -> None:
    """Run the cuts of the best ``top`` placements and compare their output with the
    all-CPU one's (`floem.place.check`); every placement of a cut checked gets its result."""
    chosen: list[Placement] = []
    for p in ranked:
        key = [(c.segment, c.rx, c.tx) for c in p.cuts]
        if not p.prediction.error and all([(c.segment, c.rx, c.tx) for c in q.cuts] != key
                                          for q in chosen):
            chosen.append(p)
    chosen = chosen[:top]
    if not chosen:
        return
    progress.total += len(chosen) + 1
    progress.start("running all on the CPU (the reference)")
    reference = sent_frames(app, one_thread([Cut(c.segment) for c in chosen[0].cuts]), defines,
                            options, workload)
    progress.finish("running all on the CPU (the reference)", f"{len(reference)} frames sent")
    for p in chosen:
        if deadline is not None and time.monotonic() > deadline:
            p.check_note = "not run: --timeout"
            continue
        label = f"checking {p.describe()}"
        progress.start(label)
        try:
            frames = sent_frames(app, one_thread(p.cuts), defines, options, workload)
        except (RunFailed, FloemError) as e:
            p.checked, p.check_note = False, f"the run failed: {e}"
        else:
            difference = same_output(reference, frames)
            p.checked, p.check_note = difference is None, difference or "same output"
        for q in ranked:
            if _key(q.cuts) == _key(p.cuts):
                q.checked, q.check_note = p.checked, p.check_note
        progress.finish(label, p.check_note)


def _table(rows: list[Placement]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for i, p in enumerate(rows, 1):
        mark = {True: "✓", False: "✗", None: "-"}[p.checked]
        cells = [str(i), p.describe(), p.threads(),
                 output.rate_text(p.packets_per_s) if not p.prediction.error
                 else f"- ({p.prediction.error})",
                 output.rate_text(p.per_host_core) if p.host_cores else "-",
                 output.us_text(p.prediction.latency.p50_us), p.prediction.bottleneck, mark]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _row(p: Placement) -> dict[str, object]:
    """A placement as a JSON object (and, flattened, a CSV row)."""
    nic = [e for c in p.cuts for e in p.orders[c.segment] if e in c.rx or e in c.tx]
    cpu = [e for c in p.cuts for e in p.orders[c.segment] if e not in c.rx and e not in c.tx]
    return {"placement": p.describe(), "nic": nic, "cpu": cpu,
            "threads": {c.segment: {"rx": c.rx_cores if c.rx else 0,
                                    "cpu": c.cpu_cores or 0, "tx": c.tx_cores if c.tx else 0}
                        for c in p.cuts},
            "predicted_packets_per_s": p.packets_per_s if not p.prediction.error else None,
            "per_host_core": p.per_host_core if p.host_cores and not p.prediction.error
            else None,
            "host_cores": p.host_cores,
            "latency_p50_us": _finite(p.prediction.latency.p50_us),
            "latency_p99_us": _finite(p.prediction.latency.p99_us),
            "bottleneck": p.prediction.bottleneck, "error": p.prediction.error,
            "estimated": p.estimated, "checked": p.checked, "check": p.check_note}


def _finite(value: float) -> float | None:
    return value if value != float("inf") else None


def _write(ranked: list[Placement], app: str, base: str, note: str) -> list[str]:
    """``base``.csv, .json, and the winner as ``base``.py with ``base``.diff."""
    os.makedirs(os.path.dirname(os.path.abspath(base)), exist_ok=True)
    rows = [_row(p) for p in ranked]
    with open(base + ".json", "w") as f:
        json.dump({"command": note, "placements": rows}, f, indent=2, ensure_ascii=False)
    with open(base + ".csv", "w", newline="") as f:
        fields = [k for k in rows[0] if k not in ("threads",)] if rows else []
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: " ".join(v) if isinstance(v, list) else v for k, v in r.items()})
    written = [base + ".csv", base + ".json"]
    best = next((p for p in ranked if p.checked is not False and not p.prediction.error), None)
    if best is not None:
        path = base + ".py"
        text = app_file.placed_source(
            app, best.cuts, path, f"{note} chose, predicting "
            f"{output.rate_text(best.packets_per_s)}pkt/s"
            + (" (its output checked):" if best.checked else ":")
            + f"\n{best.describe()}, threads {best.threads()}")
        with open(path, "w") as f:
            f.write(text)
        with open(base + ".diff", "w") as f:
            f.write(app_file.diff(os.path.relpath(app), text, path))
        written += [path, base + ".diff"]
    return written
