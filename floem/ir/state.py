"""What the IR knows of states, code and roles: copied from the user's program by
``build_graph`` so that no later stage reads the user's classes.

A `StateLayout` is a `State` class as C sees it (fields in layout order, packing);
a `PersistentState` is one shared instance with its C initializer; `CCode` is C text
with the app-file position it came from.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from floem.errors import Location
from floem.ir.cnames import c_global
from floem.ir.scalars import SCALARS, NumberKind, Scalar
from floem.lang.types import c_declaration


class Role(StrEnum):
    """What an IR node is: a user element, or a construct the compiler expands."""

    ELEMENT = "element"
    ARGS = "args"                       # a callable segment's arguments
    RETURN = "return"                   # a callable segment's return value
    CORE_ID = "core_id"
    ENQUEUE = "enqueue"
    DEQUEUE = "dequeue"
    SAVE = "save"                       # lower_queues: copy an entry into the packet's state
    RELEASE = "release"                 # lower_queues: give the entry back to the queue
    CACHE_GET_START = "cache_get_start"
    CACHE_GET_END = "cache_get_end"
    CACHE_SET_START = "cache_set_start"
    CACHE_SET_END = "cache_set_end"
    CACHE_LOOKUP = "cache_lookup"       # expand_caches: the nodes cache points become
    CACHE_FILL = "cache_fill"
    CACHE_UPDATE = "cache_update"

    @property
    def is_queue_end(self) -> bool:
        """True for the nodes whose C comes from the queue's lowering."""
        return self in (Role.ENQUEUE, Role.DEQUEUE, Role.SAVE, Role.RELEASE)


class Device(StrEnum):
    """Where a segment runs."""

    CPU = "CPU"
    NIC = "NIC"


class Home(StrEnum):
    """Whose memory holds a queue or a persistent state."""

    HOST = "host"
    NIC = "nic"


class SegmentKind(StrEnum):
    """A segment with its own threads, or one the user's C calls."""

    THREAD = "thread"
    CALLABLE = "callable"


@dataclass(frozen=True)
class CCode:
    """C text the user wrote (a body, ``main``, an include) and where it starts."""

    text: str
    loc: Location


class TypeKind(StrEnum):
    """What a C type is."""

    SCALAR = "scalar"       # one of `floem.ir.scalars`
    POINTER = "pointer"
    ARRAY = "array"         # of `CType.element`, `CType.array_len` of them
    STRUCT = "struct"       # ``struct X`` (a state's, or one a header declares)
    OPAQUE = "opaque"       # a name the compiler does not know (a user header's typedef)


@dataclass(frozen=True)
class CType:
    """A C type as a field or port declares it: its spelling (an array's, its element's)
    and, for an array, its length; what it is (`kind`) and what it is made of (`element`,
    `pointee`, `scalar`) follow from them."""

    c: str
    array_len: int | None = None

    def declare(self, name: str) -> str:
        """A C declaration of ``name`` with this type (arrays put ``[n]`` after the name)."""
        return c_declaration(self.c, self.array_len, name)

    @property
    def kind(self) -> TypeKind:
        """What the type is."""
        if self.array_len is not None:
            return TypeKind.ARRAY
        if self.c.rstrip().endswith("*"):
            return TypeKind.POINTER
        if self.c in SCALARS:
            return TypeKind.SCALAR
        return TypeKind.STRUCT if self.c.startswith("struct ") else TypeKind.OPAQUE

    @property
    def element(self) -> CType:
        """An array's element type; any other type itself."""
        return CType(self.c)

    @property
    def pointee(self) -> CType | None:
        """What a pointer points at (None for any other type)."""
        if self.kind != TypeKind.POINTER:
            return None
        return CType(self.c.rstrip()[:-1].rstrip())

    @property
    def pointer(self) -> bool:
        """True for a pointer, or an array of pointers."""
        return self.element.kind == TypeKind.POINTER

    @property
    def byte(self) -> bool:
        """A single-byte scalar, or an array of them: the same in either byte order."""
        scalar = self.element.scalar
        return scalar is not None and scalar.byte

    @property
    def scalar(self) -> Scalar | None:
        """The scalar type (`floem.ir.scalars`) it is; None for anything else."""
        return SCALARS.get(self.c) if self.kind == TypeKind.SCALAR else None

    @property
    def number(self) -> NumberKind | None:
        """What kind of number it holds, if it is a scalar."""
        return self.scalar.kind if self.scalar is not None else None

    def __str__(self) -> str:
        return self.c if self.array_len is None else f"{self.c}[{self.array_len}]"


@dataclass(frozen=True)
class FrameParts:
    """The companions of a `Frame` field: the fields holding its length and its buffer."""

    length: str
    buffer: str


@dataclass(frozen=True)
class FieldLayout:
    """A field of a state: its type, a C size expression when variable-size (and the most
    bytes it holds, when bounded), the layout of
    the state it holds when its type is a state, the layout of the state it points at when
    it is a typed packet (``Field(Pointer(S), size=...)`` or a `Frame`), and for a frame
    the names of its length and buffer fields."""

    name: str
    type: CType
    loc: Location
    size: str | None = None
    nested: StateLayout | None = None
    points_to: StateLayout | None = None
    frame: FrameParts | None = None
    max_size: int | None = None

    @property
    def typed_packet(self) -> bool:
        """True for a variable-size field pointing at a described packet: its bytes are
        analysed member by member."""
        return self.points_to is not None and self.size is not None


@dataclass(frozen=True)
class StateLayout:
    """A state struct: ``name`` is also its C type name (a typedef of ``struct name``)."""

    name: str
    fields: tuple[FieldLayout, ...]
    loc: Location
    packed: bool = True
    declare: bool = True
    report: bool = False
    union: bool = False

    @property
    def keyword(self) -> str:
        """``struct`` or ``union``."""
        return "union" if self.union else "struct"

    def field(self, name: str) -> FieldLayout | None:
        """The field called ``name``, or None."""
        return next((f for f in self.fields if f.name == name), None)

    def extended(self, extra: list[FieldLayout]) -> StateLayout:
        """The same struct with ``extra`` fields appended."""
        return replace(self, fields=self.fields + tuple(extra))


@dataclass(frozen=True)
class PersistentState:
    """A shared state instance: its name (the C variable is ``<name>_state``), layout and
    C initializer."""

    name: str
    layout: StateLayout
    initializer: str
    loc: Location

    @property
    def pointer(self) -> str:
        """The C expression of the instance's address."""
        return c_global("state", self.name, "state")


@dataclass(frozen=True)
class MemoryRegionIR:
    """Host memory the user asked for, visible as ``void *name``."""

    name: str
    size: int | str


def layouts_in_order(roots: list[StateLayout]) -> list[StateLayout]:
    """``roots`` and the states their fields hold, each after the states it holds, once."""
    ordered: list[StateLayout] = []
    seen: set[str] = set()
    stack: list[tuple[StateLayout, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        layout, expanded = stack.pop()
        if layout.name in seen:
            continue
        if expanded:
            seen.add(layout.name)
            ordered.append(layout)
            continue
        stack.append((layout, True))
        stack.extend((held, False) for f in reversed(layout.fields)
                     for held in (f.nested, f.points_to) if held is not None)
    return ordered
