"""Segments (threads on a device), callable segments, flows and run_order."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from floem.errors import Location
from floem.lang.element import Element, Input, Node, Output, Port
from floem.lang.location import caller_location
from floem.lang.registry import Scope, ScopeKind, current_registry
from floem.lang.state import PerPacket, State


class target:
    """Devices a segment can be placed on: ``AUTO`` lets the compiler cut the segment
    between the NIC and the CPU (``floem place`` searches the cuts; ``floem.cut`` states one;
    without one the segment runs on the CPU)."""

    CPU = "CPU"
    NIC = "NIC"
    AUTO = "AUTO"


class CoreId(Element):
    """Source feeding the index of the segment thread running it (``self.core_id``)."""

    def configure(self) -> None:
        self.out = Output("int")

    def impl(self) -> None:
        self.run_c("output { out(floem_core_id); }")


class CallArgs(Element):
    """Source of a callable segment: the C function's arguments."""

    def configure(self, types: list[Any]) -> None:
        self.out = Output(*types)


class Return(Element):
    """Leaf of a callable segment: the C function's return value."""

    def configure(self, types: list[Any]) -> None:
        self.inp = Input(*types)


class Segment(Scope):
    """Elements run to completion per packet by ``len(cores)`` threads on one device.

    Subclass and wire elements in `impl`; instantiate with
    ``MySeg("name", device=target.CPU, cores=[0, 1], process="p")``. ``parallel=False``
    says its elements cannot run on several threads at once (state kept without locks, an
    order of packets to keep): it then has one thread, whatever ``--threads`` or a search
    of thread counts asks.
    """

    scope_kind = ScopeKind.SEGMENT
    class_loc: ClassVar[Location]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.class_loc = caller_location()

    def __init__(self, name: str | None = None, device: str = target.CPU,
                 cores: list[int] | None = None, process: str | None = None,
                 parallel: bool = True, **kwargs: Any) -> None:
        self.program = current_registry()
        self.loc = caller_location()
        self.name = self.program.claim_name(name, type(self).__name__, self.loc)
        if device not in (target.CPU, target.NIC, target.AUTO):
            raise self.loc.error(f"device must be target.CPU, target.NIC or target.AUTO, "
                                 f"not {device!r}")
        if device == target.AUTO and isinstance(self, CallableSegment):
            raise self.loc.error(f"callable segment '{self.name}' cannot be target.AUTO: the "
                                 "C function it makes runs on the host")
        self.device = device
        if isinstance(cores, (int, float)):
            raise self.loc.error(f"cores is a list of core ids, one per thread (cores=[0, 1] "
                                 f"for two threads), not the number {cores!r}")
        listed = isinstance(cores, (list, tuple, range))
        self.cores = [0] if cores is None else list(cores) if listed else []
        self.pinned = cores is not None
        if not self.cores or not all(isinstance(c, int) and c >= 0 for c in self.cores):
            raise self.loc.error(f"cores must be a non-empty list of core ids, not {cores!r}")
        twice = sorted({c for c in self.cores if self.cores.count(c) > 1})
        if twice:
            raise self.loc.error(f"cores lists core {twice[0]} twice: each thread of a segment "
                                 f"runs on a core of its own")
        if not isinstance(parallel, bool):
            raise self.loc.error(f"parallel is True or False, not {parallel!r}")
        if not parallel and len(self.cores) > 1:
            raise self.loc.error(f"segment '{self.name}' is parallel=False (one thread at a "
                                 f"time) but cores lists {len(self.cores)} threads")
        self.parallel = parallel
        self.process = process
        self.flow = self.program.innermost(ScopeKind.FLOW)
        self._core_id: CoreId | None = None
        self.program.register(self)
        with self.program.scope(self):
            self.setup(**kwargs)
            self.impl()

    def setup(self, **kwargs: Any) -> None:
        """Hook run inside the segment before `impl` (keyword arguments of the constructor)."""
        if kwargs:
            raise self.loc.error(f"unknown segment options: {', '.join(kwargs)}")

    def impl(self) -> None:
        """Wire the segment's elements."""

    @property
    def core_id(self) -> Port:
        """An output port giving the index of the thread running the segment."""
        if self._core_id is None:
            with self.program.scope(self):
                self._core_id = CoreId(name=f"{self.name}_core_id")
        return self._core_id.out


class CallableSegment(Segment):
    """A segment exposed as a C function: ``self.inp`` are its arguments, ``self.out`` its result.

    ``default_return`` (C expression) is returned when the path to ``out`` does not fire.
    """

    def setup(self, default_return: str | None = None, **kwargs: Any) -> None:
        super().setup(**kwargs)
        self.default_return = default_return
        self.args: CallArgs | None = None
        self.ret: Return | None = None
        self._declaring = True
        self.configure()
        self._declaring = False
        if self.args is None:
            self.args = CallArgs(name=f"{self.name}_args", configure=[[]])

    def configure(self) -> None:
        """Declare ``self.inp = Input(...)`` (arguments) and ``self.out = Output(T)`` (result)."""

    def __setattr__(self, key: str, value: Any) -> None:
        if isinstance(value, Port) and value.owner is None and getattr(self, "_declaring", False):
            if isinstance(value, Input):
                if self.args is not None:
                    raise self.loc.error("a callable segment has one input port (its arguments)")
                self.args = CallArgs(name=f"{self.name}_args", configure=[value.types])
                value = self.args.out
            else:
                if self.ret is not None:
                    raise self.loc.error("a callable segment has one output port (its result)")
                if len(value.types) > 1:
                    raise self.loc.error("a callable segment returns at most one value")
                self.ret = Return(name=f"{self.name}_return", configure=[value.types])
                value = self.ret.inp
        object.__setattr__(self, key, value)


class Flow(Scope):
    """Groups segments and elements that share one per-packet state (``state = PerPacket(S)``)."""

    scope_kind = ScopeKind.FLOW
    class_loc: ClassVar[Location]

    state: PerPacket | None = None

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.class_loc = caller_location()

    def __init__(self, name: str | None = None) -> None:
        self.program = current_registry()
        self.loc = caller_location()
        self.name = self.program.claim_name(name, type(self).__name__, self.loc)
        self.program.register(self)
        with self.program.scope(self):
            self.impl()

    @property
    def state_class(self) -> type[State] | None:
        """The per-packet `State` class, if the flow declares one."""
        return state.state_class if isinstance(state := type(self).state, PerPacket) else None

    def impl(self) -> None:
        """Create the flow's segments and elements."""


@dataclass
class Order:
    """``run_order(before, after)``: ``after`` runs once one of ``before`` has run."""

    before: list[Node]
    after: Node
    loc: Location


def run_order(before: Any, after: Any) -> None:
    """Run ``after`` after ``before`` (or after whichever of a list ran) in the same segment."""
    loc = caller_location()
    befores = list(before) if isinstance(before, (list, tuple)) else [before]
    for node in befores + [after]:
        if not isinstance(node, Element):
            raise loc.error(f"run_order takes elements, not {node!r}")
    current_registry().register(Order(befores, after, loc))
