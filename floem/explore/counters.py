"""The counters a running program prints (``--report``, and on SIGUSR1), read back.

Every process prints one line per thread (with what it did besides running elements:
frames, DMA waits, engine calls), its lock acquisitions, and the NIC process its sync
layer's shadows; a process with packet I/O prints its backend's line, one with a cache
its hits and misses. Each SIGUSR1 prints a fresh set, so the latest
line of each kind is the current value.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from floem.passes.build_graph import NIC_PROCESS

THREAD = re.compile(r"^floem: thread (\S+)\[(\d+)\] \(process (\S+)\): runs (\d+), packets (\d+), "
                    r"busy (\d+) ns, waited (\d+) ns, idle (\d+) ns, slept (\d+) ns, cpu (\d+) ns, "
                    r"wall (\d+) ns, received (\d+), sent (\d+), dma waits (\d+), dma bytes (\d+), "
                    r"engine calls (\d+), engine bytes (\d+)$")
NET = re.compile(r"^floem: net (\S+): queues \d+, rx (\d+), tx (\d+)")
CACHE = re.compile(r"^floem: cache (\S+): hits (\d+), misses (\d+)")
SHADOW = re.compile(r"^floem: nic sync shadow (\S+): entries (\d+), .* entry bytes (\d+), "
                    r"moved (\d+)$")
LOCKS = re.compile(r"^floem: locks \(process (\S+)\): acquisitions (\d+)$")

#: The NIC process's threads of this name run the queue synchronization layer.
MANAGER = "manager"
#: Per queue entry, the sync layer also moves a status word the other way: the host's
#: release of an entry the NIC wrote, or the NIC's release of one it read.
STATUS_BYTES = 4


def busy_cpu_ns(busy: int, waited: int, slept: int, cpu: int, wall: int) -> float:
    """A thread's work as CPU time: busy time less waits for room in full queues
    (back-pressure), scaled by the share of its runnable time the thread had a core."""
    runnable = max(wall - slept, 1)
    return (busy - waited) * min(1.0, cpu / runnable)


@dataclass
class Thread:
    """One segment thread's counters: its turns, the packets its source handed on, its work
    as CPU time (measured), and what it did besides running elements (counted)."""

    segment: str
    index: int
    process: str
    runs: int
    packets: int
    work_ns: float
    received: int = 0
    sent: int = 0
    dma_waits: int = 0
    dma_bytes: int = 0
    engine_calls: int = 0
    engine_bytes: int = 0

    @property
    def on_nic(self) -> bool:
        return self.process == NIC_PROCESS

    @property
    def worker(self) -> bool:
        """A thread running a segment (not a NIC manager core)."""
        return self.segment != MANAGER

    def minus(self, other: Thread) -> Thread:
        """What this thread did since ``other``, an earlier snapshot of it."""
        return Thread(self.segment, self.index, self.process, self.runs - other.runs,
                      self.packets - other.packets, self.work_ns - other.work_ns,
                      self.received - other.received, self.sent - other.sent,
                      self.dma_waits - other.dma_waits, self.dma_bytes - other.dma_bytes,
                      self.engine_calls - other.engine_calls,
                      self.engine_bytes - other.engine_bytes)


@dataclass
class Counters:
    """The latest value of every counter line of a run."""

    threads: list[Thread] = field(default_factory=list)
    rx: int = 0
    tx: int = 0
    hits: int = 0
    misses: int = 0
    entries: int = 0                    # queue entries the sync layer moved over PCIe
    entry_bytes: int = 0                # the sync layer's traffic for the entries finished:
    #                                     their headers and used bytes, and a status word each
    lock_acquisitions: int = 0

    @property
    def host_cpu_ns(self) -> float:
        """Work of every host segment thread, as CPU time."""
        return sum(t.work_ns for t in self.threads if not t.on_nic)

    @property
    def nic_cpu_ns(self) -> float:
        """Work of every NIC worker thread (manager cores excluded), as CPU time."""
        return sum(t.work_ns for t in self.threads if t.on_nic and t.worker)

    def minus(self, other: Counters) -> Counters:
        """The difference of two snapshots of one run (thread lists matched by name)."""
        before = {(t.segment, t.index, t.process): t for t in other.threads}
        threads = [t.minus(before[key]) if (key := (t.segment, t.index, t.process)) in before
                   else t for t in self.threads]
        return Counters(
            threads, self.rx - other.rx, self.tx - other.tx, self.hits - other.hits,
            self.misses - other.misses, self.entries - other.entries,
            self.entry_bytes - other.entry_bytes,
            self.lock_acquisitions - other.lock_acquisitions)


def parse(lines: list[str]) -> Counters:
    """The latest value of every counter line among ``lines`` (a run's stderr)."""
    latest: dict[str, str] = {}
    for line in lines:
        parts = line.split(": ", 2)
        if len(parts) == 3 and parts[0] == "floem":     # subject (a thread, a shadow...), shape
            latest[parts[1] + ": " + re.sub(r"\d+", "N", parts[2])] = line
    c = Counters()
    for line in latest.values():
        if m := THREAD.match(line):
            segment, index, process = m.group(1), int(m.group(2)), m.group(3)
            runs, packets, busy, waited, _idle, slept, cpu, wall, *counted = \
                (int(x) for x in m.groups()[3:])
            c.threads.append(Thread(segment, index, process, runs, packets,
                                    busy_cpu_ns(busy, waited, slept, cpu, wall), *counted))
        elif m := NET.match(line):
            c.rx, c.tx = c.rx + int(m.group(2)), c.tx + int(m.group(3))
        elif m := CACHE.match(line):
            c.hits, c.misses = c.hits + int(m.group(2)), c.misses + int(m.group(3))
        elif m := SHADOW.match(line):
            c.entries += int(m.group(2))
            c.entry_bytes += int(m.group(4)) + int(m.group(2)) * STATUS_BYTES
        elif m := LOCKS.match(line):
            c.lock_acquisitions += int(m.group(2))
    return c
