"""The C scalar types the compiler knows, in one table: each one's size (LP64, as on x86-64
and the NIC platforms alike), what kind of number it is, how a report prints it, and
whether it is a single byte (never converted between byte orders)."""
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
    """One C scalar type."""

    name: str
    size: int
    kind: NumberKind

    @property
    def byte(self) -> bool:
        """A single byte: the same in either byte order."""
        return self.size == 1

    @property
    def printf(self) -> tuple[str, str]:
        """Its printf conversion, and the C type its value is cast to for it."""
        return _PRINTF[self.kind]


def _table(kind: NumberKind, sizes: dict[str, int]) -> dict[str, Scalar]:
    return {name: Scalar(name, size, kind) for name, size in sizes.items()}


#: Every scalar type, by its C spelling.
SCALARS: dict[str, Scalar] = {
    **_table(NumberKind.SIGNED, {
        "char": 1, "signed char": 1, "int8_t": 1, "short": 2, "int16_t": 2, "int": 4,
        "int32_t": 4, "long": 8, "long long": 8, "int64_t": 8, "ssize_t": 8, "intptr_t": 8}),
    **_table(NumberKind.UNSIGNED, {
        "bool": 1, "_Bool": 1, "unsigned char": 1, "uint8_t": 1, "unsigned short": 2,
        "uint16_t": 2, "unsigned": 4, "unsigned int": 4, "uint32_t": 4, "unsigned long": 8,
        "unsigned long long": 8, "uint64_t": 8, "size_t": 8, "uintptr_t": 8}),
    **_table(NumberKind.REAL, {"float": 4, "double": 8}),
}
