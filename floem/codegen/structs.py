"""C that prints a `report = True` state (its struct declaration is in floem/ir/state.py)."""
from __future__ import annotations

from floem.codegen.sizes import SCALARS, UNSIGNED
from floem.ir import PersistentState


def report_statement(state: PersistentState) -> str:
    """C printing ``floem: state NAME (Class): field value, ...`` for a ``report = True`` state.

    Numeric scalar fields only.
    """
    formats, args = [], []
    pointer = state.pointer
    for f in state.layout.fields:
        c = f.type.c
        if f.type.array_len is not None or c not in SCALARS:
            continue
        if c in ("float", "double"):
            formats.append(f"{f.name} %g")
            args.append(f"(double){pointer}->{f.name}")
        elif c in UNSIGNED:
            formats.append(f"{f.name} %llu")
            args.append(f"(unsigned long long){pointer}->{f.name}")
        else:
            formats.append(f"{f.name} %lld")
            args.append(f"(long long){pointer}->{f.name}")
    text = f"floem: state {state.name} ({state.layout.name}): {', '.join(formats)}\\n"
    return f'fprintf(stderr, "{text}"{"".join(", " + a for a in args)});'
