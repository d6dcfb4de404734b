"""Floem: a dataflow language and compiler for NIC-accelerated server applications.

Elements are Python classes holding C; ``a >> b`` wires them; segments place
them on the CPU or the NIC; ``floem build`` emits C. See ``docs/guide.md``.
"""
from typing import TYPE_CHECKING, Any

from floem.errors import FloemError
from floem.lang.element import Composite, Element, Input, Output
from floem.lang.cache import Cache
from floem.lang.params import defaults, param
from floem.lang.queue import Queue
from floem.lang.program import (Program, cflags, cut, depend, external_main, include, main,
                                origin)
from floem.lang.segment import CallableSegment, Flow, Segment, run_order, target
from floem.lang.state import Field, Frame, MemoryRegion, PerPacket, Persistent, State
from floem.lang.types import (Array, Bool, Double, Float, Int, Pointer, SizeT, Sint, Type, Uint,
                              Void)

if TYPE_CHECKING:
    from floem.api import build, run

__all__ = [
    "FloemError", "Cache", "Queue", "Composite", "Element", "Input", "Output", "Program",
    "build", "cflags", "cut", "defaults", "depend", "external_main", "include", "main", "origin", "param",
    "run",
    "CallableSegment", "Flow", "Segment", "run_order", "target", "Field", "Frame",
    "MemoryRegion",
    "PerPacket", "Persistent", "State", "Array", "Bool", "Double", "Float", "Int", "Pointer",
    "SizeT", "Sint", "Type", "Uint", "Void",
]


def __getattr__(name: str) -> Any:
    """``build`` and ``run``, from floem.api when first used: that module loads the whole
    compiler, which the ``floem`` command loads only once it ignores SIGUSR1 (floem/cli.py)."""
    if name in ("build", "run"):
        from floem import api
        return getattr(api, name)
    raise AttributeError(f"module 'floem' has no attribute {name!r}")
