"""The ``floem place`` command: enumerate, count, predict, rank, check, write."""
from __future__ import annotations

import argparse
import bisect
import csv
import heapq
import itertools
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from floem.api import load_app
from floem.builder import check_program
from floem.errors import FloemError
from floem.explore import output
from floem.explore.command import stoppable
from floem.explore.measure import Measurement, RunFailed, Workload, measure
from floem.explore.latency import Latency
from floem.explore.model import Platform, Prediction, load_platform, predict
from floem.explore.sweep import configurations, layout, make_workload, parse_sweep, summary
from floem.ir import BuildOptions, Cut, Device, Part, ProgramIR
from floem.lang import params
from floem.lang.program import Program
from floem.passes.split_auto import queue_shape
from floem.place import app_file
from floem.place.check import counted_run, one_thread, same_frames, same_output, sent_frames
from floem.place.counts import Probe, count_probe, require
from floem.place.cuts import MAX_CUTS, Candidate, candidates, segment_order
from floem.place.search import (BOUNDED, OBJECTIVES, Figures, Placement, crossings,
                                measurement, part_name, placements, rank, rank_key,
                                threads_bound, values_text)

#: Rows of the ranked table printed (every row is in the CSV and JSON).
SHOWN = 15
COLUMNS = ["#", "placement (NIC rx | CPU || NIC tx)", "threads", "predicted pkt/s",
           "per host core", "p50 µs", "bottleneck", "counted", "checked"]


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


@dataclass
class Search:
    """One configuration of the app (a value for each of its parameters) and the cuts of
    its AUTO segments; a configuration with none is one placement, as written."""

    config: dict[str, str]                  # every parameter's value, as -D gives it
    shown: dict[str, str]                   # those that vary between the configurations
    values: dict[str, Any]                  # those and the -D ones, typed: the placed
    #                                         app file's defaults
    program: Program
    front: ProgramIR
    orders: dict[str, list[str]]            # each AUTO segment's elements in packet order
    found: dict[str, list[Candidate]]       # each AUTO segment's cuts, valid or not
    along_order: list[str]                  # AUTO segments too wide to list every cut of:
    #                                         their cuts along packet order are listed
    layouts: dict[tuple, ProgramIR | None] = field(default_factory=dict)  # compiled, by
    #                                         cuts (None: the compiler rejected them)
    pruned: int = 0                         # placements left out by the model's bound

    @property
    def valid(self) -> dict[str, list[Cut]]:
        """Each AUTO segment's cuts that are valid, as far as they are known (a cut not
        compiled yet may still be rejected by the compiler)."""
        return {name: [_cut(c, self.orders[name]) for c in cands if c.problem is None]
                for name, cands in self.found.items()}

    def compiled(self, cuts: list[Cut]) -> ProgramIR | None:
        """The program cut by ``cuts`` through every pass (no C compiler), or None when the
        compiler rejects it (what a cut carries is known after liveness); a single cut the
        compiler rejects becomes a rejected candidate, with the compiler's reason."""
        key = _key(cuts)
        if key not in self.layouts:
            try:
                options = BuildOptions(nic="emu", cuts=tuple(Cut(c.segment, c.rx, c.tx)
                                                             for c in cuts))
                self.layouts[key] = check_program(self.program, options)
            except FloemError as e:
                self.layouts[key] = None
                if len(cuts) == 1:
                    self._reject(cuts[0], e.message)
        return self.layouts[key]

    def _reject(self, cut: Cut, problem: str) -> None:
        cands = self.found[cut.segment]
        for i, c in enumerate(cands):
            if (c.rx, c.tx) == (frozenset(cut.rx), frozenset(cut.tx)):
                cands[i] = Candidate(c.segment, c.rx, c.tx, problem)

    @property
    def defines(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.config.items()]

    @property
    def label(self) -> str:
        return values_text(self.shown)

    def probes(self) -> list[tuple[str, list[Cut]]]:
        """The builds that count it: a few probes, or the configuration as written."""
        if not self.orders:
            return [("as written", [])]
        return _probe_cuts(self.valid, lambda cut: self.compiled([cut]) is not None)


def _place(args: argparse.Namespace) -> int:
    objective, rate = parse_objective(" ".join(args.objective))
    nic = load_platform(args.nic, "nic")
    host = load_platform(args.host, "host")
    app = os.path.abspath(args.app)
    sweep = parse_sweep(args.define)
    configs = configurations(app, sweep)
    varying = [n for n in configs[0] if len({c[n] for c in configs}) > 1]
    searches = [_search(app, config, varying, list(sweep)) for config in configs]
    if len(searches) == 1 and not searches[0].orders:
        raise FloemError("nothing to place: no target.AUTO segment (declare one with "
                         "device=target.AUTO; an app passing its device parameter on: "
                         "-D device=auto) and no parameter to size (-D NAME=V1,V2, or "
                         "a parameter declared with choices)", app)
    if args.explain:
        _explain(searches)
    started = time.monotonic()
    budget = max(1, args.max_builds)
    counted: list[tuple[Search, list[tuple[str, list[Cut]]]]] = []
    for search in searches:
        if budget > 0:
            probes = search.probes()[:budget]
            budget -= len(probes)
            counted.append((search, probes))
    options = [f"--nic-managers={args.nic_managers}", *args.option]    # every run's
    with tempfile.TemporaryDirectory(prefix="floem-place-") as workdir:
        workload = make_workload(args.workload, args.pcap, workdir)
        progress = output.Progress(sum(len(p) for _, p in counted), command="place")
        cores = host.cores if args.host_cores is None else args.host_cores
        rows: list[Placement] = []
        for search, probes in counted:
            if search.orders:
                figures = _count(app, search, options, workload, probes, nic, host, progress)
                rows += _predict(search, figures, workload, nic, host, args.nic_managers,
                                 cores, objective, rate,
                                 None if args.predict_all else max(SHOWN, args.top))
            else:
                rows += _as_written(app, search, options, workload, nic, host, progress)
        checker = _Checker(app, {s.label: s for s, _ in counted}, options, workload, nic,
                           host, max(0, budget),
                           started + args.timeout if args.timeout else None, progress)
        ranked = checker.check(rows, objective, rate, args.top)
        progress.done()
    _summary(args, app, nic, host, searches, counted, rows)
    print(_table(ranked[:SHOWN]))
    if objective == "host-cores-at" and rate is not None and ranked \
            and ranked[0].packets_per_s < rate:
        best = max(rows, key=lambda p: p.packets_per_s)
        print(f"\nno placement reaches {output.rate_text(rate)}pkt/s: the best predicts "
              f"{output.rate_text(best.packets_per_s)}pkt/s, bound by "
              f"{best.prediction.bottleneck}")
    winner = _winner(ranked)
    if winner is not None and winner is not _best(ranked):
        print(f"\nfloem: writes #{ranked.index(winner) + 1}, the best placement counted with its "
              f"own threads; the {ranked.index(winner)} ranked above it are predicted from the "
              "probes alone (more --max-builds counts them)")
    base = args.out or os.path.splitext(os.path.basename(app))[0]
    cores_note = f" --host-cores {args.host_cores}" if args.host_cores is not None else ""
    written = _write(ranked, {s.label: s for s in searches}, app, base,
                     f"floem place --nic {nic.name} --host {host.name} "
                     f"--objective {' '.join(args.objective)}{cores_note}")
    print(f"\nfloem: wrote {', '.join(written)}")
    bugs = {(p.label, _key(p.cuts)): p for p in reversed(ranked) if p.checked is False}
    for p in bugs.values():
        print(f"floem: compiler bug: the cut {p.describe()} changes the output: "
              f"{p.check_note}", file=sys.stderr)
    return 1 if bugs else 0


def _search(app: str, config: dict[str, str], varying: list[str], given: list[str]) -> Search:
    """``config`` of ``app`` loaded, its AUTO segments' cuts enumerated and compiled
    (``varying``: the parameters that tell the configurations apart; ``given``: those
    given with -D, which the placed app file sets too)."""
    program = load_app(app, config)
    values = {p.name: p.value for p in params.declared() if p.name in varying + given}
    front = check_program(program, stop_after="parse_bodies")
    spaces = {s.name: candidates(front, s) for s in front.segments.values() if s.auto}
    return Search(config, {n: config[n] for n in varying}, values, program, front,
                  {name: segment_order(front, front.segments[name]) for name in spaces},
                  {name: space.cuts for name, space in spaces.items()},
                  [name for name, space in spaces.items() if space.along_order])


def _summary(args: argparse.Namespace, app: str, nic: Platform, host: Platform,
             searches: list[Search], counted: list[tuple[Search, list]],
             rows: list[Placement]) -> None:
    """What the search considered, and how: the line above the table."""
    valid = sum(len(v) for s in searches for v in s.valid.values())
    rejected = sum(len(v) for s in searches for v in s.found.values()) - valid
    pruned = sum(s.pruned for s in searches)
    what = []
    if any(s.orders for s in searches):
        unsure = " (some never compiled, which the compiler may reject)" \
            if pruned and not args.explain else ""
        what.append(f"{valid} valid cuts{unsure} with their threads; {rejected} cuts rejected"
                    + (", see above" if args.explain else ""))
    for search in searches:
        what += [f"{_listed(search, name)} of segment '{name}'" for name in search.along_order]
    if pruned:
        what.append(f"{pruned} more left out: the model's bound on each ranks it below the "
                    f"best {max(SHOWN, args.top)}")
    if len(searches) > 1:
        left = len(searches) - len(counted)
        what.append(f"{len(searches)} configurations of "
                    f"{', '.join(searches[0].shown)}"
                    + (f", {left} not counted (--max-builds)" if left else ""))
    builds = sum(len(p) for _, p in counted)
    print(f"\n{os.path.basename(app)} on {nic.name} beside {host.name}, objective "
          f"{' '.join(args.objective)}: {len(rows)} placements predicted ({'; '.join(what)}); "
          f"{builds} counted builds\n")


def _key(cuts: list[Cut]) -> tuple:
    """What the front end's result of ``cuts`` depends on (not their threads)."""
    return tuple((c.segment, c.rx, c.tx) for c in cuts)


def _cut(c: Candidate, order: list[str]) -> Cut:
    return Cut(c.segment, tuple(e for e in order if e in c.rx),
               tuple(e for e in order if e in (c.tx or ())))


def _explain(searches: list[Search]) -> None:
    """Every cut of every AUTO segment, valid or with the reason it is not (the compiler's
    too: every cut valid so far is compiled)."""
    for search in searches:
        for cut in [c for cuts in search.valid.values() for c in cuts]:
            search.compiled([cut])
        if search.label and search.orders:
            print(f"configuration {search.label}:")
        for name, cands in search.found.items():
            order = search.orders[name]
            print(f"segment {name}: {_listed(search, name)}, "
                  f"{sum(c.problem is None for c in cands)} valid")
            for c in cands:
                text = _cut(c, order).describe(order)
                if c.tx is None:
                    text = text.replace("|| -", "|| (any)")
                print(f"  {'ok  ' if c.problem is None else 'no  '}{text}"
                      + (f"\n        {c.problem}" if c.problem else ""))


def _listed(search: Search, segment: str) -> str:
    """How many cuts of ``segment`` are listed, and which."""
    listed = f"{len(search.found[segment])} cuts"
    if segment in search.along_order:
        return f"{listed} along packet order (more than {MAX_CUTS:,} in all)"
    return listed


def _probe_cuts(valid: dict[str, list[Cut]],
                compiles: Callable[[Cut], bool]) -> list[tuple[str, list[Cut]]]:
    """The placements counted (each of ``valid``'s cuts the compiler accepts): all on the
    CPU; as much as can be on the NIC; one with both boundaries (when the NIC one lacks
    one)."""
    def size(c: Cut) -> int:
        return len(c.rx) + len(c.tx)

    def biggest(cuts: list[Cut], wanted: Callable[[Cut], bool]) -> Cut | None:
        for c in sorted(cuts, key=size, reverse=True):
            if wanted(c) and compiles(c):
                return c
        return None
    cpu = [Cut(name) for name in valid]
    nic = [biggest(cuts, lambda c: True) or Cut(name) for name, cuts in valid.items()]
    # (biggest calls its predicate before the comprehension moves on: n is the current one.)
    both = [biggest(cuts, lambda c: bool(c.rx and c.tx))
            or biggest(cuts, lambda c: bool(c.rx) and c != n) or n  # noqa: B023
            for cuts, n in zip(valid.values(), nic)]
    probes = [("all on the CPU", cpu)]
    if any(size(c) for c in nic):
        probes.append(("most on the NIC", nic))
    if both != nic and any(size(c) for c in both):
        probes.append(("both boundaries", both))
    return probes


def _count(app: str, search: Search, options: list[str], workload: Workload,
           probes: list[tuple[str, list[Cut]]], nic: Platform, host: Platform,
           progress: output.Progress) -> Figures:
    """Count every probe of ``search``; their figures merged."""
    caches = {True: nic.caches, False: host.caches}
    counted: list[tuple[Probe, list[Cut]]] = []
    for label, cuts in probes:
        label = f"{search.label}: counting {label}" if search.label else f"counting {label}"
        progress.start(label)
        placed = check_program(search.program, BuildOptions(nic=nic.target, cuts=tuple(cuts),
                                                            count_elements=True))
        try:
            probe = count_probe(app, search.defines, options, workload, placed, cuts, caches,
                                nic.target)
        except RunFailed as e:
            raise FloemError(f"the {label} probe failed: {e}") from None
        require(probe, label)
        progress.finish(label, f"{len(probe.elements)} elements counted")
        counted.append((probe, cuts))
    cpu = counted[0][0]
    others = []
    for probe, cuts in counted[1:]:
        crossed = {Part.RX: 0.0, Part.TX: 0.0}
        for cut in cuts:
            for boundary, taken in crossings(cpu.edges, cut).items():
                crossed[boundary] += taken
        others.append((probe, crossed))
    return Figures.merge(cpu, others)


def _predict(search: Search, figures: Figures, workload: Workload, nic: Platform,
             host: Platform, nic_managers: int, host_cores: int, objective: str,
             rate: float | None, wanted: int | None) -> list[Placement]:
    """The placements of ``search`` (cuts and threads, at most ``host_cores`` host threads
    a part) predicted, down to the ``wanted``-th best for ``objective`` at least (None:
    all of them) and the all-CPU ones whatever their rank. The rest are taken best bound
    first: a combination of cuts is bounded whatever its threads (`threads_bound`), then,
    while that bound could still rank it among the ``wanted`` best, each of its thread
    counts is bounded (its queue entries as small as they can be, which needs no
    compiling), then compiled and predicted while its own bound could; what is left when
    no bound can is counted in ``search.pruned`` (``latency`` is not bounded that way:
    every placement is predicted)."""
    front = search.front
    fixed_nic = sum(len(s.cores) for s in front.segments.values()
                    if s.device == Device.NIC and not s.auto)
    free = nic.cores - nic_managers - fixed_nic
    sizes = {name: len(order) for name, order in search.orders.items()}

    def predicted(cuts: list[Cut], placed: ProgramIR | None) -> Placement:
        """``cuts`` predicted from ``placed``, their program compiled, or with None bounded
        (with no latency, which no bound uses)."""
        m, host_threads, estimated = measurement(front, placed, cuts, figures, workload,
                                                 nic_managers)
        prediction = predict(m, nic, host, latency_too=placed is not None)
        return Placement(cuts, search.orders, prediction, host_threads, estimated,
                         shown=search.shown)

    def exact(cuts: list[Cut]) -> Placement | None:
        """``cuts`` compiled and predicted, or None when the compiler rejects them."""
        placed = search.compiled(cuts)
        return None if placed is None else predicted(cuts, placed)

    def threaded(combo: list[Cut]) -> list[list[Cut]]:
        return list(placements([[c] for c in combo], sizes, free, host_cores))

    def combo_bound(combo: list[Cut]) -> Placement:
        """A placement of ``combo`` with the fewest threads, predicting `threads_bound`."""
        fewest = [replace(c, cpu_cores=1) for c in combo]
        m, host_threads, _ = measurement(front, None, fewest, figures, workload, nic_managers)
        parts = {part_name(c.segment, part) for c in combo for part in Part}
        bound = Prediction(nic.name, host.name,
                           {"bound": threads_bound(m, parts, nic, host, free, host_cores)},
                           {}, Latency(math.inf, math.inf), 0.0)
        return Placement(fewest, search.orders, bound, host_threads)

    combos = [list(c) for c in itertools.product(*search.valid.values())]
    search.pruned = 0
    if objective not in BOUNDED or wanted is None:
        return [p for combo in combos for cuts in threaded(combo)
                if (p := exact(cuts)) is not None]
    key = rank_key(objective, rate)
    rows = [p for combo in combos if not any(c.rx or c.tx for c in combo)
            for cuts in threaded(combo) if (p := exact(cuts)) is not None]
    best = sorted(map(key, rows))[:wanted]  # the keys of the ``wanted`` best rows
    # Best bound first: (key, tie, whether the threads are set, the cuts).
    heap: list[tuple[tuple, int, bool, list[Cut]]] = []
    tie = itertools.count()
    for combo in combos:
        if any(c.rx or c.tx for c in combo):
            heapq.heappush(heap, (key(combo_bound(combo)), next(tie), False, combo))
    while heap:
        if len(best) == wanted and heap[0][0] >= best[-1]:
            search.pruned = sum(1 if threads_set else len(threaded(cuts))
                                for _, _, threads_set, cuts in heap)
            break
        _, _, threads_set, cuts = heapq.heappop(heap)
        if not threads_set:
            for threads in threaded(cuts):
                heapq.heappush(heap, (key(predicted(threads, None)), next(tie), True, threads))
        elif (row := exact(cuts)) is not None:
            rows.append(row)
            bisect.insort(best, key(row))
            del best[wanted:]
    return rows


def _as_written(app: str, search: Search, options: list[str], workload: Workload,
                nic: Platform, host: Platform, progress: output.Progress) -> list[Placement]:
    """The one placement of a configuration with no AUTO segment, counted and predicted
    as `floem explore` does (every queue and cache of the design in its counts); when it
    cannot be counted, a failed row saying why (ranked last, as explore's)."""
    label = f"{search.label}: counting as written"
    progress.start(label)
    written = {n.name: search.front.segments[n.segment].device for n in search.front.nodes()}
    try:
        m = measure(app, search.defines, options, workload, layout(app, search.config),
                    [(nic.caches, host.caches)], nic_target=nic.target)
    except (FloemError, RunFailed) as e:
        why = " ".join(str(e).split())
        progress.finish(label, f"failed: {why}")
        failed = Prediction(nic.name, host.name, {}, {}, Latency(math.inf, math.inf), 0.0,
                            error=f"failed: {why}")
        return [Placement([], {}, failed, 0, shown=search.shown, written=written)]
    progress.finish(label, summary(m))
    return [Placement([], {}, predict(m, nic, host), m.host_threads, shown=search.shown,
                      written=written)]


class _Checker:
    """Runs placements to check them (`floem.place.check`), counted: ``builds`` runs at most
    (a reference run of each configuration included), none started after ``deadline``."""

    def __init__(self, app: str, searches: dict[str, Search], options: list[str],
                 workload: Workload, nic: Platform, host: Platform, builds: int,
                 deadline: float | None, progress: output.Progress) -> None:
        self.app, self.searches, self.options, self.workload = app, searches, options, workload
        self.nic, self.host, self.builds, self.deadline = nic, host, builds, deadline
        self.progress = progress
        self.references: dict[str, list[bytes]] = {}

    def check(self, rows: list[Placement], objective: str, rate: float | None,
              top: int) -> list[Placement]:
        """``rows`` ranked for ``objective``, their best ``top`` cuts run and checked, each
        with the threads ranked best for it (the same cut with other threads is not run),
        each predicted from its own run's counts; ranked again, and while the best (the
        one `floem place` writes) is a placement not counted, it too, as the runs allow. A
        configuration as written has nothing cut: nothing to check."""
        ranked = rank(rows, objective, rate)
        for p in ranked:
            if not p.cuts:
                p.check_note = "nothing cut"
        picked: list[Placement] = []
        for p in ranked:
            if len(picked) == top:
                break
            if not p.cuts or p.prediction.error or any(_same_cut(q, p) for q in picked):
                continue
            if self._runs(picked + [p]) > self.builds:
                break
            picked.append(p)
        self.progress.total += self._runs(picked)
        for p in picked:
            self._run(p, ranked)
        ranked = rank(rows, objective, rate)
        while (best := _best(ranked)) is not None and best.cuts and not best.counted \
                and not best.check_note and self._runs([best]) <= self.builds:
            self.progress.total += self._runs([best])
            self._run(best, ranked)
            ranked = rank(rows, objective, rate)
        return ranked

    def _runs(self, placements: list[Placement]) -> int:
        """The runs checking ``placements`` takes: one each, and the references missing."""
        return len(placements) + len({p.label for p in placements} - set(self.references))

    def _run(self, p: Placement, ranked: list[Placement]) -> None:
        """Check ``p`` (and every row of ``ranked`` that is the same placement); its
        configuration's reference first, when it has none yet (an empty one: an error)."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            for q in ranked:
                if _same(q, p):
                    q.check_note = "not run: --timeout"
            return
        search = self.searches[p.label]
        if p.label not in self.references:
            label = "running all on the CPU (the reference)"
            label = f"{p.label}: {label}" if p.label else label
            self.progress.start(label)
            self.builds -= 1
            self.references[p.label] = sent_frames(
                self.app, one_thread([Cut(c.segment) for c in p.cuts]), search.defines,
                self.options, self.workload)
            self.progress.finish(label, f"{len(self.references[p.label])} frames sent")
            if not self.references[p.label]:
                raise FloemError(f"{label}: it sent no frame on this workload, so no "
                                 "placement can be checked against it (does the workload "
                                 "reach the app?)")
        label = f"checking {p.describe()} with threads {p.threads()}"
        self.progress.start(label)
        self.builds -= 1
        checked, note, m = self._checked(search, p.cuts, self.references[p.label])
        for q in ranked:
            if _same(q, p):
                q.checked, q.check_note = checked, note
                if m is not None:
                    q.probes, q.counted = q.prediction, True
                    q.prediction = predict(m, self.nic, self.host)
        self.progress.finish(label, note + (f"; counted: {summary(m)}" if m else ""))

    def _checked(self, search: Search, cuts: list[Cut], reference: list[bytes]
                 ) -> tuple[bool | None, str, Measurement | None]:
        """Whether ``cuts``, run with their threads, send ``reference``'s frames (in order
        with one thread a part, in any order with more), what the check found (when
        several threads change the frames and one thread does not: neither, None), and
        the run's counts (None: the counted run failed, and the placement ran uncounted to
        be checked; the note says why)."""
        try:
            m, frames = counted_run(self.app, cuts, search.values, search.config,
                                    self.options, self.workload,
                                    (self.nic.caches, self.host.caches), self.nic.target)
        except (RunFailed, FloemError) as e:
            uncounted = " ".join(str(e).split())
            try:
                frames = sent_frames(self.app, cuts, search.defines, self.options,
                                     self.workload)
            except (RunFailed, FloemError) as failed:
                return False, f"the run failed: {failed}", None
            checked, note = self._compared(search, cuts, reference, frames)
            return checked, f"{note}; not counted: {uncounted}", None
        checked, note = self._compared(search, cuts, reference, frames)
        return checked, note, m

    def _compared(self, search: Search, cuts: list[Cut], reference: list[bytes],
                  frames: list[bytes]) -> tuple[bool | None, str]:
        """Whether ``frames``, sent by ``cuts`` run with their threads, are ``reference``'s,
        and what the check found."""
        single = one_thread(cuts)
        if cuts == single:
            difference = same_output(reference, frames)
            return difference is None, difference or "same output"
        if same_frames(reference, frames) is None:
            return True, "same frames" + ("" if frames == reference else ", in another order")
        try:
            alone = same_output(reference, sent_frames(self.app, single, search.defines,
                                                       self.options, self.workload))
        except (RunFailed, FloemError) as e:
            return False, f"the run with one thread a part failed: {e}"
        if alone is not None:
            return False, f"{alone} (with one thread a part)"
        return None, ("with its threads the frames depend on the order packets are taken in; "
                      "with one thread a part, the same output")


def _same(p: Placement, q: Placement) -> bool:
    """Whether ``p`` and ``q`` are the same placement (cuts and threads)."""
    return (p.label, p.cuts) == (q.label, q.cuts)


def _same_cut(p: Placement, q: Placement) -> bool:
    """Whether ``p`` and ``q`` cut the same configuration in the same places (with any
    threads)."""
    return (p.label, one_thread(p.cuts)) == (q.label, one_thread(q.cuts))


def _best(ranked: list[Placement]) -> Placement | None:
    """The best placement whose check did not fail."""
    return next((p for p in ranked if p.checked is not False and not p.prediction.error), None)


def _winner(ranked: list[Placement]) -> Placement | None:
    """The placement `floem place` writes: the best counted with its own threads whose check
    did not fail, or, when none was counted, the best whose check did not fail. (The probes
    count each part on one thread; what changes with more threads, contention and each
    thread's own caches, only a placement's own run counts.)"""
    return _best([p for p in ranked if p.counted or not p.cuts]) or _best(ranked)


def _table(rows: list[Placement]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for i, p in enumerate(rows, 1):
        mark = {True: "✓", False: "✗", None: "-"}[p.checked]
        cells = [str(i), p.describe(), p.threads(),
                 output.rate_text(p.packets_per_s) if not p.prediction.error
                 else f"- ({p.prediction.error})",
                 output.rate_text(p.per_host_core) if p.host_cores else "-",
                 output.us_text(p.prediction.latency.p50_us), p.prediction.bottleneck,
                 "✓" if p.counted else "-", mark]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _row(p: Placement, winner: Placement | None) -> dict[str, object]:
    """A placement as a JSON object (and, flattened, a CSV row); ``winner``: the one
    written as an app file."""
    nic = [e for c in p.cuts for e in p.orders[c.segment] if e in c.rx or e in c.tx]
    cpu = [e for c in p.cuts for e in p.orders[c.segment] if e not in c.rx and e not in c.tx]
    nic += [e for e, d in p.written.items() if d == Device.NIC]
    cpu += [e for e, d in p.written.items() if d != Device.NIC]
    return {"placement": p.describe(), "parameters": p.shown, "nic": nic, "cpu": cpu,
            "threads": {c.segment: {"rx": c.rx_cores if c.rx else 0,
                                    "cpu": c.cpu_cores or 0, "tx": c.tx_cores if c.tx else 0}
                        for c in p.cuts},
            "instances": {c.segment: _instances(c, p.orders[c.segment]) for c in p.cuts},
            "predicted_packets_per_s": p.packets_per_s if not p.prediction.error else None,
            "per_host_core": p.per_host_core if p.host_cores and not p.prediction.error
            else None,
            "host_cores": p.host_cores,
            "latency_p50_us": _finite(p.prediction.latency.p50_us),
            "latency_p99_us": _finite(p.prediction.latency.p99_us),
            "bottleneck": p.prediction.bottleneck, "error": p.prediction.error,
            "estimated": p.estimated, "counted": p.counted,
            "probes_packets_per_s": _finite(p.probes.packets_per_s) if p.probes is not None
            else None,
            "checked": p.checked, "check": p.check_note, "written": p is winner}


def _instances(cut: Cut, order: list[str]) -> dict[str, int]:
    """The instances of ``cut``'s queues (``rx``, ``tx``; 0 where there is no boundary)."""
    cpu = any(e not in cut.rx and e not in cut.tx for e in order)
    return {"rx": queue_shape(cut.rx_cores, cut.cpu_cores or 1)[0] if cut.rx and cpu else 0,
            "tx": queue_shape(cut.cpu_cores or 1, cut.tx_cores)[0] if cut.tx and cpu else 0}


def _cell(value: object) -> object:
    """A JSON value as a CSV cell: a list's words, a dict's NAME=VALUE words."""
    if isinstance(value, list):
        return " ".join(value)
    if isinstance(value, dict):
        return values_text(value)
    return value


def _finite(value: float) -> float | None:
    return value if value != float("inf") else None


def _write(ranked: list[Placement], searches: dict[str, Search], app: str, base: str,
           note: str) -> list[str]:
    """``base``.csv, .json, and the winner as ``base``.py with ``base``.diff."""
    os.makedirs(os.path.dirname(os.path.abspath(base)), exist_ok=True)
    best = _winner(ranked)
    rows = [_row(p, best) for p in ranked]
    with open(base + ".json", "w") as f:
        json.dump({"command": note, "placements": rows}, f, indent=2, ensure_ascii=False)
    with open(base + ".csv", "w", newline="") as f:
        fields = [k for k in rows[0] if k not in ("threads", "instances")] if rows else []
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _cell(v) for k, v in r.items()})
    written = [base + ".csv", base + ".json"]
    if best is not None:
        path = base + ".py"
        text = app_file.placed_source(
            app, best.cuts, searches[best.label].values, path, f"{note} chose, predicting "
            f"{output.rate_text(best.packets_per_s)}pkt/s"
            + (" (its output checked):" if best.checked else ":")
            + f"\n{best.describe()}, threads {best.threads()}")
        with open(path, "w") as f:
            f.write(text)
        with open(base + ".diff", "w") as f:
            f.write(app_file.diff(os.path.relpath(app), text, path))
        written += [path, base + ".diff"]
    return written
