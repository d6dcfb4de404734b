"""Counting each element of a ``target.AUTO`` segment once on each side.

A probe is one placement of every AUTO segment, built with every element's function out of
line (``--count-elements``) and replayed on the workload under callgrind as
`floem.explore.measure` does. An element's own cost is its function's inclusive cost less
the element functions it calls; what a thread executes outside its elements (its loop,
taking a packet from the network or a queue) is the overhead of its part. The queue
elements a cut adds (stash, enqueue; dequeue, save, unstash, release) give the cost of one
crossing of each boundary, per side; call counts from one element to another give how
often each edge is taken, and calls of ``floem_engine_end`` which element hands work to
an engine (AES-NI on the host, a crypto unit on the NIC). A few probes (all on the CPU; as
much as can be on the NIC; one with both boundaries) give every figure a placement needs,
so the search builds a few programs, not one per placement.
"""
from __future__ import annotations

import glob
import os
import tempfile
from dataclasses import dataclass, field

from floem.errors import FloemError
from floem.explore.callgrind import Profile, read_profile
from floem.explore.counters import parse
from floem.explore.measure import Geometry, Misses, Replay, RunFailed, Workload
from floem.ir import Cut, Device, Part, ProgramIR
from floem.ir.cnames import c_global
from floem.place.app_file import placed_source

#: The runtime function an element calls once per piece of work it hands to an engine
#: (runtime.h); the run's report gives the bytes.
ENGINE_END = "floem_engine_end"


@dataclass
class Cost:
    """Callgrind's counts of some code per packet of the workload: instructions, atomic
    operations and, per simulated cache geometry, the misses of its loads."""

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


def count_probe(app: str, defines: list[str], options: list[str], workload: Workload,
                ir: ProgramIR, cuts: list[Cut], caches: dict[bool, Geometry]) -> Probe:
    """Replay ``workload`` through ``app`` cut by ``cuts`` (``ir``: that program, compiled)
    under callgrind, simulating ``caches[on_nic]``; each element's cost, and when the
    program takes locks, the cost of each element's work holding one."""
    with tempfile.TemporaryDirectory(prefix="floem-place-") as tmp:
        placed = os.path.join(tmp, os.path.basename(app))
        with open(placed, "w") as f:
            f.write(placed_source(app, cuts, {}, placed, "a probe of floem place"))
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
        calls = sum(t.engine_calls for t in report.threads)
        per_call = sum(t.engine_bytes for t in report.threads) / calls if calls else 0.0
        for proc in ir.processes.values():
            geometry = caches.get(proc.device == Device.NIC, "")
            paths = sorted(glob.glob(f"{glob.escape(base)}.{proc.name}-*"))
            if not paths and any(t.process == proc.name and t.packets for t in report.threads):
                raise RunFailed(f"callgrind wrote no counts for process {proc.name}")
            for path in paths:
                _read_thread(ir, _unclone(read_profile(path)), proc.device, geometry,
                             workload.frames, probe)
        probe.engine = {n: (d, c, c * per_call) for n, (d, c, _) in probe.engine.items()}
    return report.lock_acquisitions


def _read_thread(ir: ProgramIR, profile: Profile, device: Device, geometry: Geometry,
                 packets: int, probe: Probe) -> None:
    """One thread's profile into ``probe``: its elements, its overhead, its edges."""
    segment = next((s for s in ir.segments.values()
                    if profile.of(c_global("segment", s.name, "thread"), "Ir")), None)
    if segment is None:
        return
    names = set(segment.elements)
    thread = _cost(profile, c_global("segment", segment.name, "thread"), geometry, packets)
    for name in segment.elements:
        if not profile.of(name, "Ir"):
            continue
        own = _cost(profile, name, geometry, packets)
        for callee, cost in profile.calls.get(name, {}).items():
            if callee in names:
                own.add(_vector_cost(profile, cost, geometry, packets), -1.0)
        thread.add(own, -1.0)
        n = ir.node(name)
        queue = ir.queues.get(n.queue or n.cut_queue)
        if queue is not None and queue.boundary:
            probe.crossing.setdefault((queue.boundary, device), Cost()).add(own)
        else:
            probe.elements[name] = (device, own)
        for callee, times in profile.called.get(name, {}).items():
            if callee == ENGINE_END:
                before = probe.engine.get(name, (device, 0.0, 0.0))[1]
                probe.engine[name] = (device, before + times / packets, 0.0)
            if callee in names:
                probe.edges[(name, callee)] = probe.edges.get((name, callee), 0.0) + times / packets
    source = ir.node(segment.source) if segment.source else None
    from_net = source is not None and source.uses_network
    probe.overhead.setdefault((device, from_net), Cost()).add(thread)


def _unclone(profile: Profile) -> Profile:
    """``profile`` with the copies gcc makes of a function (``f.constprop.0``, ``f.isra.0``,
    ``f.part.0``, ``f.cold``) counted as the function itself."""
    def base(name: str) -> str:
        return name.split(".", 1)[0] if not name.startswith(".") else name

    def merge(vectors: dict[str, list[int]]) -> dict[str, list[int]]:
        merged: dict[str, list[int]] = {}
        for name, vector in vectors.items():
            into = merged.setdefault(base(name), [0] * len(vector))
            for i, value in enumerate(vector):
                into[i] += value
        return merged

    calls: dict[str, dict[str, list[int]]] = {}
    for caller, callees in profile.calls.items():
        for callee, vector in merge(callees).items():
            into = calls.setdefault(base(caller), {}).setdefault(callee, [0] * len(vector))
            for i, value in enumerate(vector):
                into[i] += value
    called: dict[str, dict[str, int]] = {}
    for caller, counted in profile.called.items():
        for callee, times in counted.items():
            mine = called.setdefault(base(caller), {})
            mine[base(callee)] = mine.get(base(callee), 0) + times
    return Profile(profile.events, profile.totals, merge(profile.inclusive), calls, called)


def _cost(profile: Profile, function: str, geometry: Geometry, packets: int) -> Cost:
    return _vector_cost(profile, profile.inclusive.get(function, [0] * len(profile.events)),
                        geometry, packets)


def _vector_cost(profile: Profile, vector: list[int], geometry: Geometry, packets: int) -> Cost:
    """A cost line of ``profile`` (an inclusive cost, or a call's) per packet."""
    get = {e: vector[i] if i < len(vector) else 0 for i, e in enumerate(profile.events)}
    first = sum(get.get(e, 0) for e in ("I1mr", "D1mr"))
    last = sum(get.get(e, 0) for e in ("ILmr", "DLmr"))
    return Cost(get.get("Ir", 0) / packets, get.get("Ge", 0) / packets,
                {geometry: Misses(first / packets, last / packets)})


def require(probe: Probe, what: str) -> None:
    """A probe that counted no element at all ran nothing: an error naming ``what``."""
    if not probe.elements:
        raise FloemError(f"the {what} probe counted no element: did the workload reach the "
                         "program (its packets, its --net)?")
