"""Find sources: each segment's source element and per-packet state.

Before: `SegmentIR` entries with their elements but no ``source``.

After: a segment with exactly one candidate source (an element with no
inputs and no ``order`` predecessor; a callable's is its arguments element)
has it as ``source``, and a segment whose elements share one per-packet state
has it as ``packet_state``. Nothing is checked here: ``check_segments``
reports segments with no source, two sources or mixed states::

    segment rx: FromNet0, Parse0, Count0     segment rx source=FromNet0
"""
from __future__ import annotations

import dataclasses

from floem.ir import EdgeKind, ProgramIR, Role, SegmentIR, SegmentKind, StateLayout

NAME = "find_sources"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({"graph", "segments"})
PROVIDES: frozenset[str | type] = frozenset({"sources"})


def run(ir: ProgramIR) -> ProgramIR:
    """Record each segment's source and per-packet state where they are unambiguous."""
    for seg in list(ir.segments.values()):
        sources = candidate_sources(ir, seg)
        states = packet_states(ir, seg)
        ir.segments[seg.name] = dataclasses.replace(
            seg, source=sources[0] if len(sources) == 1 else "",
            packet_state=states[0] if seg.packet_state is None and len(states) == 1
            else seg.packet_state)
    return ir


def candidate_sources(ir: ProgramIR, seg: SegmentIR) -> list[str]:
    """Elements of ``seg`` that could start it, a callable's arguments element first."""
    sources = [n for n in seg.elements if ir.node(n).is_source
               and not ir.in_edges(n, kind=EdgeKind.ORDER)]
    if seg.kind == SegmentKind.CALLABLE:
        sources.sort(key=lambda n: ir.node(n).role != Role.ARGS)
    return sources


def packet_states(ir: ProgramIR, seg: SegmentIR) -> list[StateLayout]:
    """The distinct per-packet states of the elements of ``seg``, by name."""
    found: dict[str, StateLayout] = {}
    for name in seg.elements:
        state = ir.node(name).packet_state
        if state is not None:
            found.setdefault(state.name, state)
    return [found[k] for k in sorted(found)]
