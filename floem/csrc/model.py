"""What the C-body front end takes in and gives back.

`Body` is one element's C code with its ports and states, as the language
front end built it; `BodyInfo` is what `floem.csrc.analyze` found in it, the
input of the checks, liveness and code generation passes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from floem.errors import FloemError


@dataclass
class Port:
    """An element port as the C body sees it."""

    name: str
    types: list[str]            # C types, e.g. ["int"], ["uint8_t*", "size_t"]; [] for no value


@dataclass(frozen=True)
class Member:
    """A member of a typed packet: its first byte and size, and for an array the size of
    one element."""

    offset: int
    size: int
    element_size: int | None = None


@dataclass(frozen=True)
class PacketView:
    """What a typed packet field points at: its members by path (``("ip", "ttl")``, nested
    members included) and the size of the whole described struct."""

    members: dict[tuple[str, ...], Member]
    size: int


#: A byte range of a typed packet: first byte, and the byte after the last.
Range = tuple[int, int]


def merge_ranges(ranges: list[Range] | set[Range], gap: int = 0) -> list[Range]:
    """``ranges`` sorted, with those that overlap or are at most ``gap`` bytes apart joined."""
    merged: list[Range] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + gap:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


@dataclass
class ByteUse:
    """How a body touches the bytes a typed packet field points at: the ranges it reads and
    writes, or, when it cannot bound an access, where and why (then every byte may be read
    and written)."""

    reads: set[Range] = field(default_factory=set)
    writes: set[Range] = field(default_factory=set)
    unbounded: tuple[int, str] | None = None     # (body line, what the access is)


@dataclass
class Body:
    """One element's C body and everything needed to read it."""

    element: str                # element instance name, a C identifier
    code: str                   # the body exactly as the user wrote it ("" allowed)
    app_file: str               # absolute path of the app file
    app_line: int               # app-file line of line 1 of `code`
    inputs: list[Port]
    outputs: list[Port]
    state_fields: dict[str, str] | None   # per-packet field -> C type; None: no per-packet state
    persistent: dict[str, str]  # name usable in the body -> C type name of the state struct
    packets: dict[str, PacketView | None] = field(default_factory=dict)
    # typed packet fields -> their members (None: a member's size is unknown, so whole)
    persistent_fields: dict[str, dict[str, str]] = field(default_factory=dict)
    # name usable in the body -> its state's fields -> their C types (not listed: unknown)

    def error(self, message: str, body_line: int | None = None) -> FloemError:
        """A `FloemError` at `body_line` of this body (or at the body itself)."""
        line = self.app_line + body_line - 1 if body_line else self.app_line
        return FloemError(message, file=self.app_file, line=line, element=self.element,
                          body_line=body_line)


@dataclass
class FieldUse:
    """How a body touches the per-packet state fields."""

    uses: set[str] = field(default_factory=set)    # fields read (any rvalue use)
    kills: set[str] = field(default_factory=set)   # assigned on every path (csrc.kills)
    writes: set[str] = field(default_factory=set)  # modified in any way
    bytes: dict[str, ByteUse] = field(default_factory=dict)  # typed packet field -> its bytes


class BodyForm(StrEnum):
    """The output form of a body: ``output { ... }``, ``output switch { ... }``, or
    ``output multiple;`` (its ports called any number of times)."""

    BLOCK = "block"
    SWITCH = "switch"
    MULTIPLE = "multiple"


@dataclass
class BodyInfo:
    """The analysis of one body."""

    element: str
    reads: dict[str, int]       # input port -> body line where it is read
    form: BodyForm | None       # None: no output form
    calls: dict[str, list[int]]  # output port -> body lines of its calls
    always_fires: set[str]      # output ports that fire on every execution
    switch_ports: list[str]     # "switch": port of each case in order (else case last)
    switch_has_else: bool
    fields: FieldUse
    persistent_used: set[str]   # persistent names referenced
    body: Body
    consumed: set[str] = field(default_factory=set)  # input ports read by a bare `inp();`
    persistent_written: set[str] = field(default_factory=set)  # persistent names it may write


class BodyError(Exception):
    """A mistake found inside one body, before the element is known."""

    def __init__(self, message: str, body_line: int | None) -> None:
        self.message = message
        self.body_line = body_line
        super().__init__(message)
