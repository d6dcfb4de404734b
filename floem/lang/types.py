"""Floem types: thin names for C types, compared by their C spelling."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from floem.errors import FloemError


@dataclass(frozen=True)
class Type:
    """A C type usable on ports and fields; ``c`` is its C spelling."""

    c: str
    array_len: int | None = None
    state: Any = field(default=None, compare=False)
    points_to: Any = field(default=None, compare=False)

    def declare(self, name: str) -> str:
        """A C declaration of ``name`` with this type (arrays put ``[n]`` after the name)."""
        return c_declaration(self.c, self.array_len, name)

    def __str__(self) -> str:
        return self.c if self.array_len is None else f"{self.c}[{self.array_len}]"


def c_declaration(c: str, array_len: int | None, name: str) -> str:
    """A C declaration of ``name`` with type spelling ``c`` (an array of ``array_len``)."""
    if array_len is not None:
        return f"{c} {name}[{array_len}]"
    return f"{c}{'' if c.endswith('*') else ' '}{name}"


Void = Type("void")
Bool = Type("bool")
Int = Type("int")
SizeT = Type("size_t")
Float = Type("float")
Double = Type("double")

_WIDTHS = (8, 16, 32, 64)


def Uint(bits: int) -> Type:
    """Unsigned integer of ``bits`` (8, 16, 32 or 64) bits: ``uintN_t``."""
    if bits not in _WIDTHS:
        raise FloemError(f"Uint({bits}): width must be one of {_WIDTHS}")
    return Type(f"uint{bits}_t")


def Sint(bits: int) -> Type:
    """Signed integer of ``bits`` (8, 16, 32 or 64) bits: ``intN_t``."""
    if bits not in _WIDTHS:
        raise FloemError(f"Sint({bits}): width must be one of {_WIDTHS}")
    return Type(f"int{bits}_t")


def Pointer(t: TypeLike) -> Type:
    """Pointer to ``t``; a pointer to a `State` remembers it (``points_to``), so that a
    variable-size field of that type is a *typed packet* the compiler reads member by member."""
    inner = as_type(t)
    pointee = inner.state if inner.array_len is None else None
    return Type(_normalise_c(inner.c + "*"), points_to=pointee)


def Array(t: TypeLike, n: int) -> Type:
    """``n`` elements of ``t`` (for state fields)."""
    inner = as_type(t)
    return Type(inner.c, n, inner.state)


TypeLike = Type | str | type


def as_type(t: TypeLike) -> Type:
    """Normalise a type given by the user: a `Type`, a `State` subclass or a raw C string."""
    if isinstance(t, Type):
        return t
    if isinstance(t, str):
        return Type(_normalise_c(t))
    c_name = getattr(t, "c_type_name", None)
    if callable(c_name):
        return Type(c_name(), state=t)
    raise FloemError(f"{t!r} is not a Floem type")


def _normalise_c(spelling: str) -> str:
    """One spelling per C type: words split by one space, ``*`` after a space: ``char **``."""
    out = ""
    for word in spelling.replace("*", " * ").split():
        if word == "*" and out.endswith("*"):
            out += "*"
        else:
            out += (" " if out else "") + word
    return out
