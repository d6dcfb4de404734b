"""Sizes of C types as the generated code lays them out (x86-64 / LP64), for reports."""
from __future__ import annotations

from floem.ir import FieldLayout, StateLayout

#: The C scalar types the generated code knows, with their sizes.
SCALARS = {
    "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "_Bool": 1,
    "int8_t": 1, "uint8_t": 1, "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "float": 4,
    "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8,
    "uint64_t": 8, "size_t": 8, "ssize_t": 8, "double": 8, "intptr_t": 8, "uintptr_t": 8,
}


def field_size(f: FieldLayout) -> int | None:
    """Bytes of field ``f`` (``None`` when unknown, e.g. a struct from a user header)."""
    if f.type.c.endswith("*"):
        one: int | None = 8
    elif f.nested is not None:
        one = state_size(f.nested)
    else:
        one = SCALARS.get(f.type.c)
    if one is None:
        return None
    return one * (f.type.array_len or 1)


def state_size(state: StateLayout) -> int | None:
    """Bytes of a state struct: packed, or with natural alignment when ``packed = False``."""
    offset, widest = 0, 1
    for f in state.fields:
        size = field_size(f)
        if size is None:
            return None
        if not state.packed:
            align = min(8, size // (f.type.array_len or 1)) or 1
            widest = max(widest, align)
            offset = (offset + align - 1) // align * align
        offset += size
    if not state.packed:
        offset = (offset + widest - 1) // widest * widest
    return offset


def entry_size(payload: int) -> int:
    """Bytes of a queue entry for ``payload`` bytes (as floem_queue_entry_size computes it)."""
    total = 8 + payload
    return 32 if total <= 32 else (total + 63) // 64 * 64
