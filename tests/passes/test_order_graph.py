"""order_graph: fan-out in program order, joins marked, run_order edges checked."""
from __future__ import annotations

import pytest

from floem import Composite, Element, FloemError, Input, Int, Output, Program, Segment, run_order
from floem.ir import EdgeKind

from .conftest import Gen, Inc, Sink, Tick, here, run_until


class Join(Element):
    def configure(self):
        self.a = Input(Int)
        self.b = Input(Int)

    def impl(self):
        self.run_c("a(); b();")


class Split(Composite):
    """Fans its input out to two increments, then to its output."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Inc(name="s1") >> self.out
        self.inp >> Inc(name="s2")


def test_fan_out_ranks_follow_program_order_of_the_connections():
    with Program("fan") as p:
        class S(Segment):
            def impl(self):
                z, y, x = Sink(name="z"), Sink(name="y"), Sink(name="x")
                g = Gen(name="g")
                g >> x
                g >> Split() >> z
                g.out >> y
        S("s")
    ir = run_until(p, "order_graph")
    assert [e.dst for e in ir.out_edges("g")] == ["x", "s1", "s2", "y"]
    assert [e.dst for e in ir.out_edges("g", "out")] == ["x", "s1", "s2", "y"]
    ranks = [e.rank for e in ir.out_edges("g")]
    assert ranks == sorted(ranks) and len(set(ranks)) == 4


def test_element_with_two_inputs_is_a_join():
    with Program("join") as p:
        class S(Segment):
            def impl(self):
                g = Gen(name="g")
                j = Join(name="j")
                g >> Inc(name="left") >> j.a
                g >> Inc(name="right") >> j.b
        S("s")
    ir = run_until(p, "order_graph")
    assert ir.node("j").join
    assert not any(ir.node(n).join for n in ("g", "left", "right"))
    assert [(e.src, e.in_port) for e in ir.in_edges("j")] == [("left", "a"), ("right", "b")]


def test_join_with_an_unconnected_input_never_runs():
    with Program("halfjoin") as p:
        class S(Segment):
            def impl(self):
                self.j = Join(name="j")
                Gen() >> self.j.a
        seg = S("s")
    with pytest.raises(FloemError) as e:
        run_until(p, "order_graph")
    assert e.value.line == seg.j.loc.line and e.value.file == __file__
    assert "join element 'j' never runs: input port 'b' is not connected" in e.value.message


def test_run_order_edges_in_the_same_segment():
    with Program("order") as p:
        class S(Segment):
            def impl(self):
                g = Gen(name="g")
                l1, l2 = Sink(name="l1"), Sink(name="l2")
                fork = Split(name="fork")
                g >> fork >> l1
                g >> l2
                run_order([l1, l2], Tick(name="after"))
        S("s")
    ir = run_until(p, "order_graph")
    assert [e.src for e in ir.in_edges("after", kind=EdgeKind.ORDER)] == ["l1", "l2"]
    assert not ir.in_edges("after")
    assert not ir.node("after").join


def test_run_order_across_segments_is_an_error():
    with Program("apart") as p:
        class A(Segment):
            def impl(self):
                self.leaf = Sink(name="leaf")
                Gen() >> self.leaf
        a = A("a")

        class B(Segment):
            def impl(self):
                self.tick = Tick(name="tick")
        b = B("b")
        line = here() + 1
        run_order(a.leaf, b.tick)
    with pytest.raises(FloemError) as e:
        run_until(p, "order_graph")
    assert e.value.line == line
    assert "run_order(leaf, tick): elements are in different segments" in e.value.message


def test_run_order_onto_an_element_with_inputs_is_an_error():
    with Program("dependent") as p:
        class S(Segment):
            def impl(self):
                g = Gen()
                first, second = Sink(name="first"), Sink(name="second")
                g >> first
                g >> second
                self.line = here() + 1
                run_order(first, second)
        seg = S("s")
    with pytest.raises(FloemError) as e:
        run_until(p, "order_graph")
    assert e.value.line == seg.line
    assert "'second' has input ports" in e.value.message
