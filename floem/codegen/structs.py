"""What the report of a `report = True` state prints (templates/process.c.j2 spells the
C; the state's struct declaration is in floem/ir/state.py)."""
from __future__ import annotations

from floem.ir.sizes import SCALARS, UNSIGNED
from floem.ir import FieldLayout


def printf_conversion(f: FieldLayout) -> tuple[str, str] | None:
    """How field ``f`` is printed: its printf conversion and the C type it is cast to for
    it; None for a field that is not a numeric scalar (not printed)."""
    c = f.type.c
    if f.type.array_len is not None or c not in SCALARS:
        return None
    if c in ("float", "double"):
        return "%g", "double"
    if c in UNSIGNED:
        return "%llu", "unsigned long long"
    return "%lld", "long long"
