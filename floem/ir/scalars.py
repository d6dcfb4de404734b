"""The C scalar types the compiler knows, in one table: each one's size (LP64, as on x86-64
and the NIC platforms alike), what kind of number it is, its own printf conversion, how a
report prints it, and whether it is a single byte (never converted between byte orders)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class NumberKind(StrEnum):
    """What kind of number a scalar holds (how a report or a trace prints its values)."""

    SIGNED = "signed"
    UNSIGNED = "unsigned"
    REAL = "real"


#: How a number of each kind is printed: its printf conversion and the C type it is cast to.
_PRINTF = {NumberKind.REAL: ("%g", "double"),
           NumberKind.UNSIGNED: ("%llu", "unsigned long long"),
           NumberKind.SIGNED: ("%lld", "long long")}


@dataclass(frozen=True)
class Scalar:
    """One C scalar type: ``conversion`` prints a value of the type itself (the library's
    `Print`; a fixed-width type's is an ``<inttypes.h>`` macro, spliced into the format
    string literal: ``%" PRIu32 "``)."""

    name: str
    size: int
    kind: NumberKind
    conversion: str

    @property
    def byte(self) -> bool:
        """A single byte: the same in either byte order."""
        return self.size == 1

    @property
    def printf(self) -> tuple[str, str]:
        """Its printf conversion, and the C type its value is cast to for it."""
        return _PRINTF[self.kind]


def _table(kind: NumberKind, types: dict[str, tuple[int, str]]) -> dict[str, Scalar]:
    return {name: Scalar(name, size, kind, conversion)
            for name, (size, conversion) in types.items()}


def _fixed(signed: bool, bits: int) -> tuple[int, str]:
    """Size and conversion of ``intN_t`` / ``uintN_t``."""
    return bits // 8, f'%" PRI{"d" if signed else "u"}{bits} "'


#: Every scalar type, by its C spelling.
SCALARS: dict[str, Scalar] = {
    **_table(NumberKind.SIGNED, {
        "char": (1, "%c"), "signed char": (1, "%hhd"), "int8_t": _fixed(True, 8),
        "short": (2, "%hd"), "int16_t": _fixed(True, 16), "int": (4, "%d"),
        "int32_t": _fixed(True, 32), "long": (8, "%ld"), "long long": (8, "%lld"),
        "int64_t": _fixed(True, 64), "ssize_t": (8, "%zd"), "intptr_t": (8, '%" PRIdPTR "')}),
    **_table(NumberKind.UNSIGNED, {
        "bool": (1, "%d"), "_Bool": (1, "%d"), "unsigned char": (1, "%hhu"),
        "uint8_t": _fixed(False, 8), "unsigned short": (2, "%hu"),
        "uint16_t": _fixed(False, 16), "unsigned": (4, "%u"), "unsigned int": (4, "%u"),
        "uint32_t": _fixed(False, 32), "unsigned long": (8, "%lu"),
        "unsigned long long": (8, "%llu"), "uint64_t": _fixed(False, 64),
        "size_t": (8, "%zu"), "uintptr_t": (8, '%" PRIuPTR "')}),
    **_table(NumberKind.REAL, {"float": (4, "%g"), "double": (8, "%g")}),
}
