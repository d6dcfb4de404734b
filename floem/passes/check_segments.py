"""Check segments: one source each, every element reachable, no edge between segments.

Before: segments with the source and per-packet state ``find_sources`` found
where they were unambiguous.

After: the same IR (this pass only checks). Errors, all reported together, for an edge joining two
segments (that needs a queue), a segment with no elements, no source or two,
an element unreachable from its segment's source, mixed per-packet states,
NIC segments that are callable or name a process, and a cut (``split_auto``) whose channels
come from ports of an element that may fire several of them::

    Gen0 (segment a) >> Sink0 (segment b)    error: joins two segments; connect through a Queue
"""
from __future__ import annotations

import networkx as nx

from floem.errors import FloemError, raise_together
from floem.ir import Device, ProgramIR, Role, SegmentIR, SegmentKind
from floem.passes.build_graph import NIC_PROCESS
from floem.passes.find_sources import candidate_sources, packet_states
from floem.passes.split_auto import several_paths

NAME = "check_segments"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({"graph", "segments", "sources", "bodies"})
PROVIDES: frozenset[str | type] = frozenset({"segments_checked"})


def run(ir: ProgramIR) -> ProgramIR:
    """Check the segment rules: every edge joining two segments in one report; then every
    segment (its first mistake) and every cut's queue in one report."""
    errors: list[FloemError] = []
    for e in ir.edges():
        su, sv = ir.node(e.src).segment, ir.node(e.dst).segment
        if su != sv:
            errors.append(e.loc.error(f"{e.src} (segment {su}) >> {e.dst} (segment {sv}) joins "
                                      "two segments; connect segments through a Queue"))
    raise_together(errors)          # the segments' own checks assume they are apart
    for seg in ir.segments.values():
        try:
            _check_segment(ir, seg)
        except FloemError as e:
            errors.append(e)
    for q in ir.queues.values():
        if q.boundary and q.channels > 1:
            part = ir.segments[ir.node(q.enqueuers[0][0]).segment].elements
            forked = several_paths(ir, part)
            if forked is not None:
                errors.append(q.loc.error(f"the cut's queue '{q.name}' has {q.channels} "
                                          f"channels and {forked}: a packet could cross twice"))
    raise_together(errors)
    return ir


def _check_segment(ir: ProgramIR, seg: SegmentIR) -> None:
    """Raise the first mistake of ``seg`` (the later checks assume the earlier hold)."""
    if seg.device == Device.NIC:
        _check_nic_segment(ir, seg)
    elif seg.process == NIC_PROCESS:
        raise seg.loc.error(f"process name '{NIC_PROCESS}' is the NIC's; choose another")
    if not seg.elements:
        raise seg.loc.error(f"segment '{seg.name}' has no elements")
    sources = candidate_sources(ir, seg)
    if not sources:
        raise seg.loc.error(f"segment '{seg.name}' has no source (an element with no inputs)")
    if len(sources) > 1:
        first, second = ir.node(sources[0]), ir.node(sources[1])
        raise second.loc.error(f"two sources in segment '{seg.name}': '{first.name}' "
                               f"({first.loc}) and '{second.name}'; a segment starts at "
                               "one source")
    reached = nx.descendants(ir.graph, seg.source) | {seg.source}
    lost = [n for n in seg.elements if n not in reached]
    if lost:            # a user's element first: the return is lost with the path to it
        name = min(lost, key=lambda n: ir.node(n).role == Role.RETURN)
        raise ir.node(name).loc.error(_unreachable(ir, seg, name))
    states = packet_states(ir, seg)
    if len(states) > 1:
        names = ", ".join(s.name for s in states)
        raise seg.loc.error(f"segment '{seg.name}' mixes per-packet states ({names})")


def _unreachable(ir: ProgramIR, seg: SegmentIR, name: str) -> str:
    """Why element ``name`` of ``seg`` is an error: no path from the segment's source
    reaches it (said in the user's terms for a callable's arguments and return)."""
    if ir.node(name).role == Role.RETURN and not any(ir.graph.predecessors(name)):
        return (f"nothing reaches the output of callable segment '{seg.name}': connect its "
                f"last element to it (... >> self.out)")
    source = ir.node(seg.source)
    start = f"the arguments of callable segment '{seg.name}' (self.inp)" \
        if source.role == Role.ARGS else f"the source '{seg.source}' of segment '{seg.name}'"
    return f"element '{name}' is unreachable from {start}"


def _check_nic_segment(ir: ProgramIR, seg: SegmentIR) -> None:
    """NIC segments run in the NIC process: no callables, no process of their own."""
    if seg.kind == SegmentKind.CALLABLE:
        raise seg.loc.error(f"callable segment '{seg.name}' cannot run on the NIC: legacy code "
                            "calls into the host; reach the NIC through a Queue")
    if seg.process_given is not None:
        raise seg.loc.error(f"segment '{seg.name}' is on the NIC, which is one process of its own; "
                            f"drop process={seg.process_given!r}")
