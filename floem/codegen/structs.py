"""What the report of a `report = True` state prints (templates/process.c.j2 spells the
C; the state's struct declaration is in floem/ir/state.py)."""
from __future__ import annotations

from floem.ir import FieldLayout

#: How a number of each kind (`floem.ir.state.NUMBER_KINDS`) is printed: its printf
#: conversion and the C type it is cast to for it.
_CONVERSIONS = {"real": ("%g", "double"), "unsigned": ("%llu", "unsigned long long"),
                "signed": ("%lld", "long long")}


def printf_conversion(f: FieldLayout) -> tuple[str, str] | None:
    """How field ``f`` is printed: its printf conversion and the C type it is cast to for
    it; None for a field that is not a numeric scalar (not printed)."""
    kind = f.type.number
    return _CONVERSIONS[kind] if kind is not None else None
