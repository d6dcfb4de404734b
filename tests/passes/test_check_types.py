"""check_types: the values on every data edge must fit the input port they enter.

A direct ``>>`` is already checked when it is written (floem.lang), so the bad
edge here is recorded without that check: the pass is the safety net for
edges made any other way.
"""
from __future__ import annotations

import pytest

from floem import Element, FloemError, Input, Output, Program, Segment, Uint
from floem.errors import Location
from floem.lang.element import Connection

from .conftest import Gen, Inc, Sink, run_until


class Byte(Element):
    def configure(self):
        self.inp = Input(Uint(8))

    def impl(self):
        self.run_c("inp();")


class Anything(Element):
    """An input port with no types takes any output."""

    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c("inp(); output { out(); }")


def test_matching_and_untyped_edges_pass():
    with Program("ok") as p:
        class S(Segment):
            def impl(self):
                g = Gen(name="g")
                g >> Inc() >> Sink()
                g >> Anything() >> Anything()
        S("s")
    ir = run_until(p, "check_types")
    assert len(ir.graph.edges) == 4


def test_mismatched_edge_is_reported_at_its_connection():
    with Program("bad") as p:
        class S(Segment):
            def impl(self):
                self.g = Gen(name="g")
                self.b = Byte(name="b")
        seg = S("s")
    where = Location("/apps/bad.py", 42)
    p.connections.append(Connection(seg.g.out, seg.b.inp, where))
    ir = run_until(p, "build_graph")
    assert ir.graph.has_edge("g", "b")
    with pytest.raises(FloemError) as e:
        run_until(p, "check_types")
    assert (e.value.file, e.value.line) == ("/apps/bad.py", 42)
    assert e.value.message == "type mismatch: g.out (int) >> b.inp (uint8_t)"
