"""Predicting every placement from the probes' counts, and ranking them.

A placement is a valid cut of every ``target.AUTO`` segment with a thread count for each
part. Its counts are put together from the probes (`floem.place.counts`): each element's
own cost on its side (measured there; an element never counted on that side is charged
its cost on the other one, the same C compiled for the same machine), the work it hands
to an engine on that side (AES-NI, a NIC's crypto units: the model charges it by rate),
what it executes holding a lock, each part's
overhead per packet entering it, each boundary's queue elements per crossing (times how
often the cut's edges are taken, from the all-CPU probe), the frames received and sent by
the parts holding packet I/O, the PCIe traffic of the queue entries (the fields liveness
leaves in them, as the front end lays them out for that cut), and the NIC's sync-layer
managers' work per entry (the probes' together). The model of
`floem.explore.model` predicts the result; the objective ranks them. Bounds, which never
understate packets/s, let a search leave placements out unpredicted: a placement's (its
queue entries as small as can be, `measurement` with no compiled program) and a cut's
whatever its threads (`threads_bound`).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from floem.explore.measure import Machine, Measurement, SegmentCounts, Workload
from floem.explore.model import (Platform, Prediction, capacity, link_capacity, lock_ns,
                                 managers_capacity, pcie_capacity, segment_time)
from floem.ir import Cut, Device, Part, ProgramIR
from floem.ir.sizes import entry_size, field_size
from floem.place.counts import Cost, Probe
from floem.passes.split_auto import part_of

#: The objectives ``--objective`` takes (``host-cores-at`` with a rate).
OBJECTIVES = ("throughput", "per-host-core", "host-cores-at", "latency")
#: The objectives whose ranking a bound on packets/s bounds (`rank_key`).
BOUNDED = ("throughput", "per-host-core", "host-cores-at")


@dataclass
class Placement:
    """One placement and its prediction: the cut of each AUTO segment (threads included)."""

    cuts: list[Cut]
    orders: dict[str, list[str]]            # each AUTO segment's elements, in packet order
    prediction: Prediction
    host_cores: int
    estimated: list[str] = field(default_factory=list)   # elements charged the other side's cost
    counted: bool = False                   # predicted from a run of its own (its check's)
    probes: Prediction | None = None        # then: what the probes predicted
    checked: bool | None = None
    check_note: str = ""
    shown: dict[str, str] = field(default_factory=dict)  # the parameters setting it apart
    written: dict[str, Device] = field(default_factory=dict)    # no cut: where each runs

    @property
    def label(self) -> str:
        """Its parameters' values (``name=value`` words), when they set it apart."""
        return values_text(self.shown)

    @property
    def packets_per_s(self) -> float:
        return self.prediction.packets_per_s

    @property
    def nic_threads(self) -> int:
        """NIC threads of the cut parts."""
        return sum((c.rx_cores if c.rx else 0) + (c.tx_cores if c.tx else 0) for c in self.cuts)

    @property
    def per_host_core(self) -> float:
        return self.packets_per_s / self.host_cores if self.host_cores else math.inf

    def describe(self) -> str:
        """``rx | cpu || tx`` of each cut segment (``; `` between segments), after the
        parameters' values when they set it apart (a configuration with no cut: those,
        ``as written``)."""
        cuts = "; ".join(c.describe(self.orders[c.segment]) for c in self.cuts)
        if not self.label:
            return cuts or "as written"
        return f"{self.label}: {cuts}" if cuts else self.label

    def threads(self) -> str:
        """Threads of each part, ``rx/cpu/tx`` (``-`` for an empty part); a configuration
        with no cut has the threads the app gives its segments."""
        if not self.cuts:
            return "as written"
        words = []
        for c in self.cuts:
            order = self.orders[c.segment]
            rx = any(e in c.rx for e in order)
            cpu = any(e not in c.rx and e not in c.tx for e in order)
            tx = any(e in c.tx for e in order)
            words.append("/".join(str(n) if present else "-" for n, present in
                                  ((c.rx_cores, rx), (c.cpu_cores, cpu), (c.tx_cores, tx))))
        return "; ".join(words)


@dataclass
class Figures:
    """What the probes measured, merged: every cost a placement is made of."""

    elements: dict[tuple[str, Device], Cost]
    overhead: dict[tuple[Device, bool], Cost]
    crossing: dict[tuple[Part, Device], Cost]      # per crossing of a boundary
    edges: dict[tuple[str, str], float]            # from the all-CPU probe
    received: float
    replies: float
    serial: dict[tuple[str, Device], Cost] = field(default_factory=dict)   # holding a lock
    engine: dict[tuple[str, Device], tuple[float, float]] = field(default_factory=dict)
    senders: dict[str, float] | None = None     # each sending element: how often entered
    managers: Cost = field(default_factory=Cost)   # the sync layer's, per queue entry

    @classmethod
    def merge(cls, cpu: Probe, others: list[tuple[Probe, dict[Part, float]]]) -> Figures:
        """``cpu`` (the all-CPU probe) and the other probes, each with how often its
        boundaries were crossed per packet."""
        elements = {(n, d): c for n, (d, c) in cpu.elements.items()}
        overhead = dict(cpu.overhead)
        crossing: dict[tuple[Part, Device], Cost] = {}
        for probe, crossed in others:
            for n, (d, c) in probe.elements.items():
                elements.setdefault((n, d), c)
            for key, c in probe.overhead.items():
                overhead.setdefault(key, c)
            for (boundary, d), c in probe.crossing.items():
                if crossed.get(boundary):
                    crossing.setdefault((boundary, d), c.scaled(1 / crossed[boundary]))
        serial = {(n, d): c for n, (d, c) in cpu.serial.items()}
        engine = {(n, d): (c, b) for n, (d, c, b) in cpu.engine.items()}
        managers, entries = Cost(), 0.0
        for probe, _ in others:
            for n, (d, c) in probe.serial.items():
                serial.setdefault((n, d), c)
            for n, (d, calls, moved) in probe.engine.items():
                engine.setdefault((n, d), (calls, moved))
            managers.add(probe.managers)
            entries += probe.entries
        return cls(elements, overhead, crossing, cpu.edges, cpu.received, cpu.replies, serial,
                   engine, managers=managers.scaled(1 / entries) if entries else Cost())

    def element(self, name: str, device: Device) -> tuple[Cost, bool]:
        """``name``'s own cost on ``device``, and whether it is the other side's."""
        if (name, device) in self.elements:
            return self.elements[(name, device)], False
        other = Device.CPU if device == Device.NIC else Device.NIC
        return self.elements.get((name, other), Cost()), True

    def held(self, name: str, device: Device) -> Cost:
        """What ``name`` executes holding a lock on ``device`` (the other side's count
        when it never ran there)."""
        other = Device.CPU if device == Device.NIC else Device.NIC
        return self.serial.get((name, device)) or self.serial.get((name, other)) or Cost()

    def part_overhead(self, device: Device, from_net: bool) -> Cost:
        """A part's cost besides its elements, per packet entering it."""
        for key in ((device, from_net), (Device.CPU, from_net), (device, not from_net),
                    (Device.CPU, not from_net)):
            if key in self.overhead:
                return self.overhead[key]
        return Cost()

    def sent(self, ir: ProgramIR, names: list[str]) -> float:
        """Frames the sending elements among ``names`` send per packet: their share of
        every frame sent, by how often the all-CPU probe entered each sending element."""
        if self.senders is None:
            self.senders = {n.name: 0.0 for n in ir.nodes() if n.sends_packets}
            for (_, v), taken in self.edges.items():
                if v in self.senders:
                    self.senders[v] += taken
        mine = [n for n in names if n in self.senders]
        total = sum(self.senders.values())
        if not total:
            return self.replies if mine else 0.0
        return self.replies * sum(self.senders[n] for n in mine) / total

    def boundary(self, boundary: Part, device: Device) -> Cost:
        """One crossing of ``boundary``'s queue, on ``device``'s side of it."""
        mirror = Part.TX if boundary == Part.RX else Part.RX
        for key in ((boundary, device), (mirror, device)):
            if key in self.crossing:
                return self.crossing[key]
        return Cost()


def values_text(values: dict[str, str]) -> str:
    """Parameter values as ``name=value`` words."""
    return " ".join(f"{k}={v}" for k, v in values.items())


def thread_choices(limit: int) -> range:
    """The thread counts tried for a part on a side with ``limit`` cores free: every one."""
    return range(1, limit + 1)


def placements(cut_sets: list[list[Cut]], sizes: dict[str, int], nic_free: int,
               host_cores: int) -> Iterator[list[Cut]]:
    """Every combination of one cut per segment (``cut_sets``: each segment's valid cuts,
    threads unset; ``sizes``: each segment's element count), with threads for each part
    within the NIC cores left free and ``host_cores`` host threads."""
    def with_threads(cut: Cut, free: int) -> Iterator[tuple[Cut, int]]:
        has_rx, has_tx = bool(cut.rx), bool(cut.tx)
        cpu_part = len(cut.rx) + len(cut.tx) < sizes[cut.segment]
        for rx in thread_choices(free) if has_rx else [1]:
            for tx in thread_choices(free - (rx if has_rx else 0)) if has_tx else [1]:
                used = (rx if has_rx else 0) + (tx if has_tx else 0)
                if used > free:
                    continue
                for cpu in thread_choices(host_cores) if cpu_part else [None]:
                    yield Cut(cut.segment, cut.rx, cut.tx, rx, cpu, tx), used

    def combos(i: int, free: int) -> Iterator[list[Cut]]:
        if i == len(cut_sets):
            yield []
            return
        for cut in cut_sets[i]:
            for threaded, used in with_threads(cut, free):
                for rest in combos(i + 1, free - used):
                    yield [threaded] + rest
    yield from combos(0, nic_free)


def crossings(edges: dict[tuple[str, str], float], cut: Cut) -> dict[Part, float]:
    """How often per packet each boundary of ``cut`` is crossed (``edges``: how often each
    edge is taken): the edges from ``rx`` to the CPU part, and from it to ``tx``."""
    crossed = {Part.RX: 0.0, Part.TX: 0.0}
    for (u, v), taken in edges.items():
        pair = (part_of(u, cut.rx, cut.tx), part_of(v, cut.rx, cut.tx))
        if pair == (Part.RX, Part.CPU):
            crossed[Part.RX] += taken
        elif pair == (Part.CPU, Part.TX):
            crossed[Part.TX] += taken
    return crossed


def measurement(ir0: ProgramIR, placed: ProgramIR | None, cuts: list[Cut], figures: Figures,
                workload: Workload, nic_managers: int) -> tuple[Measurement, int, list[str]]:
    """The counts ``placed`` (``ir0``'s program cut by ``cuts``, through every pass) would
    have per packet; its host threads; the elements charged the other side's cost. With
    ``placed`` None, a bound: every queue entry as small as an entry can be."""
    by_segment = {c.segment: c for c in cuts}
    m = Measurement(packets=workload.frames, frame_bytes=workload.frame_bytes,
                    replies=figures.replies)
    estimated: list[str] = []
    host_threads = 0
    crossed = {Part.RX: 0.0, Part.TX: 0.0}
    for seg in ir0.segments.values():
        cut = by_segment.get(seg.name)
        taken = crossings(figures.edges, cut) if cut else {}
        parts: dict[Part | str, list[str]] = {p: [] for p in Part} if cut else \
            {"fixed": list(seg.elements)}
        for name in seg.elements:
            if cut:
                parts[part_of(name, cut.rx, cut.tx)].append(name)
        for part, names in parts.items():
            if not names:
                continue
            device = seg.device if part == "fixed" else \
                Device.CPU if part == Part.CPU else Device.NIC
            threads = len(seg.cores) if part == "fixed" else \
                getattr(cut, f"{part}_cores") or len(seg.cores)
            cost, serial, engine_calls, engine_bytes = Cost(), Cost(), 0.0, 0.0
            from_net = any(ir0.node(n).receives_packets for n in names)
            entering = figures.received if from_net or part == "fixed" else 0.0
            for n in names:
                own, other_side = figures.element(n, device)
                cost.add(own)
                serial.add(figures.held(n, device))
                calls, moved = figures.engine.get((n, device), (0.0, 0.0))
                engine_calls, engine_bytes = engine_calls + calls, engine_bytes + moved
                if other_side and own.instructions:
                    estimated.append(n)
            for boundary, (a, b) in ((Part.RX, (Part.RX, Part.CPU)),
                                     (Part.TX, (Part.CPU, Part.TX))):
                if part in (a, b) and taken.get(boundary):
                    cost.add(figures.boundary(boundary, device), taken[boundary])
                    if part == b:
                        entering = taken[boundary]
                    if part == a:
                        crossed[boundary] += taken[boundary]
            cost.add(figures.part_overhead(device, from_net), entering)
            whole = part == "fixed" or len(names) == len(seg.elements)
            name = part_name(seg.name, Part.CPU if whole else Part(part))
            process = seg.process if device == Device.CPU else "nic"
            m.segments[name] = SegmentCounts(
                process, device == Device.NIC, threads=threads, instructions=cost.instructions,
                atomics=cost.atomics, misses=dict(cost.misses),
                serial_instructions=serial.instructions, serial_atomics=serial.atomics,
                engine_calls=engine_calls, engine_bytes=engine_bytes,
                received=figures.received if from_net else 0.0,
                sent=figures.sent(ir0, names))
            if device == Device.CPU:
                host_threads += threads
    on_nic = any(s.on_nic for s in m.segments.values())
    host_io = any(n.receives_packets and _device(ir0, cuts, n.name) == Device.CPU
                  for n in ir0.nodes())
    entries, payload = _entries(placed, crossed, workload)
    m.machines[""] = record = Machine(host_io=host_io, nic_managers=nic_managers if on_nic else 0,
                                      queue_entries=entries, queue_bytes=payload)
    if record.nic_managers and entries and figures.managers.instructions:
        managed = figures.managers.scaled(entries)
        record.managers = SegmentCounts("nic", True, threads=nic_managers,
                                        instructions=managed.instructions,
                                        atomics=managed.atomics, misses=dict(managed.misses))
    return m, host_threads, sorted(set(estimated))


def part_name(segment: str, part: Part) -> str:
    """What `measurement` calls ``part`` of cut segment ``segment``: the segment's name for
    its CPU part (or the segment whole), ``<segment>_rx`` and ``<segment>_tx`` for the
    NIC's."""
    return segment if part == Part.CPU else f"{segment}_{part}"


def _device(ir0: ProgramIR, cuts: list[Cut], name: str) -> Device:
    """Where element ``name`` of ``ir0`` runs under ``cuts``."""
    seg = ir0.segments[ir0.node(name).segment]
    cut = next((c for c in cuts if c.segment == seg.name), None)
    if cut is None:
        return seg.device
    return Device.CPU if part_of(name, cut.rx, cut.tx) == Part.CPU else Device.NIC


def _entries(placed: ProgramIR | None, crossings: dict[Part, float],
             workload: Workload) -> tuple[float, float]:
    """Queue entries over PCIe per packet, and their bytes: each cut queue's entry as the
    front end lays it out (a frame crossing whole counted at the workload's mean size);
    with no ``placed``, the smallest entry."""
    if placed is None:
        entries = sum(crossings.values())
        return entries, entries * entry_size(0)
    entries = payload = 0.0
    for q in placed.queues.values():
        if not q.boundary or not crossings[q.boundary]:
            continue
        sizes = []
        for ch in placed.entry_layouts.entries[q.name]:
            fixed = sum(field_size(f) or 0 for f in ch.fixed)
            variable = sum(v.packet.window if v.packet is not None and v.packet.window
                           is not None else workload.frame_bytes for v in ch.variable)
            sizes.append(entry_size(int(fixed + variable)))
        entries += crossings[q.boundary]
        payload += crossings[q.boundary] * (sum(sizes) / len(sizes) if sizes else 0.0)
    return entries, payload


def threads_bound(m: Measurement, cut: AbstractSet[str], nic: Platform, host: Platform,
                  nic_free: int, host_cores: int) -> float:
    """A bound on the packets/s of a placement counted ``m`` (a bound's counts: see
    `measurement`), whatever threads its cut parts (the segments ``cut`` names) have: they
    share at most ``nic_free`` NIC cores (a part with r of them and one with t take as long
    as r + t cores on both, at best), each CPU part has at most ``host_cores``, and no
    atomic operation waits for a line another core wrote (the sync layer's managers as
    `measurement` charges them)."""
    rates: list[float] = []
    nic_ns = 0.0
    for machine, record in m.machines.items():
        rates.append(pcie_capacity(m, machine, nic))
        rates.append(managers_capacity(record, nic))
        for on_nic, p in ((True, nic), (False, host)):
            segments = m.side(on_nic, machine)
            rates.append(capacity(1, lock_ns(segments.values(), p, 0.0)))
            for name, counts in segments.items():
                ns = segment_time(counts, p, nic, 0.0, m.frame_bytes).total
                if name not in cut:
                    rates.append(capacity(counts.threads, ns))
                elif on_nic:
                    nic_ns += ns
                else:
                    rates.append(capacity(host_cores, ns))
    if m.frame_bytes:
        rates.append(link_capacity(m, nic))
    return min(rates + [capacity(nic_free, nic_ns)])


def rank(rows: list[Placement], objective: str, rate: float | None = None) -> list[Placement]:
    """Best first for ``objective`` (``host-cores-at``: the rows meeting ``rate`` with the
    fewest host cores, then the others); failed predictions last."""
    return sorted(rows, key=rank_key(objective, rate))


def rank_key(objective: str, rate: float | None = None) -> Callable[[Placement], tuple]:
    """What `rank` sorts by: the smaller, the better. For every objective but ``latency``
    it only grows as the prediction's packets/s falls (a row's threads fixed), so a bound
    on packets/s bounds the key."""
    def key(p: Placement) -> tuple[float, ...]:
        failed = 1.0 if p.prediction.error else 0.0
        if objective == "per-host-core":
            return (failed, -p.per_host_core, -p.packets_per_s, p.nic_threads)
        if objective == "host-cores-at":
            assert rate is not None
            meets = 0.0 if p.packets_per_s >= rate else 1.0
            return (failed, meets, p.host_cores if not meets else 0.0, -p.packets_per_s,
                    p.nic_threads)
        if objective == "latency":
            return (failed, p.prediction.latency.p50_us, -p.packets_per_s)
        return (failed, -p.packets_per_s, p.host_cores, p.nic_threads)
    return key
