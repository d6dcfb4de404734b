"""Callable segments the fuzz harnesses' apps (fuzz/apps/*.py) are made of: a chain of
elements that take a frame, the counters of a persistent state, and the clearing of one;
and the modules of an example app, imported so that their elements join the fuzz app.

Importing this module creates nothing; an app calls the functions below (those that run
elements using a per-packet state, inside the `Flow` that declares it).
"""
from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from floem import (CallableSegment, Composite, Element, Flow, Input, Int, Output, PerPacket,
                   SizeT, State, Uint)
from floem.library import FRAME
from floem.library.basic import Drop


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def example_modules(directory: str, *names: str) -> list[ModuleType]:
    """The modules ``names`` of ``examples/directory``, executed afresh in the current
    program, in order: their elements, states and parameters become the fuzz app's (an app
    file there makes its segments only when floem runs it, not when it is imported)."""
    path = os.path.join(ROOT, "examples", directory)
    if path not in sys.path:
        sys.path.insert(0, path)
    for name in names:
        sys.modules.pop(name, None)
    return [importlib.import_module(name) for name in names]


class FrameSize(Element):
    """A frame's size: what the callables return for a frame they pass on."""

    def configure(self) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(SizeT)

    def impl(self) -> None:
        self.run_c("(size_t size, uint8_t *data, void *buf) = inp(); (void)data; (void)buf;"
                   " output { out(size); }")


def frame_function(name: str, *chain: Element | Composite) -> None:
    """A callable ``size_t name(size_t size, uint8_t *data, void *buf)`` running ``chain``:
    the size of the frame that leaves it, 0 when an element's ``drop`` port fires."""

    class function(CallableSegment):
        def configure(self) -> None:
            self.inp = Input(*FRAME)
            self.out = Output(SizeT)

        def impl(self) -> None:
            at = self.inp
            for element in chain:
                at >> element
                at = element.out
                if "drop" in element.outputs:
                    element.drop >> Drop()
            at >> FrameSize() >> self.out

    function(name, default_return="0")


def frame_flow(name: str, packet: type[State], *chain: Callable[[], Element | Composite]) -> None:
    """`frame_function` ``name`` over the elements ``chain`` makes, in a `Flow` whose
    per-packet state is ``packet`` (the state the elements' bodies read as ``state->``)."""

    class frames(Flow):
        state = PerPacket(packet)

        def impl(self) -> None:
            frame_function(name, *(make() for make in chain))

    frames()


class Counter(Element):
    """Field ``fields[which]`` of a persistent state (``states=[s]``), 0 for another ``which``.

    Ports: ``inp`` (``int which``); ``out`` (``uint64_t``).
    """

    def configure(self, fields: Sequence[str]) -> None:
        self.inp = Input(Int)
        self.out = Output(Uint(64))
        self.fields = list(fields)

    def states(self, counts: State) -> None:
        self.counts = counts

    def impl(self) -> None:
        values = ", ".join(f"counts->{field}" for field in self.fields)
        self.run_c(f'''
            int which = inp();
            const uint64_t values[] = {{{values}}};
            uint64_t value = which >= 0 && which < {len(self.fields)} ? values[which] : 0;
            output {{ out(value); }}
        ''')


def counter_function(name: str, counts: State, fields: Sequence[str]) -> None:
    """A callable ``uint64_t name(int which)``: field ``fields[which]`` of ``counts``."""

    class function(CallableSegment):
        def configure(self) -> None:
            self.inp = Input(Int)
            self.out = Output(Uint(64))

        def impl(self) -> None:
            self.inp >> Counter(fields=fields, states=[counts]) >> self.out

    function(name, default_return="0")


class Clear(Element):
    """Set a persistent state (``states=[s]``) to zeros, as it starts.

    Ports: ``inp`` (nothing).
    """

    def configure(self) -> None:
        self.inp = Input()

    def states(self, kept: State) -> None:
        self.kept = kept

    def impl(self) -> None:
        self.run_c("inp(); memset(kept, 0, sizeof *kept);")


def clear_function(name: str, kept: State) -> None:
    """A callable ``void name(void)`` setting ``kept`` to zeros: an input of a harness then
    meets the app's tables as the app starts, whatever the inputs before it did."""

    class function(CallableSegment):
        def configure(self) -> None:
            self.inp = Input()

        def impl(self) -> None:
            self.inp >> Clear(states=[kept])

    function(name)
