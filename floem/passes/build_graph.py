"""Front end: the DSL objects of a `Program` become the graph IR.

Before: a `Program` holding elements, composites, ``>>`` connections (some
through composite ports), segments and flows.

After: one IR node per element, one ``data`` edge per connection between
real element ports (composite ports flattened away), one ``order`` edge per
``run_order`` pair, and a `SegmentIR` per segment listing its elements::

    Twice(inp) >> Print           Inc0 -> Inc1 -> Print0
    (Twice = inp >> Inc >> Inc)

Elements made outside any segment (queue ends, cache points, shared
elements) join the segment in whose ``impl`` they are first connected, else
the segment of the first element they are connected to; the rest form one
implicit CPU segment per connected group.
``ir.includes`` / ``ir.depends`` gather the program's C support code and that
of the element classes it uses (``c_headers`` / ``c_sources``). The State
classes become `StateLayout`s (``ir.layouts``, nested ones first), the shared
instances `PersistentState`s (``ir.states``) and ``floem.main`` a `MainIR`:
later stages read only the IR, never the user's objects.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import networkx as nx

from floem.errors import FloemError, Location
from floem.ir import (BuildOptions, CacheIR, CachePoint, CachePolicy, CCode, CType, Cut, Device,
                      Edge, EdgeKind, ElementNode, FieldLayout, FrameParts, MainIR, MemoryRegionIR,
                      PersistentState, PortTypes, ProgramIR, QueueIR, Role, SegmentIR, SegmentKind,
                      StateLayout, WriteMiss)
from floem.ir.state import layouts_in_order
from floem.lang.cache import CacheEnd
from floem.lang.element import Composite, Connection, Element, Port
from floem.lang.program import Program
from floem.lang.queue import Dequeue, Enqueue, Queue
from floem.lang.segment import CallableSegment, CallArgs, CoreId, Flow, Return, Segment, target
from floem.lang.state import Frame, State, state_initializer

NAME = "build_graph"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset()
PROVIDES: frozenset[str | type] = frozenset({"graph", "segments", "queues", "caches",
                                             "support_code", "states"})
NIC_PROCESS = "nic"


def run(program: Program, options: BuildOptions) -> ProgramIR:
    """The IR of ``program``: its graph, segments, queues, caches, states and main."""
    ir = ProgramIR(name=program.display_name, app_file=program.app_file, options=options,
                   user_names=program.names, warnings=list(program.warnings))
    layout = _LayoutMaker()
    _states(program, ir, layout)
    for seg in program.segments:
        ir.segments[seg.name] = _segment_ir(seg, program.display_name, layout)
    _threads(ir, options)
    _cuts(program, ir)
    unused = _unused_queue_ends(program) | _unused_cache_points(program)
    membership = _assign_segments(program, ir, unused)
    for q in program.queues:
        if q.dequeuer.name not in unused:
            ir.queues[q.name] = _queue_ir(q)
    for c in program.caches:
        points = {CachePoint(p): end.name for p, end in c.ends.items() if end.name not in unused}
        if points:
            ir.caches[c.name] = CacheIR(c.name, c.key, c.keylen, c.val, c.vallen, c.buckets,
                                        c.entries, CachePolicy(c.policy),
                                        WriteMiss(c.write_miss), c.loc, points)
    members: dict[str, list[str]] = {}
    for el in program.elements:
        if el.name in unused:
            continue
        ir.add_node(_element_node(el, membership[el.name], ir, layout))
        members.setdefault(membership[el.name], []).append(el.name)
    for name, elements in members.items():
        ir.segments[name] = dataclasses.replace(ir.segments[name], elements=tuple(elements))
    for rank, (src, dst, loc) in enumerate(_flatten(program.connections)):
        ir.add_edge(Edge(_owner(src), _owner(dst), EdgeKind.DATA, src.name, dst.name,
                         _types(src.c_types), loc, rank))
    for order in program.orders:
        for before in order.before:
            ir.add_edge(Edge(before.name, order.after.name, EdgeKind.ORDER, "", "", (),
                             order.loc, len(ir.graph.edges)))
    for queue in list(ir.queues.values()):
        for channel, names in enumerate(queue.enqueuers):
            for clone in _enqueuer_per_segment(ir, names[0]) if names[0] in ir.graph else ():
                ir.add_enqueuer(queue.name, channel, clone)
    _support_code(program, ir)
    return ir


class _LayoutMaker:
    """`StateLayout`s of the user's State classes, one per class."""

    def __init__(self) -> None:
        self.made: dict[type[State], StateLayout] = {}

    def __call__(self, cls: type[State]) -> StateLayout:
        if cls not in self.made:
            fields = tuple(FieldLayout(f.name, CType(f.type.c, f.type.array_len), f.loc, f.size,
                                       self(f.state_class) if f.state_class else None,
                                       self(f.points_to) if f.points_to else None,
                                       FrameParts(f.length.name, f.buffer.name)
                                       if isinstance(f, Frame) else None, f.max_size)
                           for f in cls.fields())
            self.made[cls] = StateLayout(cls.c_type_name(), fields, cls.class_loc,
                                         packed=cls.packed, declare=cls.declare,
                                         report=cls.report, union=cls.union)
        return self.made[cls]


def _states(program: Program, ir: ProgramIR, layout: _LayoutMaker) -> None:
    """Persistent states, memory regions, main and the layouts of every state class used."""
    shared = list(program.states)
    shared += [s for el in program.elements for s in el.persistent.values() if s not in shared]
    for s in shared:
        ir.states[s.name] = PersistentState(s.name, layout(type(s)), state_initializer(s), s.loc)
    roots = [layout(type(s)) for s in shared]
    roots += [layout(f.state_class) for f in program.flows if f.state_class]
    ir.layouts = layouts_in_order(roots)
    ir.regions = [MemoryRegionIR(r.name, r.size) for r in program.memory_regions]
    code = program.main_code
    ir.main = MainIR(code=CCode(code.text, code.loc) if code else None,
                     process=program.main_process, loc=program.main_location,
                     external=list(program.external.sources) if program.external else None)


def _support_code(program: Program, ir: ProgramIR) -> None:
    """The program's includes and C files, then those the element classes it uses ask for."""
    ir.includes = [CCode(c.text, c.loc) for c in program.includes]
    ir.depends = list(program.depends)
    for el in program.elements:
        if el.name not in ir.graph:
            continue
        cls = type(el)
        for header in el.c_headers:     # the class's, or those an element set for itself
            text = f'#include "{header}"'
            if all(c.text != text for c in ir.includes):
                ir.includes.append(CCode(text, cls.class_loc))
        for source in el.c_sources:
            if source not in ir.depends:
                ir.depends.append(source)


def _owner(port: Port) -> str:
    """The name of the element ``port`` belongs to (a connected port has one)."""
    assert port.owner is not None
    return port.owner.name


def _cut_keywords(keywords: dict[str, Any]) -> dict[str, Any]:
    """``floem.cut``'s keywords as `Cut` takes them (its lists as tuples)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in keywords.items()}


def _cuts(program: Program, ir: ProgramIR) -> None:
    """The cut of each ``target.AUTO`` segment: the build option's (``floem place``), else
    the app's ``floem.cut``."""
    given = [Cut(c.segment, loc=c.loc, **_cut_keywords(c.keywords)) for c in program.cuts]
    seen: set[str] = set()
    for cut in given + list(ir.options.cuts):
        seg = ir.segments.get(cut.segment)
        where = cut.loc.error if cut.loc is not None else FloemError
        if seg is None or not seg.auto:
            auto = [s.name for s in ir.segments.values() if s.auto]
            raise where(f"cut of {cut.segment!r}: not a target.AUTO segment (those: "
                        f"{', '.join(auto) or 'none'})")
        if cut.loc is not None and cut.segment in seen:
            raise where(f"segment {cut.segment!r} is cut twice")
        seen.add(cut.segment)
        ir.segments[cut.segment] = dataclasses.replace(seg, cut=cut)


def _enqueuer_per_segment(ir: ProgramIR, name: str) -> tuple[str, ...]:
    """Give each further segment enqueuing into the same channel its own enqueue element
    (which continues, on a full instance, to what its segment connected to the full port)."""
    original = ir.node(name)
    clones: dict[str, str] = {}                         # segment -> its enqueue
    for e in ir.in_edges(name, kind=None):
        segment = ir.node(e.src).segment
        if segment == original.segment:
            continue
        if segment not in clones:
            clones[segment] = ir.fresh_name(f"{name}_{segment}")
            clone = dataclasses.replace(original, name=clones[segment], segment=segment)
            ir.add_node(clone)
            ir.add_to_segment(segment, clones[segment])
        ir.remove_edge(e)
        ir.add_edge(dataclasses.replace(e, dst=clones[segment]))
    for e in ir.out_edges(name, kind=None):
        cloned = clones.get(ir.node(e.dst).segment)     # a full port used in that segment
        if cloned is not None:
            ir.remove_edge(e)
            ir.add_edge(dataclasses.replace(e, src=cloned))
    return tuple(clones.values())


def _segment_ir(seg: Segment, default_process: str, layout: _LayoutMaker) -> SegmentIR:
    callable_ = isinstance(seg, CallableSegment)
    flow = seg.flow
    auto = seg.device == target.AUTO
    device = Device.CPU if auto else Device(seg.device)
    return SegmentIR(
        name=seg.name, kind=SegmentKind.CALLABLE if callable_ else SegmentKind.THREAD,
        device=device, cores=seg.cores, pinned=seg.pinned and device == Device.CPU, loc=seg.loc,
        process=NIC_PROCESS if device == Device.NIC else seg.process or default_process,
        process_given=seg.process,
        packet_state=(layout(flow.state_class)
                      if isinstance(flow, Flow) and flow.state_class else None),
        default_return=seg.default_return if isinstance(seg, CallableSegment) else None,
        auto=auto, parallel=seg.parallel,
    )


def _threads(ir: ProgramIR, options: BuildOptions) -> None:
    """The thread counts ``--threads SEGMENT=N`` gives (threads on no particular CPU)."""
    threaded = sorted(s.name for s in ir.segments.values() if s.kind == SegmentKind.THREAD)
    for name, count in options.threads:
        seg = ir.segments.get(name)
        if seg is None or seg.kind != SegmentKind.THREAD:
            what = "is a callable segment: its caller's threads run it" if seg else \
                "names no segment"
            raise FloemError(f"--threads {name}={count}: {name!r} {what} (segments with "
                             f"threads: {', '.join(threaded)})")
        if count > 1 and not seg.parallel:
            raise seg.loc.error(f"--threads {name}={count}: segment '{name}' is "
                                f"parallel=False: it runs on one thread")
        ir.segments[name] = dataclasses.replace(seg, cores=list(range(count)), pinned=False)


def _queue_ir(q: Queue) -> QueueIR:
    return QueueIR(name=q.name, channels=q.channels, instances=q.instances, size=q.size,
                   lossless=q.lossless, loc=q.loc, enqueuers=tuple((e.name,) for e in q.enqueuers),
                   dequeuer=q.dequeuer.name, enq_atomic=q.enq_atomic, deq_atomic=q.deq_atomic,
                   entry_size=q.entry_size)


def _unused_queue_ends(program: Program) -> set[str]:
    """Ends of queues nothing is connected to (dropped); half-connected channels are errors."""
    connected = {_owner(p) for c in program.connections for p in (c.src, c.dst)}
    sources = {(_owner(c.src), c.src.name) for c in program.connections}
    unused = set()
    for q in program.queues:
        used_deq = q.dequeuer.name in connected
        used_enq = [e.name in connected for e in q.enqueuers]
        if not used_deq and not any(used_enq):
            unused |= {q.dequeuer.name} | {e.name for e in q.enqueuers}
            continue
        if not any(used_enq):
            raise q.loc.error(f"queue '{q.name}' is dequeued from but nothing enqueues into it")
        for c, used in enumerate(used_enq):
            if not used:
                unused.add(q.enqueuers[c].name)
            if used and (q.dequeuer.name, f"out{c}") not in sources:
                raise q.loc.error(f"queue '{q.name}': channel {c} is enqueued into but nothing "
                                  "dequeues from it")
    return unused


def _unused_cache_points(program: Program) -> set[str]:
    """Cache points nothing is connected to (a get-only cache has no set points)."""
    connected = {_owner(p) for c in program.connections for p in (c.src, c.dst)}
    unused = set()
    for c in program.caches:
        for start, end in (("get_start", "get_end"), ("set_start", "set_end")):
            used = [c.ends[p].name in connected for p in (start, end)]
            if not any(used):
                unused |= {c.ends[start].name, c.ends[end].name}
            elif not all(used):
                missing = end if used[0] else start
                raise c.loc.error(f"cache '{c.name}': {missing} is not connected "
                                  f"({start} and {end} go together)")
    return unused


def _element_node(el: Element, segment: str, ir: ProgramIR, layout: _LayoutMaker) -> ElementNode:
    role = {CallArgs: Role.ARGS, Return: Role.RETURN, CoreId: Role.CORE_ID,
            Enqueue: Role.ENQUEUE, Dequeue: Role.DEQUEUE}.get(type(el), Role.ELEMENT)
    if isinstance(el, CacheEnd):
        role = Role(f"cache_{el.point}")
    if isinstance(el.flow, Flow):
        packet_state = layout(el.flow.state_class) if el.flow.state_class else None
    else:
        packet_state = ir.segments[segment].packet_state
    return ElementNode(
        name=el.name, cls_name=type(el).__name__, loc=el.loc,
        inputs={n: _types(p.c_types) for n, p in el.inputs.items()},
        outputs={n: _types(p.c_types) for n, p in el.outputs.items()},
        code=CCode(el.code.text, el.code.loc) if el.code else None,
        nic_code=CCode(el.nic_code.text, el.nic_code.loc) if el.nic_code else None,
        persistent={attr: ir.states[s.name] for attr, s in el.persistent.items()},
        segment=segment, packet_state=packet_state, role=role,
        queue=el.queue.name if isinstance(el, (Enqueue, Dequeue)) else "",
        channel=el.channel if isinstance(el, Enqueue) else -1,
        uses_network=type(el).uses_network, host_only=type(el).host_only,
        cache=el.cache.name if isinstance(el, CacheEnd) else "",
    )


def _assign_segments(program: Program, ir: ProgramIR, unused: set[str]) -> dict[str, str]:
    """Segment of every element: where it was made, else adopted through connections."""
    seg_of: dict[str, str | None] = {el.name: el.segment.name if el.segment else None
                                     for el in program.elements if el.name not in unused}
    for c in program.connections:
        for port in (c.src, c.dst):
            if c.segment and seg_of.get(_owner(port), "") is None:
                seg_of[_owner(port)] = c.segment       # made by a `>>` inside the segment
    pairs = [(_owner(s), _owner(d)) for s, d, _ in _flatten(program.connections)
             if _owner(s) not in unused and _owner(d) not in unused]
    pairs += [(b.name, o.after.name) for o in program.orders for b in o.before]
    changed = True
    while changed:
        changed = False
        for a, b in pairs:
            if seg_of[a] and not seg_of[b]:
                seg_of[b], changed = seg_of[a], True
            elif seg_of[b] and not seg_of[a]:
                seg_of[a], changed = seg_of[b], True
    loose: nx.Graph[str] = nx.Graph()
    loose.add_nodes_from(n for n, s in seg_of.items() if s is None)
    loose.add_edges_from((a, b) for a, b in pairs if seg_of[a] is None and seg_of[b] is None)
    by_name = {el.name: el for el in program.elements if el.name not in unused}
    for group in sorted(nx.connected_components(loose), key=lambda g: min(
            program.elements.index(by_name[n]) for n in g)):
        first = min(group, key=lambda n: program.elements.index(by_name[n]))
        name = ir.fresh_name(f"{first}_segment")
        ir.segments[name] = SegmentIR(name=name, kind=SegmentKind.THREAD, device=Device.CPU,
                                      cores=[0],
                                      process=program.display_name, loc=by_name[first].loc)
        for n in group:
            seg_of[n] = name
    return {n: s for n, s in seg_of.items() if s is not None}


def _flatten(connections: list[Connection]) -> list[tuple[Port, Port, Location]]:
    """Connections between element ports, composite ports resolved, in program order."""
    leaving: dict[int, list[Connection]] = {}
    for c in connections:
        leaving.setdefault(id(c.src), []).append(c)

    def ends(port: Port, seen: frozenset[int]) -> list[Port]:
        if not isinstance(port.owner, Composite):
            return [port]
        if id(port) in seen:
            return []
        found = []
        for c in leaving.get(id(port), []):
            found.extend(ends(c.dst, seen | {id(port)}))
        return found

    flat = []
    for c in connections:
        if isinstance(c.src.owner, Composite):
            continue
        for dst in ends(c.dst, frozenset()):
            flat.append((c.src, dst, c.loc))
    return flat


def _types(spellings: list[str]) -> PortTypes:
    """A port's C types, from the spellings the language gives them."""
    return tuple(CType(c) for c in spellings)
