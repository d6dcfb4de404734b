"""trace_packets (the trace id crossing queues, --trace-filter read) and the trace plan of
plan_code (sites, admissions, where a filter on per-packet fields is decided)."""
from __future__ import annotations

import pytest

from floem import (Element, Field, Flow, Input, Int, Output, PerPacket, Program, Queue, Segment,
                   State)
from floem.errors import FloemError
from floem.ir import Liveness
from floem.ir.plan import TRACE_FIELD

from .conftest import carried, run_until


class Msg(State):
    op = Field(Int)
    key = Field(Int)


class Make(Element):
    """Source: one packet per run; writes nothing."""

    def configure(self):
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(7); }")


class Fill(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c("int x = inp(); state->op = x; state->key = x * 2; output { out(); }")


class Pick(Element):
    def configure(self):
        self.inp = Input()
        self.yes = Output()
        self.no = Output()

    def impl(self):
        self.run_c("output switch { case state->op: yes(); else: no(); }")


class Use(Element):
    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c("(void)state->key;")


def program() -> Program:
    """rx: Make -> Fill -> Pick -yes-> q ; Pick -no-> Use.   tx: q -> Use."""
    with Program("traced") as p:
        q = Queue("q", size=4)

        class F(Flow):
            state = PerPacket(Msg)

            def impl(self):
                class rx(Segment):
                    def impl(self):
                        pick = Pick()
                        Make() >> Fill() >> pick
                        pick.yes >> q
                        pick.no >> Use()

                class tx(Segment):
                    def impl(self):
                        q >> Use()

                rx("rx")
                tx("tx")

        F()
    return p


def test_without_trace_nothing_changes():
    ir = run_until(program(), "trace_packets")
    assert all(TRACE_FIELD not in [f.name for f in s.fields] for s in ir.layouts)
    assert Liveness not in ir.results and ir.trace_filter is None


def test_the_trace_field_crosses_the_queue_and_nothing_else_carries_it():
    ir = run_until(program(), "liveness", trace=True)
    msg = next(s for s in ir.layouts if s.name == "Msg")
    assert [f.name for f in msg.fields] == ["op", "key", TRACE_FIELD]
    assert carried(ir, "q") == [["key", TRACE_FIELD]]
    enq = ir.node(ir.queues["q"].enqueuers[0][0])
    assert TRACE_FIELD in enq.info.fields.kills
    assert ir.liveness.read_first["rx"] == set()
    assert not any(TRACE_FIELD in w for w in ir.warnings)


def test_the_plan_admits_at_the_source_and_restores_after_the_queue():
    ir = run_until(program(), "plan_code", trace=True)
    plan = ir.plan.processes[next(iter(ir.processes))]
    source = ir.node(ir.segments["rx"].source)
    admit = ir.element_plan(source.name).trace.port("out")
    assert (admit.kind, admit.once, admit.filter, admit.pending) == ("admit", True, "", False)
    assert plan.trace_sites[admit.site].startswith(f"admit {source.name} port=out ports=1 ")
    fill = next(n for n in ir.nodes() if n.cls_name == "Fill")
    fields = ir.element_plan(fill.name).trace.port("out").fields
    assert fields == (("op", "signed"), ("key", "signed"))
    pick = next(n for n in ir.nodes() if n.cls_name == "Pick")
    assert ir.element_plan(pick.name).trace.end is None     # a switch with else always sends
    save = ir.node("q_save0")
    assert ir.element_plan(save.name).trace.port("out").kind == "restore"
    assert ir.element_plan(ir.queues["q"].enqueuers[0][0]).trace.carries
    assert ir.element_plan("q_deq").trace is None and ir.element_plan("q_release").trace is None


def test_a_filter_on_fields_written_after_the_source_is_decided_where_they_are():
    ir = run_until(program(), "plan_code", trace=True, trace_filter="state->op == 3")
    source = ir.node(ir.segments["rx"].source)
    admit = ir.element_plan(source.name).trace.port("out")
    assert admit.pending and admit.filter == ""
    fill = next(n for n in ir.nodes() if n.cls_name == "Fill")
    assert "state->op == 3" in ir.element_plan(fill.name).trace.port("out").decides
    pick = next(n for n in ir.nodes() if n.cls_name == "Pick")
    assert ir.element_plan(pick.name).trace.port("yes").decides == ""


def test_a_filter_on_the_source_values_is_decided_where_packets_enter():
    ir = run_until(program(), "plan_code", trace=True, trace_filter="v0 > 1")
    admit = ir.element_plan(ir.segments["rx"].source).trace.port("out")
    assert not admit.pending and admit.filter.endswith("v0 > 1\n")
    assert ir.trace_filter.values == 1


def test_a_filter_reading_what_the_entry_lacks_warns():
    ir = run_until(program(), "plan_code", trace=True, trace_filter="v2 == 0")
    trace = ir.element_plan(ir.segments["rx"].source).trace
    assert trace.untraced and trace.port("out") is None
    assert any("--trace-filter reads v2 (port out sends 1 values)" in w for w in ir.warnings)


@pytest.mark.parametrize("expression, message", [
    ("state->nope", "the per-packet state has no field 'nope' (fields: key, op)"),
    (" ", "an empty expression"),
    ("#define X 1", "one C expression, not a preprocessor line"),
    ("x = ", "C syntax error"),
])
def test_filter_mistakes(expression, message):
    with pytest.raises(FloemError) as e:
        run_until(program(), "trace_packets", trace=True, trace_filter=expression)
    assert (e.value.file, e.value.line) == ("--trace-filter", 1)
    assert e.value.message.startswith(message)
