"""Measuring one configuration of an app on a capture: what the performance model needs.

A configuration (``-D`` values and build options) replays a workload capture
through ``floem run --net pcap``, as fast as the pipeline goes, until every frame
has been received and the counters stop moving (`Replay`). Up to three runs:

1. native: host CPU time per packet (the host threads' busy turns as CPU time),
   the queue entries the sync layer moved, cache hits, engine calls, lock
   acquisitions;
2. with NIC segments, counted (``--count-instructions``): the NIC process under
   callgrind, which counts the instructions each NIC segment's threads execute on
   packets (deterministic: the same build and capture give the same count);
3. when the program takes locks (``floem_lock``), counted again with
   ``FLOEM_COUNT=serial``: the instructions executed holding a lock.

With a baseline capture (the workload's warm-up, e.g. a key-value store's
preload), each run is also made on the baseline alone and subtracted.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import dpkt

from floem.errors import FloemError
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


@dataclass
class Measurement:
    """One configuration's counts per packet of the workload."""

    packets: int
    frame_bytes: float
    replies: float                      # frames sent per packet received
    host_io: bool                       # the host receives and sends the frames
    host_ns: dict[str, float] = field(default_factory=dict)   # host segment -> CPU ns per packet
    host_threads: dict[str, int] = field(default_factory=dict)  # host segment -> busy threads
    nic_instructions: dict[str, float] = field(default_factory=dict)  # NIC segment -> per packet
    nic_threads: dict[str, int] = field(default_factory=dict)         # NIC segment -> threads
    nic_managers: int = 0
    nic_ns: float = 0.0                 # emulated NIC worker CPU time per packet (this machine)
    serial_instructions: float = 0.0    # executed holding a lock, per packet
    dma_bytes: float = 0.0              # the queue entries' traffic over PCIe
    dma_engine_bytes: float = 0.0       # all the DMA engine moved, polling while idle included
    engine_bytes: dict[str, float] = field(default_factory=dict)
    engine_calls: dict[str, float] = field(default_factory=dict)
    hit_rate: float | None = None


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
            host_io: bool, baseline: Workload | None = None) -> Measurement:
    """Replay ``workload`` through one configuration: native, then counted where needed.

    ``host_io``: the host receives and sends the frames (so they cross PCIe whole).
    ``baseline``: a capture that begins the workload (e.g. its warm-up); every count is
    also taken on it alone and subtracted, so the figures are those of the rest.
    """
    captures = [workload] + ([baseline] if baseline else [])
    natives = []
    for capture in captures:
        with Replay(app, defines, options, capture) as run:
            natives.append(run.finished())
    native = natives[0].minus(natives[1]) if baseline else natives[0]
    frames = workload.frames - (baseline.frames if baseline else 0)
    if frames <= 0:
        raise FloemError("the baseline capture is not shorter than the workload")
    size = (workload.frame_bytes * workload.frames
            - (baseline.frame_bytes * baseline.frames if baseline else 0)) / frames
    m = _per_packet(native, frames, size, host_io)
    if m.nic_threads:
        counted = _counted(app, defines, options, captures, {})
        m.nic_instructions = {s: counted.get(s, 0) / frames for s in m.nic_threads}
        if natives[0].lock_acquisitions:
            serial = _counted(app, defines, options, captures, {"FLOEM_COUNT": "serial"})
            m.serial_instructions = sum(serial.values()) / frames
    return m


def _per_packet(c: Counters, n: int, frame_bytes: float, host_io: bool) -> Measurement:
    m = Measurement(packets=n, frame_bytes=frame_bytes, replies=c.tx / n, host_io=host_io,
                    nic_ns=c.nic_cpu_ns / n, dma_bytes=c.entry_bytes / n,
                    dma_engine_bytes=c.dma_bytes / n,
                    engine_bytes={k: v / n for k, v in c.engine_bytes.items()},
                    engine_calls={k: v / n for k, v in c.engine_calls.items()},
                    hit_rate=c.hits / (c.hits + c.misses) if c.hits + c.misses else None)
    for t in c.threads:
        if not t.worker:
            m.nic_managers += 1
        elif t.on_nic:
            m.nic_threads[t.segment] = m.nic_threads.get(t.segment, 0) + 1
        elif t.runs > 0 and t.work_ns > 0:   # a baseline's noise can exceed a little work
            m.host_threads[t.segment] = m.host_threads.get(t.segment, 0) + 1
            m.host_ns[t.segment] = m.host_ns.get(t.segment, 0.0) + t.work_ns / n
    return m


def _counted(app: str, defines: list[str], options: list[str], captures: list[Workload],
             env: dict[str, str]) -> dict[str, int]:
    """Instructions per NIC segment on the first capture, less those on the second (if any)."""
    counts = [_count(app, defines, options, c, env) for c in captures]
    if len(counts) == 1:
        return counts[0]
    return {s: n - counts[1].get(s, 0) for s, n in counts[0].items()}


def _count(app: str, defines: list[str], options: list[str], workload: Workload,
           env: dict[str, str]) -> dict[str, int]:
    """One counted run: the instructions of each NIC segment (all its threads)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        with Replay(app, defines, options + ["--count-instructions", out], workload,
                    env) as run:
            run.finished()
            stderr = run.stop()
        if not os.path.exists(out):
            raise RunFailed("callgrind wrote no counts: " + _failure(stderr))
        return segment_instructions(out)


#: An inclusive-cost line of callgrind_annotate for a segment thread's function (in the
#: generated nic.c).
_THREAD_FN = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+(?:\S*/)?nic\.c:(\w+)_thread \[")


def segment_instructions(callgrind_out: str) -> dict[str, int]:
    """Instructions counted in each segment's thread function (``<segment>_thread``)."""
    if shutil.which("callgrind_annotate") is None:
        raise FloemError("floem explore needs valgrind (apt-get install valgrind)")
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100",
                           callgrind_out], capture_output=True, text=True, check=True).stdout
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if m := _THREAD_FN.match(line):
            counts[m.group(2)] = counts.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
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
