"""Helpers for the pass tests: run the pipeline up to a pass, and a few tiny elements.

Each test builds a small program in-process (``with Program(...)``), runs
the front end and the passes up to and including the pass under test, and
looks at the IR that pass produced.
"""
from __future__ import annotations

import sys

from floem import Element, Input, Int, Output, Program
from floem.ir import BuildOptions, EdgeKind, ProgramIR
from floem.passes import run_pipeline


def run_until(program: Program, pass_name: str, **options: object) -> ProgramIR:
    """The IR of ``program`` after the front end and the passes up to ``pass_name``."""
    return run_pipeline(program, BuildOptions.from_keywords(**options), stop_after=pass_name)


def here() -> int:
    """The line number of the caller (to locate the ``>>`` or element made next)."""
    return sys._getframe(1).f_lineno


def edges(ir: ProgramIR, kind: str = "data") -> list[tuple[str, str, str, str]]:
    """Every edge of ``kind`` as ``(from, out_port, to, in_port)``, in rank order."""
    found = [(e.rank, e.src, e.out_port, e.dst, e.in_port) for e in ir.edges(EdgeKind(kind))]
    return [e[1:] for e in sorted(found)]


class Gen(Element):
    """Source: fires one int."""

    def configure(self) -> None:
        self.out = Output(Int)

    def impl(self) -> None:
        self.run_c("output { out(1); }")


class Inc(Element):
    """Adds one."""

    def configure(self) -> None:
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self) -> None:
        self.run_c("int x = inp(); output { out(x + 1); }")


class Sink(Element):
    """Leaf: consumes an int."""

    def configure(self) -> None:
        self.inp = Input(Int)

    def impl(self) -> None:
        self.run_c("inp();")


class Tick(Element):
    """Source with no output: a target for ``run_order``."""

    def impl(self) -> None:
        self.run_c("(void)0;")


def carried(ir: ProgramIR, queue: str) -> list[list[str]]:
    """The fields each channel of ``queue`` carries (liveness's result), as lists."""
    return [list(fields) for fields in ir.liveness.carried[queue]]
