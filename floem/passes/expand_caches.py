"""Cache expansion: the four points of each `Cache` become its lookup, fill, update and set end.

Before (Floem paper, section 4.3)::

    A >> c.get_start >> [get region] >> c.get_end >> B
    S >> c.set_start >> [set region] >> c.set_end >> T

After::

    A >> lookup --miss--> [get region] >> fill >> B          (fill caches the result
              \\--hit---------------------------------> B     unless a set raced it)
    S >> update --region--> [set region] >> set_end >> T     (set_end stops evictions)
              \\--done----------------------------------> T

``update`` follows the policy: write-through updates the cache and always
runs the set region; write-back marks the entry dirty and skips the region
(with no-write-allocate, a key not in the cache still goes through the
region). A dirty entry evicted by ``fill`` or ``update`` runs the set region
on a fresh per-packet state flagged as an eviction, which ``set_end`` drops;
when the set region starts with a queue, the eviction is only enqueued. Two
hidden per-packet fields are added to the flow's state: the bucket version
seen by a miss (so ``fill`` never caches a value older than a set) and the
eviction flag.

Consistency across devices needs misses and evictions of a key to travel one
physical queue: both regions must cross the same queue, and if it has several
instances the lookup and the update steer by a hash of the key (through
``state->qid``), which no element of the regions may change. Programs that
break these rules, put the four points on different devices or processes, put
a callable segment in a region, or let two caches' regions overlap are rejected.
The build option ``cache_steering=False`` turns the steering off: it exists
only to demonstrate the hazard (the paper's Figure 3) in a test.

A fill evicting a dirty entry on another segment than ``set_start``'s would
run the set region there; when that region starts with a queue, that thread
(often the one draining the replies the region's queue waits on) could wait
forever for room. So such a fill hands the eviction to the cache
(``defer_fill_evictions``) and ``set_start``'s segment sends it before its
next lookup or update, still ahead of any later miss of the key.
"""
from __future__ import annotations

import dataclasses

from floem import csrc
from floem.errors import FloemError
from floem.ir import (CacheIR, CachePoint, CachePolicy, CType, EdgeKind, ElementNode,
                      FieldLayout, ProgramIR, Role, SegmentKind, StateLayout)

NAME = "expand_caches"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({"bodies", "sources", "segments_checked", "caches"})
PROVIDES: frozenset[str | type] = frozenset({"cache_regions", "cache_fields"})
#: The output port of a start point that leads into its region.
_INTO_REGION = {CachePoint.GET_START: "miss", CachePoint.SET_START: "region"}

#: Output ports of each expanded point, and the role it takes.
_EXPANSION = {
    CachePoint.GET_START: (Role.CACHE_LOOKUP, ["hit", "miss"]),
    CachePoint.GET_END: (Role.CACHE_FILL, ["out"]),
    CachePoint.SET_START: (Role.CACHE_UPDATE, ["region", "done"]),
    CachePoint.SET_END: (Role.CACHE_SET_END, ["out"]),
}


def run(ir: ProgramIR) -> ProgramIR:
    """Expand every cache and check the consistency rules."""
    for name in list(ir.caches):
        c = ir.caches[name]
        nodes = [ir.node(n) for n in c.points.values()]
        state = _check_points(ir, c, nodes)
        extended = _extend_state(state, c)
        ir.replace_layout(state, extended)
        c = dataclasses.replace(c, state=extended)
        _rewire(ir, c)
        c = dataclasses.replace(
            c, get_region=_region(ir, c, CachePoint.GET_START, CachePoint.GET_END),
            set_region=_region(ir, c, CachePoint.SET_START, CachePoint.SET_END))
        c = dataclasses.replace(c, steer_instances=_check_regions(ir, c, extended),
                                defer_fill_evictions=_defers_fill_evictions(ir, c))
        ir.caches[name] = c
        for point in c.points.values():
            ir.replace_node(dataclasses.replace(ir.node(point), info=_info(ir.node(point), c)))
    _check_overlaps(ir)
    return ir


def _check_points(ir: ProgramIR, c: CacheIR, nodes: list[ElementNode]) -> StateLayout:
    devices = {ir.segments[n.segment].device for n in nodes}
    if len(devices) > 1:
        raise c.loc.error(f"cache '{c.name}': its points are on different devices "
                          f"({', '.join(sorted(devices))}); put get_start, get_end, set_start "
                          "and set_end on one device")
    processes = {ir.segments[n.segment].process for n in nodes}
    if len(processes) > 1:
        raise c.loc.error(f"cache '{c.name}': its points are in different processes "
                          f"({', '.join(sorted(processes))})")
    state = nodes[0].packet_state
    if state is None:
        raise c.loc.error(f"cache '{c.name}' needs a per-packet state (a Flow's PerPacket) "
                          "holding its key and value fields")
    names = {f.name for f in state.fields}
    for what in ("key", "keylen", "val", "vallen"):
        field = getattr(c, what)
        if field is not None and field not in names:
            raise c.loc.error(f"cache '{c.name}': {what}={field!r} is not a field of "
                              f"{state.name} (fields: {', '.join(sorted(names))})")
    return state


def _extend_state(state: StateLayout, c: CacheIR) -> StateLayout:
    """The flow's state plus the cache's hidden fields (same C name, more fields)."""
    return state.extended([FieldLayout(c.version_field, CType("uint32_t"), c.loc),
                           FieldLayout(c.evict_field, CType("uint8_t"), c.loc)])


def _rewire(ir: ProgramIR, c: CacheIR) -> None:
    """Give each point its expanded role and ports; add the hit and done shortcuts."""
    after = {p: ir.out_edges(n, "out") for p, n in c.points.items()}
    for point, name in c.points.items():
        role, ports = _EXPANSION[point]
        if point == CachePoint.SET_START and c.policy == CachePolicy.WRITE_THROUGH:
            ports = ["region"]                  # write-through always runs the set region
        ir.replace_node(dataclasses.replace(ir.node(name), role=role,
                                            outputs={p: () for p in ports}))
        for e in ir.out_edges(name):
            ir.remove_edge(e)
            ir.add_edge(dataclasses.replace(e, out_port=_INTO_REGION.get(point, "out")))
    for start, end, port in ((CachePoint.GET_START, CachePoint.GET_END, "hit"),
                             (CachePoint.SET_START, CachePoint.SET_END, "done")):
        if start not in c.points or port not in ir.node(c.points[start]).outputs:
            continue
        first = [e.dst for e in after[end]]
        segment = ir.node(c.points[start]).segment
        if ir.node(c.points[end]).segment != segment:
            clones = _clone_chain(ir, first, segment, port)
            first = [clones[v] for v in first]
        for e, v in zip(after[end], first):
            ir.add_edge(dataclasses.replace(e, src=c.points[start], dst=v, out_port=port,
                                            rank=len(ir.graph.edges)))


def _clone_chain(ir: ProgramIR, heads: list[str], segment: str, tag: str) -> dict[str, str]:
    """Copy the elements after an end point into the start point's segment (for the shortcut).

    The copies run the same bodies; an enqueue copy becomes another enqueuer of its channel.
    """
    chain: list[str] = []
    todo = list(heads)
    while todo:
        name = todo.pop(0)
        if name in chain:
            continue
        chain.append(name)
        todo += [e.dst for e in ir.out_edges(name, kind=None)]
    clones = {name: ir.fresh_name(f"{name}_{tag}") for name in chain}
    for name, clone in clones.items():
        node = dataclasses.replace(ir.node(name), name=clone, segment=segment)
        ir.add_node(node)
        ir.add_to_segment(segment, clone)
        if node.role == Role.ENQUEUE:
            ir.add_enqueuer(node.queue, node.channel, clone)
    for name, clone in clones.items():
        for e in ir.out_edges(name, kind=None):
            ir.add_edge(dataclasses.replace(e, src=clone, dst=clones[e.dst]))
    return clones


def _info(n: ElementNode, c: CacheIR) -> csrc.BodyInfo:
    """What an expanded point reads and writes, for liveness and the callable check."""
    key = {c.key} | ({c.keylen} if c.keylen else set())
    val = {c.val} | ({c.vallen} if c.vallen else set())
    qid = {"qid"} if c.steer_instances else set()
    ports = list(n.outputs)
    uses, kills, writes = set(key), set(), set()
    if n.role == Role.CACHE_LOOKUP:
        kills, writes = {c.version_field}, {c.version_field} | val | qid
    elif n.role == Role.CACHE_FILL:
        uses |= val | {c.version_field}
        writes = set(val)
    elif n.role == Role.CACHE_UPDATE:
        uses |= val
        kills, writes = {c.evict_field}, {c.evict_field} | qid
    else:
        uses = {c.evict_field}
    # set_end stops only evictions, which never come from the element before it: to the
    # callable check it always fires.
    switch = len(ports) > 1 and n.role in (Role.CACHE_LOOKUP, Role.CACHE_UPDATE)
    body = csrc.Body(n.name, "", n.loc.file, n.loc.line, [], [], None, {})
    return csrc.BodyInfo(
        element=n.name, reads={}, calls={},
        form=csrc.BodyForm.SWITCH if switch else csrc.BodyForm.BLOCK,
        always_fires=set() if switch else set(ports), switch_ports=ports if switch else [],
        switch_has_else=switch, fields=csrc.FieldUse(uses, kills, writes),
        persistent_used=set(), body=body)


def _region(ir: ProgramIR, c: CacheIR, start: CachePoint,
            end: CachePoint) -> tuple[str, ...]:
    """Elements between a start point and its end, across queues, in discovery order."""
    if start not in c.points:
        return ()
    port = "miss" if start == CachePoint.GET_START else "region"
    todo = [e.dst for e in ir.out_edges(c.points[start], port)]
    seen: list[str] = []
    while todo:
        name = todo.pop(0)
        if name == c.points[end] or name in seen:
            continue
        seen.append(name)
        n = ir.node(name)
        todo += [e.dst for e in ir.out_edges(name)]
        todo += [e.dst for e in ir.out_edges(name, kind=EdgeKind.ORDER)]
        if n.role == Role.ENQUEUE:
            q = ir.queues[n.queue]
            if q.dequeuer not in seen:
                seen.append(q.dequeuer)
            todo += [e.dst for e in ir.out_edges(q.dequeuer, f"out{n.channel}")]
    return tuple(seen)


def _defers_fill_evictions(ir: ProgramIR, c: CacheIR) -> bool:
    """True when fills (get_end) may evict dirty entries on another segment than set_start's."""
    if c.policy != CachePolicy.WRITE_BACK or c.entries is None \
            or not {CachePoint.GET_END, CachePoint.SET_START} <= set(c.points):
        return False
    fill, update = (ir.node(c.points[p]) for p in (CachePoint.GET_END, CachePoint.SET_START))
    return fill.segment != update.segment


def _queues(ir: ProgramIR, region: tuple[str, ...]) -> set[str]:
    return {ir.node(n).queue for n in region if ir.node(n).role == Role.ENQUEUE}


def _check_regions(ir: ProgramIR, c: CacheIR, state: StateLayout) -> int:
    """Check the regions of ``c`` (the rules of the module's docstring); the number of
    queue instances its lookups and updates steer over by key (0: none)."""
    entry_segments = {ir.node(c.points[p]).segment
                      for p in (CachePoint.GET_START, CachePoint.SET_START) if p in c.points}
    for name in c.get_region + c.set_region:
        seg = ir.segments[ir.node(name).segment]
        if seg.kind == SegmentKind.CALLABLE and seg.name not in entry_segments:
            raise seg.loc.error(f"callable segment '{seg.name}' is inside the region cached by "
                                f"'{c.name}'; a cached region runs only as part of the graph")
    get_queues, set_queues = _queues(ir, c.get_region), _queues(ir, c.set_region)
    if c.set_region and get_queues != set_queues:
        raise c.loc.error(f"cache '{c.name}': the get path crosses queue(s) "
                          f"{sorted(get_queues) or 'none'} but the set path crosses "
                          f"{sorted(set_queues) or 'none'}; misses and evictions of a key must "
                          "travel one queue (use one Queue with a channel for each)")
    counts = {ir.queues[q].instances for q in get_queues}
    if len(counts) > 1:
        raise c.loc.error(f"cache '{c.name}': the queues its regions cross have different "
                          f"numbers of instances ({', '.join(map(str, sorted(counts)))}); misses "
                          "and evictions are steered by key, so give them the same inst=")
    wide = sorted(q for q in get_queues if ir.queues[q].instances > 1)
    if not wide or not ir.options.cache_steering or state.field("qid") is None:
        return 0
    for name in c.get_region + c.set_region:
        n = ir.node(name)
        if n.info is not None and "qid" in n.info.fields.writes | n.info.fields.kills:
            raise n.loc.error(f"'{name}' sets state->qid inside the region cached by "
                              f"'{c.name}': misses and evictions of a key could then take "
                              "different queue instances and be reordered")
    return ir.queues[wide[0]].instances


def _check_overlaps(ir: ProgramIR) -> None:
    owner: dict[str, str] = {}
    for c in ir.caches.values():
        for name in set(c.get_region + c.set_region):
            if owner.setdefault(name, c.name) != c.name:
                raise FloemError(f"the regions cached by '{owner[name]}' and '{c.name}' overlap "
                                 f"(both contain '{name}')", c.loc.file, c.loc.line)
