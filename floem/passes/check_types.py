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
REQUIRES: frozenset[str | type] = frozenset({"graph"})
PROVIDES: frozenset[str | type] = frozenset()


def run(ir: ProgramIR) -> ProgramIR:
    """Raise for the edges whose types differ from their input port's."""
    errors: list[FloemError] = []
    for e in ir.edges(EdgeKind.DATA):
        want = ir.node(e.dst).inputs[e.in_port]
        if want and e.types != want:
            have = ", ".join(t.c for t in e.types) or "no value"
            errors.append(e.loc.error(f"type mismatch: {e.src}.{e.out_port} ({have}) >> "
                                      f"{e.dst}.{e.in_port} ({', '.join(t.c for t in want)})"))
    raise_together(errors)
    return ir
