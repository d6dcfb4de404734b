"""Liveness of per-packet state fields: which fields each segment uses.

Before: every node's body analysis lists the per-packet fields it uses and writes.

After: each segment's ``uses`` is the set of fields its elements read;
warnings (not errors) name a field written but never read, and a field read
but never written::

    segment s  (A writes key; B reads key, len)   =>  s.uses = {key, len}
                                                     warning: 'len' read, never written
"""
from __future__ import annotations

from floem.ir import ProgramIR

NAME = "liveness"


def run(ir: ProgramIR) -> ProgramIR:
    """Compute segment use sets and the dead-write / undefined-read warnings."""
    written: dict[tuple[str, str], str] = {}
    read: dict[tuple[str, str], str] = {}
    for seg in ir.segments.values():
        if seg.state_class is None:
            continue
        flow = seg.state_class.__name__
        for name in seg.elements:
            if ir.node(name).info is None:
                continue
            fields = ir.node(name).info.fields
            seg.uses |= fields.uses
            for f in fields.writes | fields.kills:
                written.setdefault((flow, f), name)
            for f in fields.uses:
                read.setdefault((flow, f), name)
    for (flow, f), element in written.items():
        if (flow, f) not in read:
            ir.warnings.append(f"{ir.node(element).loc}: per-packet field {flow}.{f} is written "
                               f"by '{element}' but never read")
    for (flow, f), element in read.items():
        if (flow, f) not in written:
            ir.warnings.append(f"{ir.node(element).loc}: per-packet field {flow}.{f} is read "
                               f"by '{element}' but never written")
    return ir
