"""``floem explore``: measure every configuration of an app on a workload, predict, rank.

A *study* is an app, the values to sweep of its parameters, and a workload
capture. Its configurations are the product of the swept values (``-D
name=v1,v2``; a parameter declared with choices and not given sweeps all of
them). Each configuration is built and counted once per cache geometry the
platforms need (`measure`), then predicted on every pair of a NIC and a host
platform (`predict`); a configuration that does not build or crashes gets a row
saying so and the sweep goes on. A sweep file (TOML) holds several studies, e.g.
``benchmarks/explore/figure10.toml``.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import os
import shlex
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from typing import Any, Protocol

from floem.builder import check_program
from floem.api import load_app
from floem.errors import FloemError
from floem.ir import Device, ProgramIR, SegmentKind
from floem.explore.measure import (MANAGERS, Geometry, Layout, Measurement, RunFailed, Workload,
                                   measure, measure_machines)
from floem.explore import provenance, threads
from floem.explore.model import Platform, Prediction, load_platform, predict
from floem.lang import params


@dataclass
class Study:
    """One app swept over parameter values on one workload (rows share ``title``): a
    capture replayed through the app, or, for a study of several machines (``machines``:
    the ``NAME=VALUE`` that makes each one's program), a ``command`` that runs them all on
    an input file (``inputs``, a packet a line; `measure_machines`)."""

    title: str
    app: str
    sweep: dict[str, list[str]]
    workload: Workload | None
    options: list[str] = field(default_factory=list)
    baseline: Workload | None = None
    command: str | None = None
    machines: list[str] = field(default_factory=list)
    inputs: tuple[str, int] | None = None   # the input file and its packets (lines)
    best_threads: bool = False              # search the threads of each configuration
    host_cores: int | None = None           # host cores it may use (None: the platform's)
    per_core: bool = False                  # best is most packets/s per host thread


@dataclass
class Row:
    """One configuration on a NIC and a host: its measurement and prediction, or why it
    failed."""

    study: str
    configuration: dict[str, str]
    platform: str
    host: str
    measurement: Measurement | None
    prediction: Prediction | None
    error: str | None = None
    options: list[str] = field(default_factory=list)
    app: str = ""                           # the app file
    app_sources: str = ""                   # the hash of its sources when counted
    threads: str = ""                       # the threads of each segment, when searched
    searched: str = ""                      # what the search tried and counted
    spread: float | None = None             # two counts' relative difference of packets/s

    @property
    def label(self) -> str:
        """The swept values, then the study's build options."""
        return " ".join([f"{k}={v}" for k, v in self.configuration.items()] + self.options) \
            or "(defaults)"

    @property
    def packets_per_s(self) -> float:
        return self.prediction.packets_per_s if self.prediction and not self.failed else 0.0

    @property
    def failed(self) -> str | None:
        return self.error or (self.prediction.error if self.prediction else None)

    @property
    def per_host_core(self) -> float | None:
        """Predicted packets/s per host thread that worked (the Floem paper's Figure 8
        measure), when the host works at all."""
        cores = self.measurement.host_threads if self.measurement else 0
        return self.packets_per_s / cores if cores and not self.failed else None


def parse_sweep(defines: list[str]) -> dict[str, list[str]]:
    """``["a=1,2", "b=x"]`` as ``{"a": ["1", "2"], "b": ["x"]}``."""
    return {name: text.split(",") for name, text in params.parse_definitions(defines).items()}


def configurations(app: str, sweep: dict[str, list[str]]) -> list[dict[str, str]]:
    """Every combination of the swept values; a parameter with choices not given sweeps them."""
    load_app(app, {})
    values = dict(sweep)
    for p in params.declared():
        if p.choices and p.name not in values:
            values[p.name] = [params.value_text(c) for c in p.choices]
    names = list(values)
    return [dict(zip(names, combo)) for combo in itertools.product(*(values[n] for n in names))]


def layout(app: str, configuration: dict[str, str]) -> Layout:
    """Where the configuration's segments run, and how many threads each can put to work
    (a `FloemError` when it does not compile)."""
    ir = check_program(load_app(app, configuration))
    threaded = [s for s in ir.segments.values() if s.kind == SegmentKind.THREAD]
    instances = {q.dequeuer: q.instances for q in ir.queues.values()}
    return Layout(
        processes={p.name: p.device == Device.NIC for p in ir.processes.values()},
        segments={s.name: s.process for s in threaded},
        host_io=any(n.uses_network and ir.segments[n.segment].device == Device.CPU
                    for n in ir.nodes()),
        limits={s.name: 1 if not s.parallel else instances.get(s.source, 0) for s in threaded},
        shadows=sum(ir.queues[name].instances for name in synced_queues(ir)),
        sync_batch=sync_batch(ir))


def synced_queues(ir: ProgramIR) -> list[str]:
    """The queues the NIC's sync layer moves between NIC and host memory."""
    return [name for p in ir.processes.values() if p.device == Device.NIC
            for name, side in ir.plan.processes[p.name].queues.items() if side.synced]


def sync_batch(ir: ProgramIR) -> int:
    """The most entries a sync-layer round moves of one queue instance: the least of the
    synced queues' batches (0: none)."""
    return min((ir.plan.sync_batches[name] for name in synced_queues(ir)), default=0)


def geometries(nics: list[Platform], hosts: list[Platform]) -> list[tuple[Geometry, Geometry]]:
    """The cache geometries to count with, a NIC's and a host's per run: each platform's
    in some run (the NIC's simulation does not depend on the host's, nor the reverse)."""
    nic = list(dict.fromkeys(p.caches for p in nics))
    host = list(dict.fromkeys(p.caches for p in hosts))
    return [(nic[i % len(nic)], host[i % len(host)]) for i in range(max(len(nic), len(host)))]


class Progress(Protocol):
    """Where a study reports each configuration it starts counting and how it ended."""

    def start(self, label: str) -> None: ...

    def finish(self, label: str, result: str) -> None: ...


def run_study(study: Study, nics: list[Platform], hosts: list[Platform], load: float | None,
              progress: Progress) -> list[Row]:
    """Count every configuration of ``study`` and predict it on every NIC beside every host
    (latency at ``load`` packets/s, or by default at 80% of the prediction); with
    ``study.best_threads``, each at the threads the model finds best for that pair
    (`floem.explore.threads`). A configuration whose threads interleave is counted twice
    (its row's ``spread``)."""
    rows: list[Row] = []
    configs = configurations(study.app, study.sweep)
    shown_names = [n for n in configs[0]
                   if n in study.sweep or len({c[n] for c in configs}) > 1] if configs else []
    targets = list(dict.fromkeys(nic.target for nic in nics))
    for config in configs:
        shown = {n: config[n] for n in shown_names}
        label = f"{study.title}: " + (" ".join([f"{k}={v}" for k, v in shown.items()]
                                               + study.options) or "(defaults)")
        counters = {}
        for target in targets:
            mine = [nic for nic in nics if nic.target == target]
            named = f"{label}, NIC on {target}" if len(targets) > 1 else label
            counters[target] = counter = _Counter(study, config, geometries(mine, hosts),
                                                  target, named, progress)
            progress.start(named)
            measurement, error = counter.first()
            progress.finish(named, f"failed: {error}" if error else summary(measurement))
        for nic in nics:
            for host in hosts:
                rows.append(counters[nic.target].row(shown, nic, host, load))
    return rows


class _Counter:
    """The counts of one configuration of a study with its NIC's segments built for one
    ``--nic`` target: as written, with other threads, and again (each kept, so that every
    pair of platforms reuses them)."""

    def __init__(self, study: Study, config: dict[str, str],
                 pairs: list[tuple[Geometry, Geometry]], target: str, label: str,
                 progress: Progress) -> None:
        self.study, self.config, self.pairs, self.target = study, config, pairs, target
        self.label, self.progress = label, progress
        self.known: dict[threads.Assignment, Measurement] = {}
        self.written: threads.Assignment = ()  # the threads it is written with
        self.again: dict[threads.Assignment, Measurement] = {}
        self.layouts: dict[str, Layout] = {}
        self.error: str | None = None
        self.sources = provenance.app_sources_hash(study.app)

    def first(self) -> tuple[Measurement | None, str | None]:
        """The configuration counted with the threads it is written with, or why not."""
        try:
            self.layouts = self._layouts()
            m = self._measure([])
        except (FloemError, RunFailed) as e:
            self.error = str(e).replace("\n", " ")
            return None, self.error
        self.written = self._written(m)
        self.known[self.written] = m
        return m, None

    def row(self, shown: dict[str, str], nic: Platform, host: Platform,
            load: float | None) -> Row:
        """The configuration's row for ``nic`` beside ``host``."""
        row = Row(self.study.title, shown, nic.name, host.name, None, None,
                  options=self.study.options, app=self.study.app, app_sources=self.sources)
        if not self.known:
            row.error = self.error
            return row
        try:
            assignment = next(iter(self.known))
            if self.study.best_threads:
                best = threads.search(self.known, self._rooms(), self._count, nic, host,
                                      self.study.host_cores, self.study.per_core)
                assignment = best.assignment
                row.threads = threads.text(assignment)
                row.searched = (f"{best.tried} assignments predicted, "
                                f"{best.recounted} counted with their own threads")
            row.measurement = self.known[assignment]
            row.prediction = predict(row.measurement, nic, host, load)
            if _interleaves(row.measurement):
                again = self._count(assignment, again=True)
                rate = predict(again, nic, host, latency_too=False).packets_per_s
                row.spread = abs(rate - row.packets_per_s) / row.packets_per_s \
                    if row.packets_per_s else None
        except (FloemError, RunFailed) as e:
            row.error = str(e).replace("\n", " ")
        return row

    def _count(self, assignment: threads.Assignment, again: bool = False) -> Measurement:
        """The configuration counted with ``assignment``'s threads (``again``: a second
        time, kept apart from the first); the threads it is written with as written (a
        segment a cut makes has no ``--threads`` of its own: its cut gives them)."""
        if again and assignment in self.again:
            return self.again[assignment]
        m = self._measure([] if assignment == self.written else
                          [f"--nic-managers={n}" if name == MANAGERS else f"--threads={name}={n}"
                           for name, n in assignment])
        what = "counted again" if again else f"with {threads.text(assignment)}"
        self.progress.finish(f"{self.label}, {what}", summary(m))
        if again:
            self.again[assignment] = m
        return m

    def _layouts(self) -> dict[str, Layout]:
        if self.study.command is not None:
            return {value: layout(self.study.app, {**self.config, name: value})
                    for name, value in (m.split("=", 1) for m in self.study.machines)}
        return {"": layout(self.study.app, self.config)}

    def _measure(self, extra: list[str]) -> Measurement:
        study = self.study
        defines = [f"{k}={v}" for k, v in self.config.items()]
        options = study.options + extra
        if study.command is not None and study.inputs is not None:
            return measure_machines(study.command, defines, options, *study.inputs,
                                    self.layouts, self.pairs, self.target)
        assert study.workload is not None
        return measure(study.app, defines, options, study.workload, self.layouts[""],
                       self.pairs, study.baseline, self.target)

    def _rooms(self) -> dict[str, threads.Room]:
        """Every thread segment of the configuration (of any of its machines), with its side
        and the most threads that can work in it, and the NIC's sync-layer managers when it
        has them (at most one a queue instance they manage: manager m of n moves the
        entries of instances m, m + n, ...)."""
        rooms: dict[str, threads.Room] = {}
        for lay in self.layouts.values():
            for name, process in lay.segments.items():
                rooms[name] = threads.Room(lay.processes[process], lay.limits.get(name, 0))
        if MANAGERS in dict(self.written):
            rooms[MANAGERS] = threads.Room(True, max(lay.shadows for lay in self.layouts.values()))
        return rooms

    def _written(self, m: Measurement) -> threads.Assignment:
        """The threads ``m`` was counted with, by segment, and its NIC managers (named
        `MANAGERS`) when it has them."""
        counted = {name.split("/")[-1]: s.threads for name, s in m.segments.items()}
        written = {name: counted.get(name, 1) for lay in self.layouts.values()
                   for name in lay.segments}
        managers = max((r.nic_managers for r in m.machines.values()), default=0)
        return tuple(sorted((written | {MANAGERS: managers} if managers else written).items()))


def _interleaves(m: Measurement) -> bool:
    """True when more than one thread of a machine works on the packets: how valgrind or qemu
    interleaves them can change what the caches hold and which thread wins a race."""
    by_machine: dict[str, int] = {}
    for s in m.segments.values():
        if s.instructions:
            by_machine[s.machine] = by_machine.get(s.machine, 0) + s.working
    return any(n > 1 for n in by_machine.values())


def summary(m: Measurement | None) -> str:
    """What a measurement counted per packet, in a line: host and NIC instructions, PCIe."""
    if m is None:
        return "-"
    nic = sum(s.instructions for s in m.side(True).values())
    host = sum(s.instructions for s in m.side(False).values())
    return (f"host {host:,.0f} instructions/packet, NIC {nic:,.0f} instructions/packet, "
            f"PCIe {m.queue_bytes:,.0f} queue bytes/packet")


def make_workload(command: str | None, pcap: str | None, workdir: str,
                  name: str = "workload") -> Workload:
    """The capture: ``pcap``, or the one ``command`` writes to ``{pcap}`` (run once)."""
    if pcap is not None:
        return Workload.read(pcap)
    if command is None:
        raise FloemError("floem explore needs a workload: --pcap FILE or --workload CMD")
    if "{pcap}" not in command:
        raise FloemError(f"{command!r}: the command must write the capture to {{pcap}}")
    path = os.path.join(workdir, name + ".pcap")
    argv = [a.replace("{pcap}", path) for a in shlex.split(command)]
    argv = [sys.executable if a in ("python", "python3") else a for a in argv]
    try:
        result = subprocess.run(argv, capture_output=True, text=True)
    except OSError as e:
        raise FloemError(f"cannot run the workload command {argv[0]!r}: {e.strerror}") from None
    if result.returncode != 0:
        raise FloemError(f"the workload command failed ({' '.join(argv)}): "
                         f"{result.stderr.strip()[-500:]}")
    return Workload.read(path)


def make_input(command: str, workdir: str) -> tuple[str, int]:
    """The input file ``command`` writes to ``{input}`` (run once), and its lines."""
    if "{input}" not in command:
        raise FloemError(f"{command!r}: the command must write the input to {{input}}")
    path = os.path.join(workdir, "input.txt")
    argv = [a.replace("{input}", path) for a in shlex.split(command)]
    argv = [sys.executable if a in ("python", "python3") else a for a in argv]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0 or not os.path.exists(path):
        raise FloemError(f"the input command failed ({' '.join(argv)}): "
                         f"{result.stderr.strip()[-500:]}")
    with open(path, "rb") as f:
        lines = sum(1 for _ in f)
    if lines == 0:
        raise FloemError(f"the input command wrote no lines ({' '.join(argv)})")
    return path, lines


def load_sweep_file(path: str, workdir: str) -> tuple[str, list[str], list[str], list[Study]]:
    """A sweep file: its title, NIC and host platforms, and studies (paths relative to the
    file)."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise FloemError(f"cannot read the sweep file: {e}", path) from None
    here = os.path.dirname(os.path.abspath(path))
    studies = []
    workloads: dict[str, Workload] = {}

    def capture(command: str) -> Workload:
        command = command.replace("{here}", here)
        if command not in workloads:
            workloads[command] = make_workload(command, None, _fresh(workdir, len(workloads)))
        return workloads[command]

    for n, s in enumerate(data.get("study", [])):
        try:
            study = Study(s["title"], os.path.join(here, s["app"]),
                          parse_sweep(list(s.get("define", []))), None, list(s.get("options", [])),
                          best_threads=_threads_key(s.get("threads", "as-written"), path),
                          host_cores=int(s["host_cores"]) if "host_cores" in s else None,
                          per_core=bool(s.get("per_core")))
            if "command" in s:
                study.command = s["command"].replace("{here}", here)
                study.machines = [str(m) for m in s["machines"]]
                study.inputs = make_input(s["input"].replace("{here}", here),
                                          _fresh(workdir, len(workloads) + n))
            else:
                study.workload = capture(s["workload"])
                study.baseline = capture(s["baseline"]) if "baseline" in s else None
            studies.append(study)
        except (KeyError, TypeError, ValueError) as e:
            raise FloemError(f"study {n + 1} needs title, app and workload (and may have "
                             f"define, options, baseline, threads, host_cores, per_core), or "
                             f"title, app, command, machines and input: {e}", path) from None
    if not studies:
        raise FloemError("the sweep file has no [[study]]", path)
    return (str(data.get("title", os.path.basename(path))), _names(data.get("nic", [])),
            _names(data.get("host", [])), studies)


def _threads_key(value: object, path: str) -> bool:
    """A study's ``threads``: ``"best"`` (search them) or ``"as-written"`` (the app's)."""
    if value not in ("best", "as-written"):
        raise FloemError(f"a study's threads is \"best\" or \"as-written\", not {value!r}", path)
    return value == "best"


def _names(value: str | list[str]) -> list[str]:
    """A sweep file's platforms: one name, or a list of them."""
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _fresh(workdir: str, n: int) -> str:
    return tempfile.mkdtemp(prefix=f"workload{n}-", dir=workdir)


def platforms_named(names: list[str], kind: str = "nic") -> list[Platform]:
    """The platforms ``names`` of ``kind`` (each checked)."""
    return [load_platform(n, kind) for n in names]


def describe_rows(rows: list[Row]) -> list[dict[str, Any]]:
    """Every row as plain values (the JSON and CSV)."""
    out = []
    for r in rows:
        m, p = r.measurement, r.prediction
        ok = p is not None and not r.failed
        nic = m.side(True) if m else {}
        host = m.side(False) if m else {}
        out.append({
            "study": r.study, "configuration": r.label, "platform": r.platform,
            "host_platform": r.host,
            "predicted_packets_per_s": r.packets_per_s if ok else None,
            "predicted_packets_per_s_per_host_core": r.per_host_core,
            "predicted_latency_us_p50": _finite(p.latency.p50_us) if ok and p else None,
            "predicted_latency_us_p99": _finite(p.latency.p99_us) if ok and p else None,
            "offered_load_packets_per_s": p.load_pps if ok and p else None,
            "bottleneck": p.bottleneck if ok and p else None,
            "threads": r.threads or None, "threads_searched": r.searched or None,
            "nic_isa": m.nic_isa if m else None, "host_isa": m.host_isa if m else None,
            "spread": r.spread,
            "app": provenance.app_path(r.app) if r.app else None,
            "app_sources": r.app_sources or None,
            "platform_sources": {n: provenance.platform_hash(n) for n in (r.platform, r.host) if n},
            "commit": provenance.commit(),
            "toolchain": "; ".join(f"{k}: {v}" for k, v in provenance.toolchain().items()),
            "host_instructions_per_packet": sum(s.instructions for s in host.values()) if m else None,
            "host_cores": sum(s.threads for s in host.values()) if m else None,
            "nic_instructions_per_packet": sum(s.instructions for s in nic.values()) if m else None,
            "nic_cores": sum(s.threads for s in nic.values()) if m else None,
            "nic_us_per_packet": (sum(p.times[n].total for n in nic) / 1e3
                                  if ok and p and nic else None),
            "pcie_bytes_per_packet": _pcie(m) if m else None,
            "cache_hit_rate": m.hit_rate if m else None,
            "capacities": ({k: _finite(v) for k, v in p.capacities.items()}
                           if ok and p else None),
            "segments": ({n: {**dataclasses.asdict(s), **({"time_ns": dataclasses.asdict(p.times[n])}
                                                           if ok and p else {})}
                          for n, s in m.segments.items()} if m else None),
            "machines": ({n: {k: v for k, v in dataclasses.asdict(rec).items() if k != "managers"}
                          for n, rec in m.machines.items()} if m else None),
            "error": r.failed})
    return out


def _pcie(m: Measurement) -> float:
    """Bytes over PCIe per packet before protocol overhead: queue entries, elements' DMA,
    and the frames when the host does the packet I/O."""
    frames = m.frame_bytes * (1 + m.replies) if m.host_io else 0.0
    return m.queue_bytes + sum(s.dma_bytes for s in m.segments.values()) + frames


def _finite(value: float) -> float | None:
    """``value``, or None (JSON's null) when it is infinite: overloaded, or unbounded."""
    return None if math.isinf(value) else value
