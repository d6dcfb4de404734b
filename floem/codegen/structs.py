"""C declarations of `State` classes, shared by the front end (parsing) and code generation."""
from __future__ import annotations

from typing import Any, Iterable

from floem.codegen.sizes import SCALARS, UNSIGNED
from floem.lang.state import State


def state_classes(program: Any, extra: Iterable[type[State]] = ()) -> list[type[State]]:
    """Every State class the program uses, nested field types before their users."""
    roots: list[type[State]] = [type(s) for s in program.states]
    roots += [f.state_class for f in program.flows if f.state_class]
    roots += list(extra)
    ordered: list[type[State]] = []

    def visit(cls: type[State]) -> None:
        if cls in ordered:
            return
        for f in cls.fields():
            if f.state_class is not None:
                visit(f.state_class)
        ordered.append(cls)

    for cls in roots:
        visit(cls)
    return ordered


def struct_declarations(classes: list[type[State]]) -> str:
    """Typedefs and struct definitions for ``classes`` (skipping ``declare = False`` ones)."""
    lines = []
    for cls in classes:
        if cls.declare:
            lines.append(f"typedef struct {cls.c_type_name()} {cls.c_type_name()};")
    for cls in classes:
        if not cls.declare:
            continue
        lines.append(f"struct {cls.c_type_name()} {{")
        fields = cls.fields()
        for f in fields:
            lines.append(f"    {f.type.declare(f.name)};")
        if not fields:
            lines.append("    char _empty;")
        lines.append("}" + (" __attribute__((packed))" if cls.packed else "") + ";")
    return "\n".join(lines) + "\n"


def c_initializer(value: Any) -> str:
    """A C initializer for a Python value from a State ``init``: numbers, bools, C text, lists."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(c_initializer(v) for v in value) + "}"
    if isinstance(value, State):
        return state_initializer(value)
    raise TypeError(f"cannot turn {value!r} into a C initializer")


def state_initializer(instance: State) -> str:
    """``{ .field = value, ... }`` from the values ``init`` assigned (others are zero)."""
    parts = [f".{k} = {c_initializer(v)}" for k, v in instance.values.items()]
    return "{ " + ", ".join(parts) + " }" if parts else "{ 0 }"


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
