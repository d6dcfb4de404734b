"""A field's or port's C type in the IR (floem/ir/state.py's CType) says what it is and
what it is made of, from its spelling: the sizes, the byte-order conversions of the NIC's
wire order and the cut's checks for pointers read it."""
from __future__ import annotations

import pytest

from floem.ir import CType, TypeKind


@pytest.mark.parametrize("spelling, array_len, kind", [
    ("uint32_t", None, TypeKind.SCALAR), ("unsigned long long", None, TypeKind.SCALAR),
    ("uint8_t *", None, TypeKind.POINTER), ("struct kvs_packet *", None, TypeKind.POINTER),
    ("void *", None, TypeKind.POINTER), ("uint16_t", 4, TypeKind.ARRAY),
    ("struct kvs_packet", None, TypeKind.STRUCT), ("kvs_store_t", None, TypeKind.OPAQUE),
])
def test_a_type_knows_what_it_is(spelling: str, array_len: int | None, kind: TypeKind) -> None:
    assert CType(spelling, array_len).kind == kind


def test_pointers_arrays_and_bytes_are_made_of_their_parts() -> None:
    assert CType("struct kvs_packet *").pointee == CType("struct kvs_packet")
    assert CType("uint8_t **").pointee == CType("uint8_t *")
    assert CType("uint32_t").pointee is None
    words = CType("uint16_t", 4)
    assert words.element == CType("uint16_t") and words.scalar is None
    assert not words.pointer and not words.byte
    assert CType("uint8_t", 6).byte and CType("char").byte and not CType("uint8_t *").byte
    assert CType("void *", 2).pointer                     # an array of pointers
    assert CType("int64_t").scalar is not None and CType("int64_t").scalar.size == 8
    assert CType("uint8_t *").declare("p") == "uint8_t *p"
    assert CType("uint16_t", 4).declare("w") == "uint16_t w[4]"
