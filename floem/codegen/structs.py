"""What the report of a `report = True` state prints (templates/process.c.j2 spells the
C; templates/declarations.h.j2 declares the state's struct)."""
from __future__ import annotations

from floem.ir import FieldLayout


def printf_conversion(f: FieldLayout) -> tuple[str, str] | None:
    """How field ``f`` is printed: its printf conversion and the C type it is cast to for
    it; None for a field that is not a numeric scalar (not printed)."""
    scalar = f.type.scalar
    return scalar.printf if scalar is not None else None
