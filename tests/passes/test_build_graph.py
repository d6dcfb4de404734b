"""build_graph: DSL objects -> IR nodes, data/order edges and segments."""
from __future__ import annotations

from floem import (CallableSegment, Composite, Field, Flow, Input, Int, Output, PerPacket,
                   Program, Segment, State, run_order)
from floem.ir import CType, EdgeKind

from .conftest import Gen, Inc, Sink, Tick, edges, here, run_until


class Twice(Composite):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Inc() >> Inc() >> self.out


class Four(Composite):
    """A composite of composites: inp >> Twice >> Twice >> out."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> Twice() >> Twice() >> self.out


class Wire(Composite):
    """A composite whose input goes straight to its output."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.inp >> self.out


class Spread(Composite):
    """A composite input port feeding two inner elements."""

    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.inp >> Sink(name="left")
        self.inp >> Sink(name="right")


def test_chain_becomes_nodes_and_located_edges():
    with Program("chain") as p:
        class S(Segment):
            def impl(self):
                line = here() + 1
                Gen(name="g") >> Inc(name="i") >> Sink(name="k")
                self.line = line
        seg = S("s")
    ir = run_until(p, "build_graph")
    assert list(ir.graph.nodes) == ["g", "i", "k"]
    assert edges(ir) == [("g", "out", "i", "inp"), ("i", "out", "k", "inp")]
    for e in ir.edges():
        assert e.types == (CType("int"),)
        assert (e.loc.file, e.loc.line) == (__file__, seg.line)
    assert ir.segments["s"].elements == ("g", "i", "k")
    assert all(n.segment == "s" for n in ir.nodes())
    one_int = (CType("int"),)
    assert ir.node("i").inputs == {"inp": one_int} and ir.node("i").outputs == {"out": one_int}
    assert ir.node("i").cls_name == "Inc"
    assert ir.segments["s"].kind == "thread" and ir.segments["s"].device == "CPU"
    assert ir.segments["s"].process == "chain"


def test_composite_is_flattened():
    with Program("comp") as p:
        class S(Segment):
            def impl(self):
                Gen(name="g") >> Twice(name="tw") >> Sink(name="k")
        S("s")
    ir = run_until(p, "build_graph")
    assert "tw" not in ir.graph
    assert set(ir.graph.nodes) == {"g", "Inc0", "Inc1", "k"}
    assert edges(ir) == [("Inc0", "out", "Inc1", "inp"), ("Inc1", "out", "k", "inp"),
                         ("g", "out", "Inc0", "inp")]
    assert sorted(ir.segments["s"].elements) == ["Inc0", "Inc1", "g", "k"]


def test_nested_composites_are_flattened():
    with Program("nested") as p:
        class S(Segment):
            def impl(self):
                Gen(name="g") >> Four(name="four") >> Sink(name="k")
        S("s")
    ir = run_until(p, "build_graph")
    assert set(ir.graph.nodes) == {"g", "Inc0", "Inc1", "Inc2", "Inc3", "k"}
    chain = {u: v for u, _, v, _ in edges(ir)}
    assert chain == {"g": "Inc0", "Inc0": "Inc1", "Inc1": "Inc2", "Inc2": "Inc3", "Inc3": "k"}
    assert all(n.segment == "s" for n in ir.nodes())


def test_composite_passing_input_to_output():
    with Program("wire") as p:
        class S(Segment):
            def impl(self):
                Gen(name="g") >> Wire() >> Sink(name="k")
        S("s")
    ir = run_until(p, "build_graph")
    assert edges(ir) == [("g", "out", "k", "inp")]


def test_composite_input_fanning_out_inside():
    with Program("spread") as p:
        class S(Segment):
            def impl(self):
                Gen(name="g") >> Spread()
        S("s")
    ir = run_until(p, "build_graph")
    assert edges(ir) == [("g", "out", "left", "inp"), ("g", "out", "right", "inp")]


def test_top_level_elements_join_the_segment_they_connect_into():
    with Program("adopt") as p:
        after = Sink(name="after")           # made before the segment, fed from inside it
        before = Gen(name="before")          # made before the segment, feeding into it
        far = Sink(name="far")
        middle = Inc(name="middle")
        middle >> far                        # adopted transitively through `middle`

        class S(Segment):
            def impl(self):
                inc = Inc(name="inc")
                before >> inc
                fan = Inc(name="fan")
                inc >> fan >> after
                fan >> middle
        S("s")
    ir = run_until(p, "build_graph")
    assert {n.name: n.segment for n in ir.nodes()} == dict.fromkeys(
        ["after", "before", "far", "middle", "inc", "fan"], "s")
    assert list(ir.segments) == ["s"]
    assert sorted(ir.segments["s"].elements) == ["after", "before", "fan", "far", "inc", "middle"]


def test_loose_elements_form_one_implicit_segment_per_group():
    with Program("loose") as p:
        Gen(name="a") >> Sink(name="b")
        Gen(name="c") >> Inc(name="d") >> Sink(name="e")
    ir = run_until(p, "build_graph")
    assert list(ir.segments) == ["a_segment", "c_segment"]
    assert ir.segments["a_segment"].elements == ("a", "b")
    assert ir.segments["c_segment"].elements == ("c", "d", "e")
    seg = ir.segments["c_segment"]
    assert (seg.kind, seg.device, seg.cores, seg.process) == ("thread", "CPU", [0], "loose")


def test_run_order_becomes_an_order_edge():
    with Program("order") as p:
        class S(Segment):
            def impl(self):
                last = Sink(name="last")
                Gen(name="g") >> last
                tick = Tick(name="tick")
                self.line = here() + 1
                run_order(last, tick)
        seg = S("s")
    ir = run_until(p, "build_graph")
    assert edges(ir, "order") == [("last", "", "tick", "")]
    assert edges(ir) == [("g", "out", "last", "inp")]
    e, = ir.in_edges("tick", kind=EdgeKind.ORDER)
    assert e.loc.line == seg.line and e.types == ()


def test_callable_segment_args_and_return():
    with Program("call") as p:
        class inc1(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> Inc(name="i") >> self.out
        inc1("inc1", default_return="-1")
    ir = run_until(p, "build_graph")
    seg = ir.segments["inc1"]
    assert (seg.kind, seg.default_return) == ("callable", "-1")
    assert ir.node("inc1_args").role == "args"
    assert ir.node("inc1_args").outputs == {"out": (CType("int"),)}
    assert ir.node("inc1_return").role == "return" and ir.node("inc1_return").inputs == {
        "inp": (CType("int"),)}
    assert edges(ir) == [("inc1_args", "out", "i", "inp"), ("i", "out", "inc1_return", "inp")]


def test_flow_state_and_segment_options_are_recorded():
    class Packet(State):
        key = Field(Int)

    with Program("flow") as p:
        class F(Flow):
            state = PerPacket(Packet)

            def impl(self):
                class S(Segment):
                    def impl(self):
                        Gen(name="g") >> Sink(name="k")
                S("s", cores=[0, 1], process="worker")
        F()
    ir = run_until(p, "build_graph")
    seg = ir.segments["s"]
    assert (seg.packet_state.name, seg.cores, seg.process) == ("Packet", [0, 1], "worker")
    assert [f.name for f in seg.packet_state.fields] == ["key"]
    assert ir.node("g").packet_state is seg.packet_state
    assert ir.node("k").packet_state is seg.packet_state
