"""Check: the values on every data edge fit the input port they enter.

Before: edges as connected, composite ports flattened away (a composite could
hide a mismatch between the ports on its two sides).

After: unchanged, or a `FloemError` at each ``>>`` that made a bad edge (all of them,
in one report)::

    Inc0.out (int) -> Print0.inp (uint8_t)   =>   error: type mismatch
"""
from __future__ import annotations

from floem.errors import FloemError, raise_together
from floem.ir import EdgeKind, ProgramIR

NAME = "check_types"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str] = frozenset({"graph"})
PROVIDES: frozenset[str] = frozenset()


def run(ir: ProgramIR) -> ProgramIR:
    """Raise for the edges whose types differ from their input port's."""
    errors: list[FloemError] = []
    for u, v, d in ir.graph.edges(data=True):
        if d["kind"] != EdgeKind.DATA:
            continue
        want = ir.node(v).inputs[d["in_port"]]
        if want and d["types"] != want:
            have = ", ".join(d["types"]) or "no value"
            errors.append(d["loc"].error(f"type mismatch: {u}.{d['out_port']} ({have}) >> "
                                         f"{v}.{d['in_port']} ({', '.join(want)})"))
    raise_together(errors)
    return ir
