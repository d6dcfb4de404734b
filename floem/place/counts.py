"""Counting each element of a ``target.AUTO`` segment once on each side.

A probe is one placement of every AUTO segment, built with every element's function out of
line (``--count-elements``) for the NIC platform's ``--nic`` target and replayed on the
workload as `floem.explore.measure` does: each process under qemu-user of its own ISA
(the NIC's in the NIC's: MIPS64 for the LiquidIO, AArch64 for the BlueField-2; the host's
in x86-64) with Floem's counting plugin, which charges what each thread counts to the
innermost element function on its call stack (the functions it calls that are not
elements included) and counts the calls from one element to another. An element's own
cost is what was charged to it; what a thread executes outside its elements (its loop,
taking a packet from the network or a queue) is the overhead of its part. The queue
elements a cut adds (stash, enqueue; dequeue, save, unstash, release) give the cost of one
crossing of each boundary, per side; calls from one element to another give how often
each edge is taken, and calls of ``floem_engine_end`` which element hands work to an
engine (AES-NI on the host, a crypto unit on the NIC). A few probes (all on the CPU; as
much as can be on the NIC; one with both boundaries) give every figure a placement needs,
so the search builds a few programs, not one per placement. The NIC's sync-layer managers
are counted as `floem.explore.measure` counts them (their rounds that moved entries, at full
batches: `floem.explore.model.full_batches`), per queue entry they moved over PCIe.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

from floem.errors import FloemError
from floem.explore.counters import parse
from floem.explore.measure import (MANAGER_THREAD, Geometry, Misses, Replay, RunFailed,
                                   Workload)
from floem.explore.model import full_batches
from floem.explore.plugin import ENGINE_END, ThreadCounts, read_counts
from floem.explore.sweep import sync_batch
from floem.ir import Cut, Device, Part, ProgramIR, SegmentIR
from floem.ir.cnames import c_global
from floem.place.app_file import placed_source


@dataclass
class Cost:
    """The counts of some code per packet of the workload: instructions, atomic operations
    and, per simulated cache geometry, the misses of its loads and fetches."""

    instructions: float = 0.0
    atomics: float = 0.0
    misses: dict[Geometry, Misses] = field(default_factory=dict)

    def add(self, other: Cost, scale: float = 1.0) -> None:
        """Add ``scale`` times ``other``."""
        self.instructions += scale * other.instructions
        self.atomics += scale * other.atomics
        for g, m in other.misses.items():
            mine = self.misses.get(g, Misses())
            self.misses[g] = Misses(mine.first + scale * m.first, mine.last + scale * m.last)

    def scaled(self, factor: float) -> Cost:
        """This cost times ``factor``."""
        result = Cost()
        result.add(self, factor)
        return result


@dataclass
class Probe:
    """What one counted placement gave, per packet of the workload."""

    elements: dict[str, tuple[Device, Cost]] = field(default_factory=dict)
    overhead: dict[tuple[Device, bool], Cost] = field(default_factory=dict)  # (side, from net)
    crossing: dict[tuple[Part, Device], Cost] = field(default_factory=dict)  # per crossing
    edges: dict[tuple[str, str], float] = field(default_factory=dict)        # taken per packet
    received: float = 0.0                   # frames received per packet
    replies: float = 0.0                    # frames sent per packet
    serial: dict[str, tuple[Device, Cost]] = field(default_factory=dict)  # holding a lock
    engine: dict[str, tuple[Device, float, float]] = field(default_factory=dict)  # calls, bytes
    managers: Cost = field(default_factory=Cost)    # the sync layer's rounds, at full batches
    entries: float = 0.0                    # queue entries they moved over PCIe


def count_probe(app: str, defines: list[str], options: list[str], workload: Workload,
                ir: ProgramIR, cuts: list[Cut], caches: dict[bool, Geometry],
                target: str) -> Probe:
    """Replay ``workload`` through ``app`` cut by ``cuts`` (``ir``: that program, compiled),
    its NIC's processes built for the ``--nic`` ``target``, simulating ``caches[on_nic]``;
    each element's cost, and when the program takes locks, the cost of each element's work
    holding one."""
    with tempfile.TemporaryDirectory(prefix="floem-place-") as tmp:
        placed = os.path.join(tmp, os.path.basename(app))
        with open(placed, "w") as f:
            f.write(placed_source(app, cuts, {}, placed, "a probe of floem place"))
        options = options + [f"--nic={target}"]
        probe = Probe()
        locks = _counted_run(placed, defines, options, workload, ir, caches, {}, probe)
        if locks:               # what runs holding a lock, once more: FLOEM_COUNT=serial
            serial = Probe()
            _counted_run(placed, defines, options, workload, ir, {}, {"FLOEM_COUNT": "serial"},
                         serial)
            probe.serial = serial.elements
    return probe


def _counted_run(placed: str, defines: list[str], options: list[str], workload: Workload,
                 ir: ProgramIR, caches: dict[bool, Geometry], env: dict[str, str],
                 probe: Probe) -> int:
    """One counted replay of ``placed`` into ``probe``; the locks its threads took."""
    with tempfile.TemporaryDirectory(prefix="floem-count-") as tmp:
        base = os.path.join(tmp, "count")
        flags = ["--count-instructions", base, "--count-elements"]
        for proc in ir.processes.values():
            if caches:
                flags += ["--count-cache", f"{proc.name}={caches[proc.device == Device.NIC]}"]
        with Replay(placed, defines, options + flags, workload, env) as run:
            run.finished()
            stderr = run.stop()
        report = parse(stderr.splitlines())
        probe.received, probe.replies = report.rx / workload.frames, report.tx / workload.frames
        probe.entries = report.entries / workload.frames
        calls = sum(t.engine_calls for t in report.threads)
        per_call = sum(t.engine_bytes for t in report.threads) / calls if calls else 0.0
        segments = {c_global("segment", s.name, "thread"): s for s in ir.segments.values()}
        managers: list[ThreadCounts] = []
        for proc in ir.processes.values():
            path = f"{base}.{proc.name}"
            if not os.path.exists(path):
                if any(t.process == proc.name and t.packets for t in report.threads):
                    raise RunFailed(f"the counting plugin wrote no counts for process "
                                    f"{proc.name}")
                continue
            geometry = caches.get(proc.device == Device.NIC, "")
            for thread in read_counts(path):
                segment = segments.get(thread.root)
                if not thread.counts["Ir"]:
                    continue
                if segment is not None:
                    _read_thread(ir, segment, thread, proc.device, geometry, workload.frames,
                                 probe)
                elif thread.root == MANAGER_THREAD:
                    probe.managers.add(_cost(thread.counts, geometry, workload.frames))
                    managers.append(thread)
        idle = sum(t.idle_rounds for t in managers)
        if idle:
            rounds = sum(t.rounds for t in managers) - idle
            probe.managers = probe.managers.scaled(full_batches(
                probe.managers.instructions, rounds / workload.frames, probe.entries,
                sum(t.idle.get("Ir", 0) for t in managers) / idle, sync_batch(ir)))
        probe.engine = {n: (d, c, c * per_call) for n, (d, c, _) in probe.engine.items()}
    return report.lock_acquisitions


def _read_thread(ir: ProgramIR, segment: SegmentIR, thread: ThreadCounts, device: Device,
                 geometry: Geometry, packets: int, probe: Probe) -> None:
    """One thread of ``segment`` into ``probe``: its elements, its overhead, its edges."""
    overhead = _cost(thread.counts, geometry, packets)
    for name, counts in thread.elements.items():
        own = _cost(counts, geometry, packets)
        overhead.add(own, -1.0)
        n = ir.node(name)
        queue = ir.queues.get(n.queue or n.cut_queue)
        if queue is not None and queue.boundary:
            probe.crossing.setdefault((queue.boundary, device), Cost()).add(own)
        else:
            probe.elements.setdefault(name, (device, Cost()))[1].add(own)
    for (caller, callee), times in thread.calls.items():
        if callee == ENGINE_END:
            before = probe.engine.get(caller, (device, 0.0, 0.0))[1]
            probe.engine[caller] = (device, before + times / packets, 0.0)
        else:
            probe.edges[(caller, callee)] = probe.edges.get((caller, callee), 0.0) \
                + times / packets
    source = ir.node(segment.source) if segment.source else None
    from_net = source is not None and source.uses_network
    probe.overhead.setdefault((device, from_net), Cost()).add(overhead)


def _cost(counts: dict[str, int], geometry: Geometry, packets: int) -> Cost:
    """The plugin's ``counts`` (a thread's or an element's) per packet."""
    return Cost(counts["Ir"] / packets, counts["Ge"] / packets,
                {geometry: Misses((counts["I1mr"] + counts["D1mr"]) / packets,
                                  (counts["ILmr"] + counts["DLmr"]) / packets)})


def require(probe: Probe, what: str) -> None:
    """A probe that counted no element at all ran nothing: an error naming ``what``."""
    if not probe.elements:
        raise FloemError(f"the {what} probe counted no element: did the workload reach the "
                         "program (its packets, its --net)?")
