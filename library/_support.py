"""Helpers shared by the library elements: C support files, value lists, option checks."""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from floem.lang.types import Type, TypeLike, as_type

from .net import FRAME

__all__ = ["FRAME", "c_file", "type_list", "read_values", "read_frame", "c_bytes", "fixed_bytes"]

C_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c")


def c_file(name: str) -> str:
    """Absolute path of a C support file under ``library/c``."""
    return os.path.join(C_DIR, name)


def type_list(ty: TypeLike | list[TypeLike] | tuple[TypeLike, ...] | None) -> list[Type]:
    """``ty`` as a list of types: one type, a list or tuple of them, or None (no value)."""
    if ty is None:
        return []
    if isinstance(ty, (list, tuple)):
        return [as_type(t) for t in ty]
    return [as_type(ty)]


def read_values(port: str, types: Sequence[Type], prefix: str = "v") -> tuple[str, list[str]]:
    """The C statement reading ``port`` into fresh variables, and their names."""
    names = [f"{prefix}{i}" for i in range(len(types))]
    decls = [t.declare(n) for t, n in zip(types, names)]
    if not types:
        return f"{port}();", names
    if len(types) == 1:
        return f"{decls[0]} = {port}();", names
    return f"({', '.join(decls)}) = {port}();", names


def read_frame(port: str = "inp") -> str:
    """C statements reading a frame port into ``size``, ``data`` and ``buf`` (maybe unused)."""
    return (f"(size_t size, uint8_t *data, void *buf) = {port}(); "
            "(void)size; (void)data; (void)buf;")


def c_bytes(data: bytes) -> str:
    """A C brace initializer of byte values."""
    return "{" + ", ".join(str(b) for b in data) + "}"


def fixed_bytes(value: Any, length: int, what: str) -> bytes:
    """``value`` (bytes or a hex string) as exactly ``length`` bytes, else ValueError."""
    data = bytes.fromhex(value) if isinstance(value, str) else bytes(value)
    if len(data) != length:
        raise ValueError(f"{what} must be {length} bytes, got {len(data)}")
    return data
