"""State: C structs declared in Python, shared (persistent) or per packet."""
from __future__ import annotations

import builtins
import itertools
from typing import Any, ClassVar

from floem.errors import FloemError, Location
from floem.lang.location import caller_location
from floem.lang.registry import current_registry
from floem.lang.types import Pointer, SizeT, Type, TypeLike, Void, as_type

_order = itertools.count()


class Field:
    """A field of a `State`; ``size`` (a C expression) makes it variable-size, and
    ``max_size`` (bytes) bounds it: a queue entry carrying it keeps room for that many bytes
    (without a bound, the unbounded variable-size fields of a channel share 256 bytes, or
    what ``entry_size=`` leaves).

    A variable-size field whose type is a pointer to a `State` (``Field(Pointer(Hdr),
    size="state->len")``) is a *typed packet*: the compiler follows ``state->f->a.b`` to the
    bytes of member ``a.b`` and sends across a queue only the bytes read after it.
    """

    def __init__(self, type: TypeLike, size: str | None = None,
                 max_size: int | None = None) -> None:
        self.type: Type = as_type(type)
        self.state_class = self.type.state
        self.points_to: builtins.type[State] | None = self.type.points_to
        self.size = size
        self.loc = caller_location()
        if max_size is not None and size is None:
            raise self.loc.error(f"Field(max_size={max_size!r}): only a variable-size field "
                                 "(size=...) has a largest size")
        if max_size is not None and (builtins.type(max_size) is not int or max_size < 0):
            raise self.loc.error(f"Field(max_size={max_size!r}): the largest size is a number "
                                 "of bytes, an int of 0 or more")
        self.max_size = max_size
        self.name = ""
        self.order: float = next(_order)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Field({self.type}, {self.name})"


class Frame(Field):
    """A network frame held in the per-packet state, typed by the `State` that describes
    its headers (e.g. `floem.library.packets.IPv4Frame`).

    ``Frame(IPv4Frame)`` as field ``pkt`` declares three C members: ``pkt`` points at the
    frame's first byte (``state->pkt->ip.ttl`` reads one header field), ``pkt_len`` is its
    length in bytes (``size_t``) and ``pkt_buf`` the network buffer holding it, which only
    the library's frame elements (`StoreFrame`, `LoadFrame`, `DropFrame`) touch. A frame is
    a typed packet of ``pkt_len`` bytes: across a queue between CPU and NIC only the bytes
    read after it cross, and a frame received on the NIC whose payload the host never reads
    keeps its payload on the NIC (docs/slicing.md).
    """

    def __init__(self, layout: type[State]) -> None:
        if not (isinstance(layout, type) and issubclass(layout, State)):
            raise caller_location().error(f"Frame({layout!r}): not a State subclass")
        super().__init__(Pointer(layout))
        self.length = Field(SizeT)
        self.buffer = Field(Pointer(Void))
        for k, companion in enumerate((self.length, self.buffer), 1):
            companion.loc = self.loc
            companion.order = self.order + k / 4       # right after the frame, in any layout

    def __set_name__(self, owner: type, name: str) -> None:
        super().__set_name__(owner, name)
        self.size = f"state->{name}_len"
        for suffix, companion in (("_len", self.length), ("_buf", self.buffer)):
            if name + suffix in vars(owner):
                raise self.loc.error(f"{owner.__name__}: field {name + suffix} is taken by "
                                     f"frame {name}'s {suffix[1:]}")
            setattr(owner, name + suffix, companion)
            companion.__set_name__(owner, name + suffix)

    @property
    def companions(self) -> tuple[Field, Field]:
        """The length and buffer fields this frame declares."""
        return self.length, self.buffer


class State:
    """A C struct. Subclass with `Field` attributes and an optional ``init``.

    Class options: ``layout = [...]`` (field order, names or fields; a `Frame`'s length
    and buffer follow it), ``packed`` (default True), ``union`` (default False; True: a C
    union, its fields overlapping, for views of packet bytes such as a transport header
    that is UDP or TCP), ``declare`` (default True; False when the struct
    is defined in an included header), ``report`` (default False; True: with
    ``--report``, each process whose elements use an instance prints its numeric
    fields when it ends). An instance is a persistent state: ``Tracker()`` or
    ``Tracker(init=[5, 0])`` overriding ``init``'s arguments.
    """

    layout: ClassVar[list[Any] | None] = None
    packed: ClassVar[bool] = True
    union: ClassVar[bool] = False
    declare: ClassVar[bool] = True
    report: ClassVar[bool] = False
    class_loc: ClassVar[Location]
    values: dict[str, Any]                  # what init assigned, by field

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.class_loc = caller_location()

    @classmethod
    def c_type_name(cls) -> str:
        """The C type name (a typedef of ``struct <name>``)."""
        return cls.__name__

    @classmethod
    def fields(cls) -> list[Field]:
        """The fields in layout order."""
        found: dict[str, Field] = {}
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if isinstance(value, Field):
                    found[name] = value
        if cls.layout is None:
            return sorted(found.values(), key=lambda f: f.order)
        ordered = []
        for item in cls.layout:
            name = item.name if isinstance(item, Field) else item
            if name not in found:
                raise FloemError(f"{cls.__name__}.layout names unknown field {name!r}",
                                 cls.class_loc.file, cls.class_loc.line)
            ordered.append(found[name])
            if isinstance(frame := found[name], Frame):
                ordered.extend(frame.companions)
        missing = set(found) - {f.name for f in ordered}
        if missing:
            raise FloemError(f"{cls.__name__}.layout leaves out {sorted(missing)}",
                             cls.class_loc.file, cls.class_loc.line)
        return ordered

    def __init__(self, name: str | None = None, init: Any = None, _loc: Location | None = None) -> None:
        object.__setattr__(self, "values", {})
        self.loc = _loc or caller_location()
        self.program = current_registry()
        self.name = self.program.claim_name(name, "_" + type(self).__name__.lower(), self.loc)
        args, kwargs = ([], init) if isinstance(init, dict) else (list(init or []), {})
        try:
            self.init(*args, **kwargs)
        except TypeError as e:
            raise self.loc.error(f"{type(self).__name__}.init: {e}") from None
        for key, value in self.values.items():
            try:
                c_initializer(value)
            except TypeError as e:
                raise self.loc.error(f"{type(self).__name__}.init sets {key}: {e}") from None
        self.program.register(self)

    def init(self, *args: Any, **kwargs: Any) -> None:
        """Assign initial values: ``self.total = total``. Default: all zero."""
        if args or kwargs:
            raise TypeError("this state has no init() taking arguments")

    def __setattr__(self, key: str, value: Any) -> None:
        if any(f.name == key for f in type(self).fields()):
            self.values[key] = value
        else:
            object.__setattr__(self, key, value)


class Persistent:
    """Declares, as an element class attribute, a shared state the element uses."""

    def __init__(self, state_class: type[State]) -> None:
        if not (isinstance(state_class, type) and issubclass(state_class, State)):
            raise caller_location().error(f"Persistent({state_class!r}): not a State subclass")
        self.state_class = state_class
        self.order = next(_order)


class PerPacket:
    """Declares, as a `Flow` class attribute, the per-packet state of the flow."""

    def __init__(self, state_class: type[State]) -> None:
        if not (isinstance(state_class, type) and issubclass(state_class, State)):
            raise caller_location().error(f"PerPacket({state_class!r}): not a State subclass")
        self.state_class = state_class


class MemoryRegion:
    """``size`` bytes of host memory visible as ``void *name`` to elements and C programs."""

    def __init__(self, name: str, size: int | str) -> None:
        self.loc = caller_location()
        self.program = current_registry()
        self.name = self.program.claim_name(name, "region", self.loc)
        self.size = size
        self.program.register(self)


# -- C initializers of State instances (build_graph copies them into the IR) --

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
