"""Elements, their ports, composites, and the ``>>`` connection."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from floem.errors import Location
from floem.lang.location import caller_location, string_location
from floem.lang.registry import Registry, Scope, ScopeKind, current_registry
from floem.lang.state import Persistent, State
from floem.lang.types import Type, TypeLike, as_type


class Port:
    """A named, typed port of an element or composite; made by `Input` or `Output`."""

    direction = ""

    def __init__(self, *types: TypeLike) -> None:
        self.types: list[Type] = [as_type(t) for t in types]
        for t in self.types:
            if t.array_len is not None:
                raise caller_location().error(f"a port cannot carry an array ({t}); "
                                              "pass a pointer or put the array in a State")
        self.name = ""
        self.owner: Node | None = None

    @property
    def c_types(self) -> list[str]:
        """The C spelling of each value the port carries."""
        return [t.c for t in self.types]

    def __rshift__(self, other: Any) -> Any:
        return connect(self, other, caller_location())

    def __repr__(self) -> str:
        owner = self.owner.name if self.owner else "?"
        return f"{owner}.{self.name}"


class Input(Port):
    """An input port carrying zero or more values (a port with none accepts any output)."""

    direction = "in"


class Output(Port):
    """An output port carrying zero or more values."""

    direction = "out"


@dataclass
class Connection:
    """``src >> dst`` as written: either side may be a composite's port."""

    src: Port
    dst: Port
    loc: Location
    segment: str | None = None


class Node:
    """Something with ports that can be connected: an element or a composite."""

    name: str
    loc: Location
    program: Registry
    class_loc: ClassVar[Location]           # where the subclass is defined

    def __init__(self) -> None:
        object.__setattr__(self, "inputs", {})
        object.__setattr__(self, "outputs", {})

    def __setattr__(self, key: str, value: Any) -> None:
        if isinstance(value, Port) and value.owner is None:
            value.name = key
            value.owner = self
            (self.inputs if value.direction == "in" else self.outputs)[key] = value
        object.__setattr__(self, key, value)

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_") or "inputs" not in self.__dict__:
            raise AttributeError(key)
        ports = ", ".join(list(self.inputs) + list(self.outputs)) or "none"
        raise caller_location().error(f"{type(self).__name__} '{self.__dict__.get('name', '?')}' "
                                      f"has no port '{key}' (ports: {ports})")

    def __rshift__(self, other: Any) -> Any:
        return connect(self, other, caller_location())

    def only_port(self, direction: str, loc: Location) -> Port:
        """The single input (``in``) or output (``out``) port, or a clear error."""
        ports = self.inputs if direction == "in" else self.outputs
        if len(ports) == 1:
            return next(iter(ports.values()))
        kind = "input" if direction == "in" else "output"
        names = ", ".join(ports) or "none"
        raise loc.error(f"'{self.name}' has {len(ports)} {kind} ports ({names}); "
                        f"name the port, e.g. {self.name}.{next(iter(ports), 'port')}")

    def _configure(self, configure: Any, kwargs: dict[str, Any]) -> None:
        args = list(configure) if isinstance(configure, (list, tuple)) else \
            ([] if configure is None else [configure])
        try:
            _signature(type(self).configure).bind(self, *args, **kwargs)
        except TypeError as e:
            raise self.loc.error(f"{type(self).__name__}.configure: {e}") from None
        self.configure(*args, **kwargs)

    if TYPE_CHECKING:                       # a subclass's configure takes its own parameters
        configure: Callable[..., None]
    else:
        def configure(self) -> None:
            """Declare ports (``self.inp = Input(Int)``); may take parameters."""


@functools.cache
def _signature(function: Callable[..., Any]) -> inspect.Signature:
    """The signature of a class's ``configure``, found once per class."""
    return inspect.signature(function)


_PERSISTENT: dict[type, list[tuple[str, Persistent]]] = {}


def _persistent_attributes(cls: type) -> list[tuple[str, Persistent]]:
    """The `Persistent` attributes an element class declares, in declaration order (found
    once per class)."""
    if cls not in _PERSISTENT:
        declared = [(k, v) for k, v in inspect.getmembers(cls) if isinstance(v, Persistent)]
        _PERSISTENT[cls] = sorted(declared, key=lambda kv: kv[1].order)
    return _PERSISTENT[cls]


class Element(Node):
    """A dataflow element: ports declared in `configure`, a C body given in `impl`.

    Library elements that need C support code list it in class attributes:
    ``c_headers`` (absolute paths of headers included before element code, so
    bodies may use their types and functions) and ``c_sources`` (absolute
    paths of C files compiled and linked into every process using the class); an
    element may set its own in ``configure`` (e.g. `FromNet` with a framer's files).
    ``uses_network`` marks packet I/O elements: the build then compiles the
    network backend chosen with ``--net`` (runtime/include/floem/net.h).
    ``host_only`` marks elements whose C needs the host (a host library, a legacy
    program's functions): ``floem place`` never cuts them onto the NIC.
    """

    c_headers: tuple[str, ...] = ()
    c_sources: tuple[str, ...] = ()
    uses_network: bool = False
    host_only: bool = False

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.class_loc = caller_location()

    def __init__(self, name: str | None = None, configure: Any = None,
                 states: list[Any] | None = None, **kwargs: Any) -> None:
        super().__init__()
        self.program = current_registry()
        self.loc = caller_location()
        self.name = self.program.claim_name(name, type(self).__name__, self.loc)
        self.persistent: dict[str, Any] = {}
        self.code: CBody | None = None
        self.nic_code: CBody | None = None
        self._in_nic_impl = False
        self.segment: Scope | None = self.program.innermost(ScopeKind.SEGMENT)
        self.flow: Scope | None = self.program.innermost(ScopeKind.FLOW)
        self._configure(configure, kwargs)
        self._bind_states(states)
        self.program.register(self)
        self.impl()
        if type(self).impl_nic is not Element.impl_nic:
            self._in_nic_impl = True
            self.impl_nic()
            self._in_nic_impl = False

    def __setattr__(self, key: str, value: Any) -> None:
        if isinstance(value, State) and "persistent" in self.__dict__:
            self.persistent[key] = value
        super().__setattr__(key, value)

    def _bind_states(self, given: list[Any] | None) -> None:
        declared = _persistent_attributes(type(self))
        if given is None:
            instances = [p.state_class(_loc=self.loc) for _, p in declared]
        else:
            instances = list(given)
            for s in instances:
                if not isinstance(s, State):
                    raise self.loc.error(f"states=[...] takes State instances, not {s!r}")
        if type(self).states is not Element.states:
            try:
                self.states(*instances)
            except TypeError as e:
                raise self.loc.error(f"{type(self).__name__}.states: {e}") from None
        elif instances:
            if len(instances) != len(declared):
                raise self.loc.error(f"{type(self).__name__} declares {len(declared)} Persistent "
                                     f"states but got {len(instances)}")
            for (attr, _), inst in zip(declared, instances):
                setattr(self, attr, inst)

    def states(self, *states: Any) -> None:
        """Bind persistent states given as ``states=[...]`` to attributes."""

    def impl(self) -> None:
        """Give the C body with `run_c`."""

    def impl_nic(self) -> None:
        """Optional NIC variant of `impl`; by default the NIC runs `impl`'s body."""

    def run_c(self, code: str) -> None:
        """The element's C body (plain C plus the Floem forms)."""
        body = CBody(code, string_location(caller_location(), code))
        if self._in_nic_impl:
            self.nic_code = body
        else:
            self.code = body


@dataclass
class CBody:
    """C body text and the app-file line of its first line."""

    text: str
    loc: Location


class Composite(Node, Scope):
    """Elements grouped behind the composite's own ports (declared in `configure`)."""

    scope_kind = ScopeKind.COMPOSITE

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.class_loc = caller_location()

    def __init__(self, name: str | None = None, configure: Any = None, **kwargs: Any) -> None:
        super().__init__()
        self.program = current_registry()
        self.loc = caller_location()
        self.name = self.program.claim_name(name, type(self).__name__, self.loc)
        self._configure(configure, kwargs)
        with self.program.scope(self):
            self.impl()

    def impl(self) -> None:
        """Wire the inner elements: ``self.inp >> A() >> B() >> self.out``."""


def connect(src: Any, dst: Any, loc: Location) -> Any:
    """Record ``src >> dst`` after checking the ports exist (their types are checked with
    every other connection's by the ``check_types`` pass, so all mismatches are reported
    together).

    Returns what the chain continues from: the destination element, or the
    destination object itself when it is not an element.
    """
    if not isinstance(dst, (Node, Port)) and hasattr(dst, "connect_from"):
        return dst.connect_from(src, loc)
    out = _source_port(src, loc)
    inp, result = _dest_port(dst, loc)
    program = current_registry()
    scope = program.innermost(ScopeKind.SEGMENT)
    program.register(Connection(out, inp, loc, scope.name if scope else None))
    return result


def _source_port(src: Any, loc: Location) -> Port:
    if isinstance(src, Node):
        return src.only_port("out", loc)
    if isinstance(src, Port):
        if src.direction == "out" or isinstance(src.owner, Composite):
            return src
        raise loc.error(f"cannot connect from input port {src!r}")
    if hasattr(src, "source_port"):
        return src.source_port(loc)
    raise loc.error(f"cannot connect from {src!r}: not an element or port")


def _dest_port(dst: Any, loc: Location) -> tuple[Port, Any]:
    if isinstance(dst, Node):
        return dst.only_port("in", loc), dst
    if isinstance(dst, Port):
        if dst.direction == "in" or isinstance(dst.owner, Composite):
            return dst, dst.owner
        raise loc.error(f"cannot connect into output port {dst!r}")
    raise loc.error(f"cannot connect to {dst!r}: not an element or port")

