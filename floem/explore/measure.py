"""Counting what one configuration of an app does per packet: the model's input.

A configuration (``-D`` values and build options) replays a workload capture through
``floem run --net pcap --count-instructions``, as fast as the pipeline goes, until
every frame has been received and the counters stand still (`Replay`); or, in a study of
several machines, a command runs them all on an input file (`measure_machines`). Every
process runs under qemu-user of its ISA with Floem's counting plugin
(`floem.explore.plugin`): the NIC's processes in the NIC target's ISA (``nic_target``:
MIPS64 for ``liquidio``, AArch64 for ``bluefield``, this machine's for ``emu``), the
host's in x86-64. It counts what each segment's threads execute on packets:
instructions, atomic read-modify-writes and, with a platform's cache geometry simulated
(a first level per thread, the last shared by the process), the loads and fetches that
miss its first-level and its last-level caches. The runtime's report gives the rest:
frames received and sent by each thread, the DMA transfers it waited for, its engine
calls, the queue entries the sync layer moved, cache hits. One run per cache geometry the
platforms need, and, when the program takes locks, one more with ``FLOEM_COUNT=serial``:
what is executed holding a lock.

Everything is a count, so the same build and capture give the same figures on any
machine, whatever else it is doing. With a baseline capture (the workload's warm-up,
e.g. a key-value store's preload) each run is also made on the baseline alone and
subtracted.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import dpkt

from floem.errors import FloemError
from floem.explore.counters import Counters, parse
from floem.explore.plugin import read_counts
from floem.ir.cnames import c_global
from floem.platforms import PLATFORMS

POLL_SECONDS = 0.4
#: The ISA the host's processes are counted in (this machine's, as the emulated NIC's).
HOST_ISA = PLATFORMS["emu"].isa
#: How long one run may take before it is reported as failed.
RUN_SECONDS = 1800.0


@dataclass(frozen=True)
class Workload:
    """A capture to replay: its path, frame count and mean frame size."""

    pcap: str
    frames: int
    frame_bytes: float

    @classmethod
    def read(cls, path: str) -> Workload:
        """Count the frames of the capture at ``path``."""
        try:
            with open(path, "rb") as f:
                sizes = [len(buf) for _ts, buf in dpkt.pcap.Reader(f)]
        except (OSError, ValueError, dpkt.dpkt.Error) as e:
            raise FloemError(f"cannot read the workload capture {path}: {e}") from None
        if not sizes:
            raise FloemError(f"the workload capture {path} holds no frames")
        return cls(path, len(sizes), sum(sizes) / len(sizes))

    def first(self, frames: int, path: str) -> Workload:
        """A capture at ``path`` of this one's first ``frames`` frames (this one when it
        has no more)."""
        if frames >= self.frames:
            return self
        with open(self.pcap, "rb") as f, open(path, "wb") as out:
            reader = dpkt.pcap.Reader(f)
            writer = dpkt.pcap.Writer(out, snaplen=reader.snaplen, linktype=reader.datalink())
            for _, (ts, buf) in zip(range(frames), reader):
                writer.writepkt(buf, ts=ts)
        return Workload.read(path)


#: A cache geometry for the counting plugin's simulation, as ``floem run --count-cache``
#: takes it:
#: ``I1:D1:LL``, each ``BYTES,WAYS,LINE``.
Geometry = str


@dataclass(frozen=True)
class Layout:
    """Where a configuration's segments run: each segment's process, and which processes
    are the NIC's (from the compiled program, not from a run)."""

    processes: dict[str, bool]              # process -> on the NIC
    segments: dict[str, str]                # segment running as threads -> its process
    host_io: bool                           # the host receives and sends the frames
    limits: dict[str, int] = field(default_factory=dict)   # most threads that can work (0: any)
    shadows: int = 0                        # queue instances the NIC's sync layer manages
    sync_batch: int = 0                     # most entries its round moves of one (the least
                                            # of its queues' batches)


@dataclass(frozen=True)
class Misses:
    """Loads and instruction fetches that missed a simulated first-level cache, those that
    missed the second level too (None: not simulated), and those that missed the last
    level (stores are not: a core's store buffer takes them)."""

    first: float = 0.0
    last: float = 0.0
    second: float | None = None

    @property
    def past_second(self) -> float:
        """The misses that went beyond a second level: all first-level ones without one."""
        return self.first if self.second is None else self.second

    def per(self, packets: int) -> Misses:
        """These misses per packet of ``packets``."""
        return Misses(self.first / packets, self.last / packets,
                      None if self.second is None else self.second / packets)


@dataclass
class SegmentCounts:
    """What one segment's threads did, per packet of the workload (all its threads), or one
    thread of a program of the user's (a callable segment's caller)."""

    process: str
    on_nic: bool
    threads: int = 0
    machine: str = ""                       # a study of several machines: which one
    limit: int = 0                          # most threads that can work in it (0: any)
    instructions: float = 0.0
    atomics: float = 0.0                    # atomic read-modify-writes, in its ISA's terms
    misses: dict[Geometry, Misses] = field(default_factory=dict)    # by simulated caches
    serial_instructions: float = 0.0        # executed holding a lock
    serial_atomics: float = 0.0
    received: float = 0.0                   # frames, through packet I/O
    sent: float = 0.0
    dma_waits: float = 0.0                  # blocking DMA round trips
    dma_bytes: float = 0.0
    engine_calls: float = 0.0
    engine_bytes: float = 0.0

    @property
    def working(self) -> int:
        """The threads that can work: all of them, or at most `limit`."""
        return min(self.threads, self.limit) if self.limit else self.threads


@dataclass
class Machine:
    """What one machine's NIC and host moved per packet (a study runs one, or several
    servers each with its own NIC)."""

    host_io: bool = False                   # the host receives and sends the frames
    nic_managers: int = 0                   # NIC cores running the sync layer
    queue_entries: float = 0.0              # queue entries the sync layer moved over PCIe
    queue_bytes: float = 0.0                # their bytes, a status word each included
    managers: SegmentCounts | None = None   # the managers' rounds that moved entries
    manager_rounds: float = 0.0             # those rounds
    round_instructions: float = 0.0         # a round's that moved nothing (0: none counted)
    sync_batch: int = 0                     # the layout's


@dataclass
class Measurement:
    """One configuration's counts per packet of the workload."""

    packets: int
    frame_bytes: float                      # 0: not known (a study that runs a command)
    replies: float                          # frames sent per packet received
    segments: dict[str, SegmentCounts] = field(default_factory=dict)
    machines: dict[str, Machine] = field(default_factory=dict)
    hit_rate: float | None = None
    nic_isa: str = HOST_ISA                 # the ISA the NIC's segments were counted in
    host_isa: str = HOST_ISA

    @property
    def host_threads(self) -> int:
        """The host threads that worked (executed something on the packets)."""
        return sum(s.threads for s in self.side(False).values() if s.instructions)

    def side(self, nic: bool, machine: str | None = None) -> dict[str, SegmentCounts]:
        """The segments on the NIC (``nic``) or on the host (of ``machine``, when given)."""
        return {n: s for n, s in self.segments.items()
                if s.on_nic == nic and machine in (None, s.machine)}

    @property
    def queue_bytes(self) -> float:
        return sum(m.queue_bytes for m in self.machines.values())

    @property
    def host_io(self) -> bool:
        return any(m.host_io for m in self.machines.values())


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

    def __enter__(self) -> Replay:
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

    @property
    def output(self) -> str:
        """The capture the run's sent frames go to."""
        return self._out.name

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
            baseline: Workload | None = None, nic_target: str = "emu",
            sent_to: str | None = None) -> Measurement:
    """Count what one configuration does per packet of ``workload``.

    ``geometries``: pairs of cache geometries (the NIC's, the host's) to simulate, one
    counted run each (none: one run, no cache simulation). ``baseline``: a capture that
    begins the workload (e.g. its warm-up); every run is also made on it alone and
    subtracted, so the figures are those of the rest. ``nic_target``: the ``--nic`` the
    NIC's processes are built for and counted in the ISA of (``liquidio``, ``bluefield``,
    ``emu``). ``sent_to``: where to write the frames the first run on ``workload`` sent
    (a capture), when given.
    """
    options = _on_target(options, nic_target)
    frames = workload.frames - (baseline.frames if baseline else 0)
    if frames <= 0:
        raise FloemError("the baseline capture is not shorter than the workload")
    size = (workload.frame_bytes * workload.frames
            - (baseline.frame_bytes * baseline.frames if baseline else 0)) / frames
    captures = [workload] + ([baseline] if baseline else [])
    keep = sent_to

    def run(caches: dict[str, Geometry], env: dict[str, str]) -> Counted:
        nonlocal keep
        runs = [_count(app, defines, options, c, layout, caches, env,
                       keep if c is workload else None) for c in captures]
        keep = None
        if len(runs) == 1:
            return {"": runs[0]}
        (report, counts), (before, counted_before) = runs
        return {"": (report.minus(before), {s: t.minus(counted_before.get(s, Tally(t.process)))
                                            for s, t in counts.items()})}

    return _measurement(run, {"": layout}, geometries, frames, size, nic_target)


def _on_target(options: list[str], nic_target: str) -> list[str]:
    """``options`` building the NIC's processes for ``nic_target``."""
    if nic_target not in PLATFORMS:
        raise FloemError(f"no NIC target {nic_target!r} to count on (the targets: "
                         f"{', '.join(PLATFORMS)})")
    return options + [f"--nic={nic_target}"]


def measure_machines(command: str, defines: list[str], options: list[str], inputs: str,
                     packets: int, layouts: dict[str, Layout],
                     geometries: list[tuple[Geometry, Geometry]],
                     nic_target: str = "emu") -> Measurement:
    """Count what one configuration of a study of several machines does per packet: run
    ``command``, which starts every machine's program (``layouts``: each one's, by name)
    on the input file ``inputs`` (``packets`` packets: its lines), and ends when they are
    done. Its words ``{input}``, ``{defines}`` (``-DNAME=VALUE`` each), ``{count}`` (where
    each machine counts: BASE, as ``floem run --count-instructions BASE.MACHINE``) and
    ``{options}`` (each option of ``floem run`` as ``--floem-option=OPTION``) are filled
    in; each machine's lines in its stderr start with ``[MACHINE] ``. ``nic_target``: as
    for `measure`."""
    options = _on_target(options, nic_target)

    def run(caches: dict[str, Geometry], env: dict[str, str]) -> Counted:
        with tempfile.TemporaryDirectory() as tmp:
            base = os.path.join(tmp, "count")
            flags = options + [f"--count-cache={p}={g}" for p, g in caches.items()]
            argv = []
            for word in shlex.split(command):
                if word == "{defines}":
                    argv += [f"-D{d}" for d in defines]
                elif word == "{options}":
                    argv += [f"--floem-option={f}" for f in flags]
                else:
                    argv.append(word.replace("{input}", inputs).replace("{count}", base))
            argv = [sys.executable if a in ("python", "python3") else a for a in argv]
            stderr = _run_command(argv, {**os.environ, **env})
            counted: Counted = {}
            for name, layout in layouts.items():
                lines = [ln[len(name) + 3:] for ln in stderr.splitlines()
                         if ln.startswith(f"[{name}] ")]
                report = parse(lines)
                counts: Counts = {}
                for process in layout.processes:
                    segments = [s for s, p in layout.segments.items() if p == process]
                    counts.update(process_counts(f"{base}.{name}", process, segments, report,
                                                 "\n".join(lines),
                                                 serial=env.get("FLOEM_COUNT") == "serial"))
                counted[name] = (report, counts)
        return counted

    return _measurement(run, layouts, geometries, packets, 0.0, nic_target)


#: The function a NIC's manager core starts in (process.c.j2), and the name its counted
#: rounds go by in a run's counts.
MANAGER_THREAD = "floem_manager_thread"
MANAGERS = "(managers)"

#: What a counted run gives, by machine: its final counters and each segment's tally.
Counted = dict[str, tuple[Counters, "Counts"]]


def _measurement(run: Callable[[dict[str, Geometry], dict[str, str]], Counted],
                 layouts: dict[str, Layout], geometries: list[tuple[Geometry, Geometry]],
                 packets: int, frame_bytes: float, nic_target: str) -> Measurement:
    """Counted runs, one per pair of geometries, then one of the serial work when the
    program takes locks: the counts per packet."""
    first: Counted | None = None
    misses: dict[tuple[str, str], dict[Geometry, Misses]] = {}
    pairs: list[tuple[Geometry, Geometry] | None] = [*geometries] or [None]
    for pair in pairs:
        caches = {p: pair[0] if nic else pair[1] for layout in layouts.values()
                  for p, nic in layout.processes.items()} if pair else {}
        counted = run(caches, {})
        first = first or counted
        for machine, (_, counts) in counted.items():
            for name, tally in counts.items():
                if pair:
                    misses.setdefault((machine, name), {})[caches[tally.process]] = Misses(
                        tally.first_misses, tally.last_misses, tally.second_misses)
    assert first is not None
    m = Measurement(packets=packets, frame_bytes=frame_bytes,
                    replies=sum(report.tx for report, _ in first.values()) / packets,
                    nic_isa=PLATFORMS[nic_target].isa)
    hits = sum(r.hits for r, _ in first.values())
    lookups = hits + sum(r.misses for r, _ in first.values())
    m.hit_rate = hits / lookups if lookups else None
    for machine, (report, counts) in first.items():
        record = _add_machine(m, machine, report, counts, layouts[machine], packets)
        for name in counts:
            tallied = record.managers if name == MANAGERS else m.segments[_named(machine, name)]
            assert tallied is not None
            tallied.misses = {g: n.per(packets)
                              for g, n in misses.get((machine, name), {}).items()}
    if any(report.lock_acquisitions for report, _ in first.values()):
        for machine, (_, serial) in run({}, {"FLOEM_COUNT": "serial"}).items():
            for name, tally in serial.items():
                s = m.segments[_named(machine, name)]
                s.serial_instructions = tally.instructions / packets
                s.serial_atomics = tally.atomics / packets
    return m


def _named(machine: str, name: str) -> str:
    """A segment's name in a measurement: ``MACHINE/SEGMENT`` when there are machines."""
    return f"{machine}/{name}" if machine else name


def _add_machine(m: Measurement, machine: str, c: Counters, counts: Counts, layout: Layout,
                 n: int) -> Machine:
    """One machine's counters and counts, per packet, into ``m``; its record."""
    m.machines[machine] = record = Machine(
        host_io=layout.host_io, queue_entries=c.entries / n, queue_bytes=c.entry_bytes / n,
        sync_batch=layout.sync_batch)
    for t in c.threads:
        if not t.worker:
            record.nic_managers += 1
            continue
        if t.segment not in layout.segments:
            continue
        s = m.segments.setdefault(_named(machine, t.segment), SegmentCounts(
            t.process, layout.processes[layout.segments[t.segment]], machine=machine,
            limit=layout.limits.get(t.segment, 0)))
        s.threads += 1
        s.received += t.received / n
        s.sent += t.sent / n
        s.dma_waits += t.dma_waits / n
        s.dma_bytes += t.dma_bytes / n
        s.engine_calls += t.engine_calls / n
        s.engine_bytes += t.engine_bytes / n
    for name, tally in counts.items():
        if name == MANAGERS:
            s = record.managers = SegmentCounts(tally.process, True, threads=tally.threads,
                                                machine=machine)
            record.manager_rounds = tally.rounds / n
            if tally.idle_rounds:
                record.round_instructions = tally.idle_instructions / tally.idle_rounds
        else:
            s = m.segments.setdefault(_named(machine, name), SegmentCounts(  # a user's thread
                tally.process, layout.processes[tally.process], threads=tally.threads,
                machine=machine))
        s.instructions, s.atomics = tally.instructions / n, tally.atomics / n
    return record


def _run_command(argv: list[str], env: dict[str, str]) -> str:
    """Run a study's command to its end (at most `RUN_SECONDS`); its stderr."""
    with tempfile.TemporaryFile("w+") as err:
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, text=True,
                                    env=env, start_new_session=True)
        except OSError as e:
            raise RunFailed(f"cannot run {argv[0]!r}: {e.strerror}") from None
        try:
            proc.wait(RUN_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise RunFailed(f"not done after {RUN_SECONDS:g} s") from None
        err.seek(0)
        stderr = err.read()
    if proc.returncode != 0:
        raise RunFailed(f"{os.path.basename(argv[1] if len(argv) > 1 else argv[0])} exited "
                        f"with status {proc.returncode}: " + _failure(stderr))
    return stderr


@dataclass(frozen=True)
class Tally:
    """What the counting plugin counted of one segment in one run, or of the threads of a
    program of the user's that started in one function (``threads`` of them counted
    something)."""

    process: str
    threads: int = 0
    instructions: int = 0
    atomics: int = 0
    first_misses: int = 0                   # loads and fetches missing the first level,
    last_misses: int = 0                    # the last,
    second_misses: int = 0                  # and the second (the first's without one)
    rounds: int = 0                         # sync-layer managers: rounds that moved entries,
    idle_rounds: int = 0                    # rounds that moved nothing,
    idle_instructions: int = 0              # and what those executed (not in `instructions`)

    def minus(self, other: Tally) -> Tally:
        """What this run counted beyond ``other`` (the idle rounds stay this run's: they
        give the cost of a round, not work of the packets)."""
        return Tally(self.process, self.threads, self.instructions - other.instructions,
                     self.atomics - other.atomics, self.first_misses - other.first_misses,
                     self.last_misses - other.last_misses,
                     self.second_misses - other.second_misses, self.rounds - other.rounds,
                     self.idle_rounds, self.idle_instructions)


#: What a counted run gives of one machine: each segment's tally.
Counts = dict[str, Tally]


def _count(app: str, defines: list[str], options: list[str], workload: Workload, layout: Layout,
           caches: dict[str, Geometry], env: dict[str, str],
           sent_to: str | None = None) -> tuple[Counters, Counts]:
    """One counted run: its final counters, and each segment's counts (all its threads);
    the frames it sent copied to ``sent_to``, when given."""
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "count")
        flags = ["--count-instructions", base]
        for process, geometry in caches.items():
            flags += ["--count-cache", f"{process}={geometry}"]
        with Replay(app, defines, options + flags, workload, env) as run:
            run.finished()
            stderr = run.stop()
            if sent_to is not None:
                shutil.copyfile(run.output, sent_to)
        report = parse(stderr.splitlines())
        counts: Counts = {}
        for process in layout.processes:
            segments = [s for s, p in layout.segments.items() if p == process]
            counts.update(process_counts(base, process, segments, report, stderr,
                                         serial=env.get("FLOEM_COUNT") == "serial"))
    return report, counts


def process_counts(base: str, process: str, segments: list[str], report: Counters,
                   stderr: str = "", serial: bool = False) -> Counts:
    """What the counting plugin counted of ``process``'s threads (``base``.PROCESS): each
    of ``segments`` (the threads named by its ``<segment>_thread``), and each thread of a
    program of the user's by the function it started in (``worker[0]``, ``worker[1]``...,
    in the order they started). A segment whose threads handled packets must be there,
    unless the run counted only what runs holding a lock (``serial``: FLOEM_COUNT=serial),
    which a segment that takes no lock never does."""
    path = f"{base}.{process}"
    if not os.path.exists(path):
        raise RunFailed(f"the counting plugin wrote no counts for process {process}: "
                        + _failure(stderr))
    functions = {c_global("segment", s, "thread"): s for s in segments}
    counts: Counts = {}
    for thread in read_counts(path):
        c = thread.counts
        if c["Ir"] == 0:
            continue
        if thread.root in functions:
            name = functions[thread.root]
        elif thread.root == MANAGER_THREAD:
            name = MANAGERS
        elif thread.root == "?":
            raise FloemError(f"the counting plugin counted {c['Ir']:,} instructions of process "
                             f"{process} in a thread it could not name ({path})")
        else:                   # a thread of the user's program, by the function it started in
            name = f"{thread.root}[{sum(n.startswith(f'{thread.root}[') for n in counts)}]"
        before = counts.get(name, Tally(process))
        counts[name] = Tally(process, before.threads + 1, before.instructions + c["Ir"],
                             before.atomics + c["Ge"],
                             before.first_misses + c["I1mr"] + c["D1mr"],
                             before.last_misses + c["ILmr"] + c["DLmr"],
                             before.second_misses + c["I2mr"] + c["D2mr"],
                             before.rounds + thread.rounds - thread.idle_rounds,
                             before.idle_rounds + thread.idle_rounds,
                             before.idle_instructions + thread.idle.get("Ir", 0))
    for segment in [] if serial else segments:
        if segment not in counts and any(t.segment == segment and t.packets
                                         for t in report.threads):
            raise FloemError(f"the counts of process {process} miss segment {segment} "
                             f"({c_global('segment', segment, 'thread')}), whose threads "
                             "handled packets")
    return counts


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
