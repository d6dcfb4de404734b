"""Cutting ``target.AUTO`` segments: each becomes up to three segments joined by queues.

Before: a segment declared ``device=target.AUTO``, with the `Cut` asked for (``floem.cut``
in the app, or ``floem place``'s build option), or none.

After: the cut's ``rx`` elements form a NIC segment that receives the packets, ``tx`` a NIC
segment that sends them, the rest the CPU segment (which keeps the name; with no cut the
whole segment is the CPU's, and a cut whose ``rx`` is everything puts it on the NIC).
Each boundary a packet crosses becomes a queue (``<segment>_rxq``, ``<segment>_txq``), one
channel per edge that crosses, lcm(producer threads, consumer threads) instances, each
with one producer and one consumer thread (`queue_shape`). Values an edge carries cross
in per-packet state fields the pass adds (a frame as a `Frame` field, so liveness and
slicing treat it as the language does); a stash element before the enqueue writes them,
an unstash element after the dequeue hands them on::

    FromNet -> Check -> Work -> ToNet        cut rx=[FromNet, Check], tx=[ToNet]
                                         =>  aes_rx (NIC): FromNet -> Check -> stash -> aes_rxq
                                             aes (CPU):    aes_rxq -> unstash -> Work -> stash
                                                           -> aes_txq
                                             aes_tx (NIC): aes_txq -> unstash -> ToNet

A cut must obey the rules of `cut_problem` (which `floem place` enumerates with), else it
is an error at the ``floem.cut`` line.
"""
from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable

from floem.csrc import BodyForm
from floem.errors import FloemError, Location
from floem.ir import (CCode, CType, Cut, Device, Edge, EdgeKind, ElementNode, FieldLayout,
                      FrameParts, Part, PortTypes, ProgramIR, QueueIR, Role, SegmentIR, StateLayout)
from floem.passes.build_graph import NIC_PROCESS
from floem.templates import render_macro

NAME = "split_auto"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({"graph", "segments"})
PROVIDES: frozenset[str | type] = frozenset({"cuts_made"})
#: A frame's values on a port: length, first byte, buffer (``floem.library.FRAME``).
FRAME_TYPES = (CType("size_t"), CType("uint8_t *"), CType("void *"))
#: The C type of a crossing frame's bytes (a typed packet whose headers are unknown).
FRAME_BYTES = "floem_cut_frame"
#: Entries a consumer thread of a cut queue has room for (over all the instances it serves).
ROOM = 256
#: The fewest entries of one instance of a cut queue.
MIN_INSTANCE_SIZE = 32
#: Test hook: when this environment variable is set, values that cross a cut come back
#: changed (the first one less one), so a test can see ``floem place`` catch a lowering bug.
BREAK_ENV = "FLOEM_TEST_BREAK_CUTS"


def run(ir: ProgramIR) -> ProgramIR:
    """Cut every ``target.AUTO`` segment as asked (no cut: all on the CPU)."""
    for seg in [s for s in ir.segments.values() if s.auto]:
        cut = seg.cut or Cut(seg.name)
        problem = cut_problem(ir, seg, cut.rx, cut.tx)
        if problem is None:
            problem = _cores_problem(cut)
        if problem is not None:
            raise (cut.loc.error if cut.loc is not None else FloemError)(
                f"cut of segment '{seg.name}': {problem}")
        _split(ir, seg, cut)
    return ir


def part_of(name: str, rx: Iterable[str], tx: Iterable[str]) -> Part:
    """Which part of a cut element ``name`` is in."""
    return Part.RX if name in rx else Part.TX if name in tx else Part.CPU


def crossing_edges(ir: ProgramIR, seg: SegmentIR, rx: Iterable[str],
                   tx: Iterable[str]) -> dict[tuple[Part, Part], list[Edge]]:
    """The edges of ``seg`` from one part to another, by (from part, to part), in program
    order."""
    members = set(seg.elements)
    found: dict[tuple[Part, Part], list[Edge]] = {}
    for e in sorted(ir.edges(), key=lambda e: e.rank):
        if e.src in members and e.dst in members:
            pair = (part_of(e.src, rx, tx), part_of(e.dst, rx, tx))
            if pair[0] != pair[1]:
                found.setdefault(pair, []).append(e)
    return found


def cut_problem(ir: ProgramIR, seg: SegmentIR, rx: Iterable[str],
                tx: Iterable[str]) -> str | None:
    """Why cutting ``seg`` into ``rx`` (NIC, from the source), ``tx`` (NIC, to the ends) and
    the rest (CPU) is not a valid program, or None when it is.

    The rules: each part is closed (everything before an ``rx`` element is in ``rx``,
    everything after a ``tx`` element in ``tx``); no host-only element on the NIC; a
    join's inputs on its side; packet I/O on one side; every persistent state used from
    one side only; a queue's producers on one side; a packet crosses each boundary at most
    once (one edge, or several that no packet takes together), carrying no pointer but a
    frame; no ``run_order`` across a boundary; no edge from ``rx`` straight to ``tx``.
    """
    rx, tx = set(rx), set(tx)
    members = set(seg.elements)
    strangers, twice = sorted((rx | tx) - members), sorted(rx & tx)
    if strangers:
        return f"'{strangers[0]}' is not an element of segment '{seg.name}'"
    if twice:
        return f"'{twice[0]}' is in both rx and tx"
    side = {n: Device.CPU if part_of(n, rx, tx) == Part.CPU else Device.NIC for n in members}
    for e in ir.edges():
        if e.src in members and e.dst in members:
            if e.dst in rx and e.src not in rx:
                return (f"'{e.src}' runs before '{e.dst}' (on the NIC, receiving): it must be "
                        "there too")
            if e.src in tx and e.dst not in tx:
                return (f"'{e.dst}' runs after '{e.src}' (on the NIC, sending): it must be "
                        "there too")
    for name in sorted(rx | tx):
        problem = nic_problem(ir, name)
        if problem is not None:
            return problem
    for name in sorted(members):
        n = ir.node(name)
        if len(n.inputs) > 1:
            apart = [e.src for e in ir.in_edges(name) if side[e.src] != side[name]]
            if apart:
                return f"join '{name}' and its input from '{apart[0]}' would be on different sides"
    network = {side[n] for n in members if ir.node(n).uses_network}
    if len(network) > 1:
        io = ", ".join(f"{n} on {side[n]}" for n in sorted(members) if ir.node(n).uses_network)
        return f"packet I/O would be on both sides ({io}): one process owns the network port"
    problem = _state_problem(ir, seg, side) or _producers_problem(ir, seg, side)
    if problem is not None:
        return problem
    crossing = crossing_edges(ir, seg, rx, tx)
    if (Part.RX, Part.TX) in crossing:
        e = crossing[(Part.RX, Part.TX)][0]
        return (f"'{e.src}' (NIC, receiving) feeds '{e.dst}' (NIC, sending) without the CPU "
                "part")
    parts = {p: [n for n in members if part_of(n, rx, tx) == p] for p in Part}
    for (a, b), edges in crossing.items():
        problem = boundary_problem(ir, a, b, edges, parts[a])
        if problem is not None:
            return problem
    for a, b in ((Part.RX, Part.CPU), (Part.CPU, Part.TX)):
        if parts[a] and parts[b] and (a, b) not in crossing:
            return (f"no packet goes from the {a.long_name} part to the {b.long_name} "
                    "part")
    if parts[Part.TX] and not parts[Part.CPU]:
        return "a sending NIC part needs a CPU part before it"
    return None


def _state_problem(ir: ProgramIR, seg: SegmentIR, side: dict[str, Device]) -> str | None:
    """A persistent state of ``seg``'s elements that would be used from both sides."""
    used: dict[str, dict[Device, str]] = {}
    for n in ir.nodes():
        device = side.get(n.name) or ir.segments[n.segment].device
        for state in n.persistent.values():
            used.setdefault(state.name, {}).setdefault(device, n.name)
    for name in sorted({s.name for m in seg.elements for s in ir.node(m).persistent.values()}):
        if len(used[name]) > 1:
            nic, cpu = used[name][Device.NIC], used[name][Device.CPU]
            return (f"persistent state '{name}' would be used on the NIC ('{nic}') and on the "
                    f"CPU ('{cpu}'): its users stay on one side")
    return None


def _producers_problem(ir: ProgramIR, seg: SegmentIR, side: dict[str, Device]) -> str | None:
    """A queue of the program that ``seg`` enqueues into whose producers would be on both
    sides (a queue's producers share a device)."""
    for q in ir.queues.values():
        ends = [name for names in q.enqueuers for name in names if name in ir.graph]
        if not any(name in side for name in ends):
            continue
        devices = {side.get(name) or ir.segments[ir.node(name).segment].device for name in ends}
        if len(devices) > 1:
            return f"queue '{q.name}' would have producers on the NIC and on the CPU"
    return None


def nic_problem(ir: ProgramIR, name: str) -> str | None:
    """Why element ``name`` cannot run in a NIC part of a cut, or None."""
    n = ir.node(name)
    if n.host_only:
        return f"'{name}' ({n.cls_name}) is host-only: it cannot run on the NIC"
    if n.role not in (Role.ELEMENT, Role.CORE_ID, Role.ENQUEUE, Role.DEQUEUE):
        return f"'{name}' ({n.role}) stays with the segment's CPU part"
    return None


def boundary_problem(ir: ProgramIR, a: Part, b: Part, edges: list[Edge],
                     before: Iterable[str]) -> str | None:
    """Why the edges from part ``a`` to part ``b`` (``rx``, ``cpu``, ``tx``) cannot become
    one queue's channels, or None; ``before``: the elements a packet runs through in the
    segment before it crosses (several edges may cross only if each packet takes one path
    through them, see `several_paths`)."""
    for e in edges:
        if e.kind == EdgeKind.ORDER:
            return f"run_order({e.src}, {e.dst}) keeps them in one segment"
        problem = _values_problem(e.types)
        if problem is not None:
            return f"'{e.src}'.{e.out_port} -> '{e.dst}' carries {problem}"
    if len(edges) > 1:
        forked = several_paths(ir, before)
        if forked is not None:
            return (f"{len(edges)} edges cross from the {a.long_name} to the "
                    f"{b.long_name} part and {forked}: a packet could cross twice")
    return None


def several_paths(ir: ProgramIR, names: Iterable[str]) -> str | None:
    """What may send one packet down two paths among the elements ``names`` (a port
    connected to several inputs, an ``output { ... }`` firing several connected ports), or
    None when each packet takes one path through them (``output multiple`` has one port,
    and each call of it is a packet of its own). Before ``parse_bodies`` an element's
    ports are taken to be a switch's; `floem.passes.check_segments` checks a cut again
    once the bodies are analysed."""
    for name in sorted(names):
        n = ir.node(name)
        ports = [e.out_port for e in ir.out_edges(name)]
        if len(set(ports)) < len(ports):
            return f"'{name}'.{next(p for p in ports if ports.count(p) > 1)} fans out"
        if n.info is None or n.role == Role.DEQUEUE:     # a dequeue: one channel per entry
            continue
        if n.info.form not in (BodyForm.SWITCH, BodyForm.MULTIPLE) and len(set(ports)) > 1:
            return f"'{name}' fires several ports for one packet"
    return None


def _values_problem(types: PortTypes) -> str | None:
    """What in a port's values cannot cross between the CPU and the NIC, or None."""
    i = 0
    while i < len(types):
        if tuple(types[i:i + 3]) == FRAME_TYPES:
            i += 3
            continue
        if types[i].pointer:
            return f"a pointer ({types[i].c}) that would point into the other side's memory"
        i += 1
    return None


def _cores_problem(cut: Cut) -> str | None:
    """A thread count of ``cut`` that is not a positive whole number, or None."""
    for name in ("rx_cores", "cpu_cores", "tx_cores"):
        value = getattr(cut, name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or value < 1):
            return f"{name} must be a positive number of threads, not {value!r}"
    return None


def _split(ir: ProgramIR, seg: SegmentIR, cut: Cut) -> None:
    """Make the cut: new segments for the NIC parts, a queue at each boundary."""
    parts = {p: [n for n in seg.elements if part_of(n, cut.rx, cut.tx) == p] for p in Part}
    cpu_cores = list(range(cut.cpu_cores)) if cut.cpu_cores else seg.cores
    if not parts[Part.CPU]:                        # everything on the NIC (tx is then empty)
        ir.segments[seg.name] = dataclasses.replace(
            seg, device=Device.NIC, process=NIC_PROCESS, pinned=False,
            cores=list(range(cut.rx_cores)))
        return
    seg = ir.segments[seg.name] = dataclasses.replace(seg, cores=cpu_cores)
    if not parts[Part.RX] and not parts[Part.TX]:
        return
    crossing = crossing_edges(ir, seg, cut.rx, cut.tx)
    names = {Part.CPU: seg.name}
    for p in (Part.RX, Part.TX):
        if parts[p]:
            names[p] = ir.fresh_name(f"{seg.name}_{p}")
            ir.segments[names[p]] = SegmentIR(
                name=names[p], kind=seg.kind, device=Device.NIC,
                cores=list(range(getattr(cut, f"{p}_cores"))), process=NIC_PROCESS,
                loc=seg.loc, packet_state=seg.packet_state, elements=tuple(parts[p]))
            for n in parts[p]:
                ir.replace_node(dataclasses.replace(ir.node(n), segment=names[p]))
    seg = ir.segments[seg.name] = dataclasses.replace(seg, elements=tuple(parts[Part.CPU]))
    added: list[FieldLayout] = []
    for (a, b), edges in crossing.items():
        boundary = Part.RX if a == Part.RX else Part.TX
        added += _queue(ir, seg, boundary, names[a], names[b], edges)
    _extend_state(ir, seg, [names[p] for p in Part if p in names], added)


def _queue(ir: ProgramIR, seg: SegmentIR, boundary: Part, from_seg: str, to_seg: str,
           edges: list[Edge]) -> list[FieldLayout]:
    """The queue of ``boundary`` (`Part.RX` or `Part.TX`) replacing ``edges`` (one channel each)
    from segment ``from_seg`` to ``to_seg``; the per-packet fields its stashes add."""
    name = ir.fresh_name(f"{seg.name}_{boundary}q")
    loc = seg.cut.loc if seg.cut is not None and seg.cut.loc is not None else seg.loc
    deq = ElementNode(name=f"{name}_deq", cls_name="Dequeue", loc=loc, inputs={},
                      outputs={f"out{c}": () for c in range(len(edges))}, segment=to_seg,
                      packet_state=seg.packet_state, role=Role.DEQUEUE, queue=name)
    ir.add_node(deq)
    ir.add_to_segment(to_seg, deq.name, 0)
    fields: list[FieldLayout] = []
    enqueuers: list[tuple[str, ...]] = []
    for c, e in enumerate(edges):
        enq = ElementNode(name=f"{name}_enq{c}", cls_name="Enqueue", loc=loc,
                          inputs={"inp": ()}, outputs={}, segment=from_seg,
                          packet_state=seg.packet_state, role=Role.ENQUEUE, queue=name,
                          channel=c)
        ir.add_node(enq)
        ir.add_to_segment(from_seg, enq.name)
        enqueuers.append((enq.name,))
        ir.remove_edge(e)
        head, tail = enq.name, deq.name
        tail_port = f"out{c}"
        if e.types:
            prefix = f"{name}_{c}"
            stored, held = _value_fields(prefix, e.types, loc)
            fields += stored
            stash = _stash(ir, name, f"{name}_stash{c}", from_seg, e, held, loc)
            unstash = _unstash(ir, name, f"{name}_unstash{c}", to_seg, e, held, loc)
            ir.add_edge(_empty(e, stash, enq.name, "out", "inp"))
            ir.add_edge(_empty(e, deq.name, unstash, tail_port, "inp"))
            head, tail, tail_port = stash, unstash, "out"
        ir.add_edge(dataclasses.replace(e, dst=head, in_port="inp"))
        ir.add_edge(dataclasses.replace(e, src=tail, out_port=tail_port))
    instances, size = queue_shape(len(ir.segments[from_seg].cores),
                                  len(ir.segments[to_seg].cores))
    ir.queues[name] = QueueIR(name=name, channels=len(edges), instances=instances, size=size,
                              lossless=True, loc=loc, enqueuers=tuple(enqueuers),
                              dequeuer=deq.name, boundary=boundary)
    return fields


def queue_shape(producers: int, consumers: int) -> tuple[int, int]:
    """Instances and entries per instance of a cut queue between ``producers`` and
    ``consumers`` threads: lcm(producers, consumers) instances, so that every thread has
    instances of its own (producer thread t writes the instances t, t + producers, ... in
    turn; consumer thread t reads t, t + consumers, ...) and each instance has one producer
    and one consumer; fewer would leave consumer threads idle or make producers share an
    instance (atomic enqueues). Each consumer thread has room for about `ROOM` entries."""
    instances = math.lcm(producers, consumers)
    return instances, max(MIN_INSTANCE_SIZE, ROOM * consumers // instances)


def _empty(e: Edge, src: str, dst: str, out_port: str, in_port: str) -> Edge:
    """An edge carrying no value, at ``e``'s place in program order."""
    return dataclasses.replace(e, src=src, dst=dst, out_port=out_port, in_port=in_port,
                               types=())


#: Where the typed-packet layout of crossing frames comes from (the compiler, no app line).
_COMPILER = Location("<floem cut>", 0)
#: The typed-packet layout a crossing frame's bytes get: headers unknown.
_FRAME_LAYOUT = StateLayout(FRAME_BYTES, (FieldLayout("first", CType("uint8_t"), _COMPILER),),
                            _COMPILER)


def _value_fields(prefix: str, types: PortTypes,
                  loc: Location) -> tuple[list[FieldLayout], list[tuple[str, str]]]:
    """The per-packet fields holding values of ``types`` across a queue (a frame becomes a
    `Frame` field ``prefix_frameN`` with its ``_len`` and ``_buf``, a scalar a field), and
    for each value the field holding it with the cast that gives it back."""
    fields: list[FieldLayout] = []
    held: list[tuple[str, str]] = []
    i = 0
    while i < len(types):
        if tuple(types[i:i + 3]) == FRAME_TYPES:
            name = f"{prefix}_frame{i}"
            fields += [FieldLayout(name, CType(f"{FRAME_BYTES} *"), loc, size=f"state->{name}_len",
                                   points_to=_FRAME_LAYOUT,
                                   frame=FrameParts(f"{name}_len", f"{name}_buf")),
                       FieldLayout(f"{name}_len", CType("size_t"), loc),
                       FieldLayout(f"{name}_buf", CType("void *"), loc)]
            held += [(f"{name}_len", ""), (name, "(uint8_t *)"), (f"{name}_buf", "")]
            i += 3
        else:
            fields.append(FieldLayout(f"{prefix}_v{i}", types[i], loc))
            held.append((f"{prefix}_v{i}", ""))
            i += 1
    return fields, held


def _stash(ir: ProgramIR, queue: str, wanted: str, segment: str, e: Edge,
           held: list[tuple[str, str]], loc: Location) -> str:
    """An element writing the values of edge ``e`` into the per-packet fields ``held``,
    before cut queue ``queue``."""
    code = render_macro("cut.c.j2", "stash", e.types, held)
    return _add(ir, queue, wanted, "CutStash", segment, {"inp": e.types}, {"out": ()}, code,
                loc)


def _unstash(ir: ProgramIR, queue: str, wanted: str, segment: str, e: Edge,
             held: list[tuple[str, str]], loc: Location) -> str:
    """An element handing the values a stash put in the fields ``held`` on along ``e``, after
    cut queue ``queue`` (under the test hook `BREAK_ENV`, the first one less one)."""
    code = render_macro("cut.c.j2", "unstash", held, bool(os.environ.get(BREAK_ENV)))
    return _add(ir, queue, wanted, "CutUnstash", segment, {"inp": ()}, {"out": e.types}, code,
                loc)


def _add(ir: ProgramIR, queue: str, wanted: str, cls_name: str, segment: str,
         inputs: dict[str, PortTypes], outputs: dict[str, PortTypes], code: str,
         loc: Location) -> str:
    name = ir.fresh_name(wanted)
    ir.add_node(ElementNode(name=name, cls_name=cls_name, loc=loc, inputs=inputs,
                            outputs=outputs, code=CCode(code, loc), segment=segment,
                            packet_state=ir.segments[segment].packet_state, cut_queue=queue))
    ir.add_to_segment(segment, name)
    return name


def _extend_state(ir: ProgramIR, seg: SegmentIR, segments: list[str],
                  added: list[FieldLayout]) -> None:
    """Give the cut's segments a per-packet state holding ``added`` (the flow's, extended)."""
    if not added:
        return
    old = seg.packet_state
    if old is None:
        new = StateLayout(ir.fresh_name(f"{seg.name}_cut_state"), tuple(added), seg.loc)
        ir.layouts.append(new)
    else:
        new = dataclasses.replace(old, fields=old.fields + tuple(added))
        ir.replace_layout(old, new)
    if any(f.frame is not None for f in added) and _FRAME_LAYOUT not in ir.layouts:
        ir.layouts.insert(0, _FRAME_LAYOUT)
    for name in segments:
        ir.segments[name] = dataclasses.replace(ir.segments[name], packet_state=new)
        for n in ir.segments[name].elements:
            ir.replace_node(dataclasses.replace(ir.node(n), packet_state=new))
