"""What the analyses found: frozen records kept beside the structural IR, one per type.

The structural IR (`floem.ir.graph`) is the program as a graph: elements, edges, segments,
queues, caches. The passes that transform it (``split_auto``, ``expand_caches``,
``lower_queues``...) rewrite it; the analyses after it (``liveness``, ``placement``,
``place_memory``, ``slice_packets``, ``plan_entries``, ``plan_code``) leave it as it is and
each adds one result to ``ProgramIR.results``, which the passes after them and code
generation read (``ir.results.get(Liveness)``, or ``ir.liveness``). A result is added once
and never changed; asking for one that no pass has made yet is the compiler's bug, and says
which.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar

from floem.ir.entries import EntryLayout, PacketBytes
from floem.ir.plan import ElementPlan, ProcessPlan, QueueLayout
from floem.ir.state import Device, Home

Result = TypeVar("Result")


def frozen_map(items: Mapping[str, Result]) -> Mapping[str, Result]:
    """A read-only copy of ``items``, for a result's fields."""
    return MappingProxyType(dict(items))


class Results:
    """The analyses' results made so far, by type."""

    def __init__(self) -> None:
        self._made: dict[type, object] = {}

    def add(self, result: object) -> None:
        """Keep ``result``, a frozen dataclass no result of its type came before."""
        kind = type(result)
        params = getattr(kind, "__dataclass_params__", None)
        if not dataclasses.is_dataclass(result) or params is None or not params.frozen:
            raise TypeError(f"{kind.__name__}: an analysis result is a frozen dataclass")
        if kind in self._made:
            raise RuntimeError(f"{kind.__name__} was made twice")
        self._made[kind] = result

    def get(self, kind: type[Result]) -> Result:
        """The result of type ``kind``."""
        made = self._made.get(kind)
        if made is None:
            raise RuntimeError(f"{kind.__name__} is asked for before the pass making it ran")
        assert isinstance(made, kind)
        return made

    def __contains__(self, kind: type) -> bool:
        return kind in self._made

    def copy(self) -> Results:
        """The same results, in a store of their own (a pass adds to its copy)."""
        made = Results()
        made._made = dict(self._made)
        return made

    def __iter__(self) -> Iterator[object]:
        """The results made so far, in the order they were made."""
        return iter(self._made.values())


@dataclass(frozen=True)
class Liveness:
    """``liveness``: per queue, per channel, the per-packet fields its entries carry (in state
    layout order) and the bytes of each typed packet they carry that the elements after it
    use; per segment, the fields its elements read (``uses``) and those some path from its
    source reads before writing (``read_first``)."""

    carried: Mapping[str, tuple[tuple[str, ...], ...]]
    packets: Mapping[str, tuple[Mapping[str, PacketBytes], ...]]
    uses: Mapping[str, frozenset[str]]
    read_first: Mapping[str, frozenset[str]]


@dataclass(frozen=True)
class QueueHome:
    """``place_memory``: the devices of a queue's two ends, whose memory holds it, and its
    producer and consumer variants."""

    enq_device: Device
    deq_device: Device
    home: Home
    multi_producer: bool
    multi_consumer: bool


@dataclass(frozen=True)
class Homes:
    """``place_memory``: whose memory holds each persistent state and each queue."""

    states: Mapping[str, Home]
    queues: Mapping[str, QueueHome]


@dataclass(frozen=True)
class Windows:
    """``slice_packets``: `Liveness.packets` with each typed packet's window, and for a
    frame how it crosses and whether it is sliced."""

    packets: Mapping[str, tuple[Mapping[str, PacketBytes], ...]]


@dataclass(frozen=True)
class EntryLayouts:
    """``plan_entries``: the entry layout of every channel of every queue."""

    entries: Mapping[str, tuple[EntryLayout, ...]]


@dataclass(frozen=True)
class ProcessIR:
    """An executable: its segments, and whether it holds ``main``."""

    name: str
    device: Device = Device.CPU
    segments: tuple[str, ...] = ()
    callables: tuple[str, ...] = ()
    has_main: bool = False
    external_main: tuple[str, ...] = ()


@dataclass(frozen=True)
class Placement:
    """``placement``: the processes (executables) segments run in, and the one holding
    ``main``."""

    processes: Mapping[str, ProcessIR]
    main: str


@dataclass(frozen=True)
class Plan:
    """``plan_code``: every choice code generation prints, per element and per process, the
    entries the sync layer moves at once and the layout of each queue, and ``floem.main``
    lowered to plain C."""

    elements: Mapping[str, ElementPlan]
    processes: Mapping[str, ProcessPlan]
    sync_batches: Mapping[str, int]
    layouts: Mapping[str, QueueLayout]
    main_body: str | None
