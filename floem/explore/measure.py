"""Counting what one configuration of an app does per packet of a capture: the model's input.

A configuration (``-D`` values and build options) replays a workload capture through
``floem run --net pcap --count-instructions``, as fast as the pipeline goes, until
every frame has been received and the counters stand still (`Replay`). Every process
runs under callgrind, which counts what each segment's threads execute on packets
(`floem.explore.callgrind`): instructions, atomic read-modify-writes and, with a
platform's cache geometry simulated, last-level cache misses. The runtime's report
gives the rest: frames received and sent by each thread, the DMA transfers it waited
for, its engine calls, the queue entries the sync layer moved, cache hits. One run per
cache geometry the platforms need, and, when the program takes locks, one more with
``FLOEM_COUNT=serial``: what is executed holding a lock.

Everything is a count, so the same build and capture give the same figures on any
machine, whatever else it is doing. With a baseline capture (the workload's warm-up,
e.g. a key-value store's preload) each run is also made on the baseline alone and
subtracted.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import dpkt

from floem.errors import FloemError
from floem.explore.callgrind import read_profile
from floem.explore.counters import Counters, parse

POLL_SECONDS = 0.4
#: How long one run may take before it is reported as failed.
RUN_SECONDS = 1800.0


@dataclass(frozen=True)
class Workload:
    """A capture to replay: its path, frame count and mean frame size."""

    pcap: str
    frames: int
    frame_bytes: float

    @classmethod
    def read(cls, path: str) -> "Workload":
        """Count the frames of the capture at ``path``."""
        try:
            with open(path, "rb") as f:
                sizes = [len(buf) for _ts, buf in dpkt.pcap.Reader(f)]
        except (OSError, ValueError, dpkt.dpkt.Error) as e:
            raise FloemError(f"cannot read the workload capture {path}: {e}") from None
        if not sizes:
            raise FloemError(f"the workload capture {path} holds no frames")
        return cls(path, len(sizes), sum(sizes) / len(sizes))


#: A cache geometry for callgrind's simulation, as ``floem run --count-cache`` takes it:
#: ``I1:D1:LL``, each ``BYTES,WAYS,LINE``.
Geometry = str


@dataclass(frozen=True)
class Layout:
    """Where a configuration's segments run: each segment's process, and which processes
    are the NIC's (from the compiled program, not from a run)."""

    processes: dict[str, bool]              # process -> on the NIC
    segments: dict[str, str]                # segment running as threads -> its process
    host_io: bool                           # the host receives and sends the frames
    callables: dict[str, str] = field(default_factory=dict)    # callable segment -> process

    def function(self, segment: str) -> str:
        """The C function whose inclusive count is ``segment``'s: a thread's loop, or the
        callable segment itself."""
        return segment if segment in self.callables else f"{segment}_thread"

    def process(self, segment: str) -> str:
        return self.callables.get(segment) or self.segments[segment]


@dataclass
class SegmentCounts:
    """What one segment's threads did, per packet of the workload (all its threads)."""

    process: str
    on_nic: bool
    threads: int = 0
    instructions: float = 0.0
    atomics: float = 0.0                    # atomic read-modify-writes (callgrind's Ge)
    misses: dict[Geometry, float] = field(default_factory=dict)  # last-level cache misses
    serial_instructions: float = 0.0        # executed holding a lock
    serial_atomics: float = 0.0
    received: float = 0.0                   # frames, through packet I/O
    sent: float = 0.0
    dma_waits: float = 0.0                  # blocking DMA round trips
    dma_bytes: float = 0.0
    engine_calls: float = 0.0
    engine_bytes: float = 0.0


@dataclass
class Measurement:
    """One configuration's counts per packet of the workload."""

    packets: int
    frame_bytes: float
    replies: float                          # frames sent per packet received
    host_io: bool                           # the host receives and sends the frames
    segments: dict[str, SegmentCounts] = field(default_factory=dict)
    nic_managers: int = 0                   # NIC cores running the sync layer
    queue_entries: float = 0.0              # queue entries the sync layer moved over PCIe
    queue_bytes: float = 0.0                # their bytes, a status word each included
    dma_engine_bytes: float = 0.0           # all the DMA engine moved, polling included
    hit_rate: float | None = None

    def side(self, nic: bool) -> dict[str, SegmentCounts]:
        """The segments on the NIC (``nic``) or on the host."""
        return {n: s for n, s in self.segments.items() if s.on_nic == nic}


class RunFailed(Exception):
    """A run stopped or hung; the message says how (the end of its stderr)."""


class Replay:
    """``floem run APP --net pcap`` of one configuration in the background; SIGUSR1 snapshots."""

    def __init__(self, app: str, defines: list[str], options: list[str], workload: Workload,
                 env: dict[str, str] | None = None) -> None:
        self.workload = workload
        self._out = tempfile.NamedTemporaryFile(suffix=".pcap")
        self.command = [sys.executable, "-m", "floem.cli", "run", app, "--report", "--net", "pcap",
                        "--pcap-in", workload.pcap, "--pcap-out", self._out.name,
                        "--duration", str(RUN_SECONDS), *options]
        for d in defines:
            self.command += ["-D", d]
        self.env = {**os.environ, **(env or {})}

    def __enter__(self) -> "Replay":
        self._err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=self._err,
                                     text=True, env=self.env, start_new_session=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._err.close()
        self._out.close()

    def stop(self) -> str:
        """Stop the run (SIGINT, as a user would) and return its stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.stderr()

    def stderr(self) -> str:
        self._err.seek(0)
        return self._err.read()

    def finished(self, deadline_s: float = RUN_SECONDS) -> Counters:
        """Wait until every frame is in and the counters stand still; those counters."""
        deadline = time.monotonic() + deadline_s
        last, still = None, 0
        while still < 2:
            time.sleep(POLL_SECONDS)
            if self.proc.poll() is not None:
                raise RunFailed(_failure(self.stderr()))
            if time.monotonic() > deadline:
                raise RunFailed(f"not done after {deadline_s:g} s")
            if not handles_sigusr1(self.proc.pid):
                continue
            self.proc.send_signal(signal.SIGUSR1)
            time.sleep(POLL_SECONDS)
            c = parse(self.stderr().splitlines())
            progress = (c.rx, c.tx, sum(t.runs for t in c.threads))
            done = c.rx >= self.workload.frames and progress == last
            still = still + 1 if done else 0
            last = progress
        return c


def measure(app: str, defines: list[str], options: list[str], workload: Workload,
            layout: Layout, geometries: list[tuple[Geometry, Geometry]],
            baseline: Workload | None = None) -> Measurement:
    """Count what one configuration does per packet of ``workload``.

    ``geometries``: pairs of cache geometries (the NIC's, the host's) to simulate, one
    counted run each (none: one run, no cache simulation). ``baseline``: a capture that
    begins the workload (e.g. its warm-up); every run is also made on it alone and
    subtracted, so the figures are those of the rest.
    """
    frames = workload.frames - (baseline.frames if baseline else 0)
    if frames <= 0:
        raise FloemError("the baseline capture is not shorter than the workload")
    size = (workload.frame_bytes * workload.frames
            - (baseline.frame_bytes * baseline.frames if baseline else 0)) / frames
    captures = [workload] + ([baseline] if baseline else [])

    def counted(caches: dict[str, Geometry], env: dict[str, str]) -> tuple[Counters, Counts]:
        runs = [_count(app, defines, options, c, layout, caches, env) for c in captures]
        if len(runs) == 1:
            return runs[0]
        (report, counts), (before, counted_before) = runs
        return report.minus(before), {s: t.minus(counted_before.get(s, Tally()))
                                      for s, t in counts.items()}

    report: Counters | None = None
    tallies: Counts = {}
    misses: dict[str, dict[Geometry, int]] = {}
    for pair in geometries or [None]:
        caches = {p: pair[0] if on_nic else pair[1] for p, on_nic in layout.processes.items()} if pair else {}
        run_report, run = counted(caches, {})
        report = report or run_report
        for segment, tally in run.items():
            tallies.setdefault(segment, tally)
            if pair:
                geometry = caches[layout.process(segment)]
                misses.setdefault(segment, {})[geometry] = tally.misses
    assert report is not None
    m = _per_packet(report, frames, size, layout)
    for segment, tally in tallies.items():
        s = m.segments.setdefault(segment, SegmentCounts(      # a callable: one caller assumed
            layout.process(segment), layout.processes[layout.process(segment)], threads=1))
        s.instructions, s.atomics = tally.instructions / frames, tally.atomics / frames
        s.misses = {g: n / frames for g, n in misses.get(segment, {}).items()}
    if report.lock_acquisitions:
        _, serial = counted({}, {"FLOEM_COUNT": "serial"})
        for segment, tally in serial.items():
            m.segments[segment].serial_instructions = tally.instructions / frames
            m.segments[segment].serial_atomics = tally.atomics / frames
    return m


@dataclass(frozen=True)
class Tally:
    """What callgrind counted of one segment in one run (all its threads)."""

    instructions: int = 0
    atomics: int = 0
    misses: int = 0                         # last-level, instruction and data

    def minus(self, other: "Tally") -> "Tally":
        return Tally(self.instructions - other.instructions, self.atomics - other.atomics,
                     self.misses - other.misses)


#: What a counted run gives: each segment's tally.
Counts = dict[str, Tally]


def _per_packet(c: Counters, n: int, frame_bytes: float, layout: Layout) -> Measurement:
    m = Measurement(packets=n, frame_bytes=frame_bytes, replies=c.tx / n,
                    host_io=layout.host_io, queue_entries=c.entries / n,
                    queue_bytes=c.entry_bytes / n, dma_engine_bytes=c.dma_bytes / n,
                    hit_rate=c.hits / (c.hits + c.misses) if c.hits + c.misses else None)
    for t in c.threads:
        if not t.worker:
            m.nic_managers += 1
            continue
        if t.segment not in layout.segments:
            continue
        s = m.segments.setdefault(t.segment, SegmentCounts(
            t.process, layout.processes[layout.segments[t.segment]]))
        s.threads += 1
        s.received += t.received / n
        s.sent += t.sent / n
        s.dma_waits += t.dma_waits / n
        s.dma_bytes += t.dma_bytes / n
        s.engine_calls += t.engine_calls / n
        s.engine_bytes += t.engine_bytes / n
    return m


def _count(app: str, defines: list[str], options: list[str], workload: Workload, layout: Layout,
           caches: dict[str, Geometry], env: dict[str, str]) -> tuple[Counters, Counts]:
    """One counted run: its final counters, and each segment's counts (all its threads)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "count")
        flags = ["--count-instructions", base]
        for process, geometry in caches.items():
            flags += ["--count-cache", f"{process}={geometry}"]
        with Replay(app, defines, options + flags, workload, env) as run:
            run.finished()
            stderr = run.stop()
        report = parse(stderr.splitlines())
        counts: Counts = {}
        for process in layout.processes:
            segments = {s: layout.function(s) for s in [*layout.segments, *layout.callables]
                        if layout.process(s) == process}
            if segments:
                counts.update(_segment_counts(base, process, segments, report, stderr))
    return report, counts


def _segment_counts(base: str, process: str, segments: dict[str, str], report: Counters,
                    stderr: str) -> Counts:
    """Each segment's counts from ``process``'s profile (``segments``: each one's function),
    every instruction of which must belong to one of them."""
    path = f"{base}.{process}"
    if not os.path.exists(path):
        raise RunFailed(f"callgrind wrote no counts for process {process}: "
                        + _failure(stderr + _read(path + ".log")))
    profile = read_profile(path)
    counts = {}
    for segment, function in segments.items():
        if function not in profile.inclusive:
            if any(t.segment == segment and t.packets for t in report.threads):
                raise FloemError(f"callgrind's counts of process {process} miss segment "
                                 f"{segment} ({function}), whose threads handled packets")
            continue
        counts[segment] = Tally(profile.of(function, "Ir"), profile.of(function, "Ge"),
                                sum(profile.of(function, e) for e in ("ILmr", "DLmr", "DLmw")))
    counted = sum(t.instructions for t in counts.values())
    if counted != profile.total("Ir"):
        raise FloemError(f"callgrind counted {profile.total('Ir') - counted:,} instructions of "
                         f"process {process} outside its segment threads")
    return counts


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def handles_sigusr1(pid: int) -> bool:
    """True once process ``pid`` catches or ignores SIGUSR1 (before that it would kill it)."""
    bit = 1 << (signal.SIGUSR1 - 1)
    try:
        with open(f"/proc/{pid}/status") as f:
            masks = {k: int(v, 16) for k, v in (ln.split(":\t") for ln in f)
                     if k in ("SigIgn", "SigCgt")}
    except (OSError, ValueError):
        return False
    return any(m & bit for m in masks.values())


def _failure(stderr: str) -> str:
    """The lines of a failed run's stderr that say why (not its counters)."""
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not _COUNTER.match(ln)]
    return " / ".join(lines[-3:]) or "stopped"


_COUNTER = re.compile(r"^(floem: (thread|net|nic|engine|locks|cache|state)\b|  )")
