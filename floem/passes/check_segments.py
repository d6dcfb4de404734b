"""Check segments: one source each, every element reachable, no edge between segments.

Before: `SegmentIR` entries with their elements but no ``source``.

After: each segment's ``source`` is set (a callable's is its arguments
element); errors for two sources in one segment, an element unreachable from
its segment's source, a data edge joining two segments (that needs a queue),
mixed per-packet state types, and NIC segments that are callable or name a process::

    segment rx: FromNet0, Parse0, Count0     segment rx source=FromNet0
"""
from __future__ import annotations

import networkx as nx

from floem.ir import EdgeKind, ProgramIR, SegmentIR
from floem.passes.build_graph import NIC_PROCESS

NAME = "check_segments"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES = frozenset({"graph", "segments"})
PROVIDES = frozenset({"sources"})


def run(ir: ProgramIR) -> ProgramIR:
    """Set sources and check the segment rules."""
    for u, v, d in ir.graph.edges(data=True):
        su, sv = ir.node(u).segment, ir.node(v).segment
        if su != sv:
            raise d["loc"].error(f"{u} (segment {su}) >> {v} (segment {sv}) joins two segments; "
                                 "connect segments through a Queue")
    for seg in ir.segments.values():
        if seg.device == "NIC":
            _check_nic_segment(ir, seg)
        elif seg.process == NIC_PROCESS:
            raise seg.loc.error(f"process name '{NIC_PROCESS}' is the NIC's; choose another")
        if not seg.elements:
            raise seg.loc.error(f"segment '{seg.name}' has no elements")
        sources = [n for n in seg.elements if ir.node(n).is_source
                   and not ir.in_edges(n, kind=EdgeKind.ORDER)]
        if seg.kind == "callable":
            sources.sort(key=lambda n: ir.node(n).role != "args")
        if not sources:
            raise seg.loc.error(f"segment '{seg.name}' has no source (an element with no inputs)")
        if len(sources) > 1:
            first, second = ir.node(sources[0]), ir.node(sources[1])
            raise second.loc.error(f"two sources in segment '{seg.name}': '{first.name}' "
                                   f"({first.loc}) and '{second.name}'; a segment starts at "
                                   "one source")
        seg.source = sources[0]
        reached = nx.descendants(ir.graph, seg.source) | {seg.source}
        for name in seg.elements:
            if name not in reached:
                raise ir.node(name).loc.error(f"element '{name}' is unreachable from the source "
                                              f"'{seg.source}' of segment '{seg.name}'")
        states = {ir.node(n).state_class for n in seg.elements} - {None}
        if len(states) > 1:
            names = ", ".join(sorted(s.__name__ for s in states))
            raise seg.loc.error(f"segment '{seg.name}' mixes per-packet states ({names})")
        seg.state_class = seg.state_class or next(iter(states), None)
    return ir


def _check_nic_segment(ir: ProgramIR, seg: SegmentIR) -> None:
    """NIC segments run in the NIC process: no callables, no process of their own."""
    if seg.kind == "callable":
        raise seg.loc.error(f"callable segment '{seg.name}' cannot run on the NIC: legacy code "
                            "calls into the host; reach the NIC through a Queue")
    given = next(s for s in ir.program.segments if s.name == seg.name).process
    if given is not None:
        raise seg.loc.error(f"segment '{seg.name}' is on the NIC, which is one process of its own; "
                            f"drop process={given!r}")
