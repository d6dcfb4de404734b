"""C that prints a `report = True` state (the declarations of State classes are in lang/state.py)."""
from __future__ import annotations

from floem.codegen.sizes import SCALARS, UNSIGNED
from floem.lang.state import State


def report_statement(instance: State, pointer: str) -> str:
    """C printing ``floem: state NAME (Class): field value, ...`` for a ``report = True`` state.

    Numeric scalar fields only; ``pointer`` is the C expression of the instance's address.
    """
    formats, args = [], []
    for f in type(instance).fields():
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
    text = f"floem: state {instance.name} ({type(instance).__name__}): {', '.join(formats)}\\n"
    return f'fprintf(stderr, "{text}"{"".join(", " + a for a in args)});'
