"""Helpers for the pass tests: run the pipeline up to a pass, and a few tiny elements.

Each test builds a small program in-process (``with Program(...)``), runs
`PIPELINE` up to and including the pass under test on a fresh `ProgramIR`,
and looks at the IR that pass produced.
"""
from __future__ import annotations

import sys

from floem import Element, Input, Int, Output, Program
from floem.ir import BuildOptions, ProgramIR
from floem.passes import PIPELINE, pass_names


def run_until(program: Program, pass_name: str, **options: object) -> ProgramIR:
    """The IR of ``program`` after ``PIPELINE[:k]``, the k-th pass being ``pass_name``."""
    k = pass_names().index(pass_name) + 1
    ir = ProgramIR(program, options=BuildOptions.from_keywords(**options))
    for stage in PIPELINE[:k]:
        ir = stage.run(ir)
    return ir


def here() -> int:
    """The line number of the caller (to locate the ``>>`` or element made next)."""
    return sys._getframe(1).f_lineno


def edges(ir: ProgramIR, kind: str = "data") -> list[tuple[str, str, str, str]]:
    """Every edge of ``kind`` as ``(from, out_port, to, in_port)``, in rank order."""
    found = [(d["rank"], u, d["out_port"], v, d["in_port"])
             for u, v, d in ir.graph.edges(data=True) if d["kind"] == kind]
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
