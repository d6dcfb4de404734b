"""Sizes and offsets of C types as the generated code lays them out (LP64: x86-64 and the
NIC platforms alike), for reports and for the members of typed packets."""
from __future__ import annotations

from floem.csrc.model import Member, PacketView
from floem.ir.state import FieldLayout, StateLayout, TypeKind


def field_size(f: FieldLayout) -> int | None:
    """Bytes of field ``f`` (``None`` when unknown, e.g. a struct from a user header)."""
    element = f.type.element
    if element.kind == TypeKind.POINTER:
        one: int | None = 8
    elif f.nested is not None:
        one = state_size(f.nested)
    else:
        one = element.scalar.size if element.scalar is not None else None
    if one is None:
        return None
    return one * (f.type.array_len or 1)


def field_alignment(f: FieldLayout) -> int:
    """The C alignment of field ``f``'s type (its size known): a scalar's (or an array
    element's) size up to 8, a nested state's own alignment."""
    if f.nested is not None and not f.type.pointer:
        return state_alignment(f.nested)
    size = field_size(f)
    assert size is not None
    return min(8, size // (f.type.array_len or 1)) or 1


def state_alignment(state: StateLayout) -> int:
    """The C alignment of a state struct (its fields' sizes known): 1 when packed, else its
    most aligned field's."""
    if state.packed:
        return 1
    return max((field_alignment(f) for f in state.fields), default=1)


def state_size(state: StateLayout) -> int | None:
    """Bytes of a state struct: packed, or with natural alignment when ``packed = False``."""
    offsets = field_offsets(state)
    return None if offsets is None else offsets[1]


def field_offsets(state: StateLayout) -> tuple[dict[str, int], int] | None:
    """Where each field of ``state`` starts, and the struct's size (a union's fields all
    start at 0); None when a field's size is unknown."""
    starts: dict[str, int] = {}
    offset, end, widest = 0, 0, 1
    for f in state.fields:
        size = field_size(f)
        if size is None:
            return None
        if not state.packed:
            align = field_alignment(f)
            widest = max(widest, align)
            offset = (offset + align - 1) // align * align
        starts[f.name] = 0 if state.union else offset
        end = max(end, starts[f.name] + size)
        if not state.union:
            offset += size
    if not state.packed:
        end = (end + widest - 1) // widest * widest
    return starts, end


def packet_view(state: StateLayout) -> PacketView | None:
    """The members of ``state`` as a typed packet lays them over its bytes (nested members
    by path); None when a member's size is unknown."""
    top = field_offsets(state)
    if top is None:
        return None
    members: dict[tuple[str, ...], Member] = {}
    stack: list[tuple[tuple[str, ...], StateLayout, int]] = [((), state, 0)]
    while stack:
        path, layout, base = stack.pop()
        found = field_offsets(layout)
        if found is None:
            return None
        for f in layout.fields:
            size = field_size(f)
            assert size is not None          # field_offsets knew every size
            start = base + found[0][f.name]
            count = f.type.array_len
            members[path + (f.name,)] = Member(start, size, size // count if count else None)
            if f.nested is not None and not count:
                stack.append((path + (f.name,), f.nested, start))
    return PacketView(members, top[1])


def entry_size(payload: int) -> int:
    """Bytes of a queue entry for ``payload`` bytes (as floem_queue_entry_size computes it)."""
    total = 8 + payload
    return 32 if total <= 32 else (total + 63) // 64 * 64
