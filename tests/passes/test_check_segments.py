"""check_segments: one source per segment, all reachable, no data edge between segments."""
from __future__ import annotations

import pytest

from floem import (CallableSegment, Field, Flow, FloemError, Input, Int, Output, PerPacket,
                   Program, Segment, State, run_order, target)

from .conftest import Gen, Inc, Sink, Tick, here, run_until


def test_sources_are_set():
    with Program("src") as p:
        class S(Segment):
            def impl(self):
                first = Sink(name="first")  # made first, but fed by the source
                tick = Tick(name="tick")    # no inputs, but ordered: not a source
                Gen(name="g") >> first
                run_order(first, tick)
        S("s")

        class W(Segment):
            def impl(self):
                self.core_id >> Sink(name="worker")
        W("w", cores=[0, 1])

        class inc1(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                self.inp >> Inc() >> self.out
        inc1("inc1")
    ir = run_until(p, "check_segments")
    assert {s.name: s.source for s in ir.segments.values()} == {
        "s": "g", "w": "w_core_id", "inc1": "inc1_args"}


def test_two_sources_in_one_segment():
    with Program("two") as p:
        class S(Segment):
            def impl(self):
                self.a = Gen(name="a")
                self.a >> Sink()
                self.b = Gen(name="b")
                self.b >> Sink()
        seg = S("s")
    with pytest.raises(FloemError) as e:
        run_until(p, "check_segments")
    assert (e.value.file, e.value.line) == (__file__, seg.b.loc.line)
    assert f"two sources in segment 's': 'a' ({__file__}:{seg.a.loc.line}) and 'b'" \
        in e.value.message



def test_find_sources_records_only_and_check_segments_only_checks():
    with Program("two_again") as p:
        class S(Segment):
            def impl(self):
                Gen(name="a") >> Sink()
                Gen(name="b") >> Sink()
        S("s")
    ir = run_until(p, "find_sources")               # ambiguous: recorded as none, no error
    assert ir.segments["s"].source == ""
    with Program("one") as p:
        class T(Segment):
            def impl(self):
                Gen(name="g") >> Sink(name="k")
        T("t")
    before = run_until(p, "find_sources").dump()
    after = run_until(p, "check_segments").dump()
    assert "source=g" in before and after == before

def test_element_unreachable_from_the_source():
    with Program("island") as p:
        class S(Segment):
            def impl(self):
                Gen(name="g") >> Sink()
                self.lost = Inc(name="lost")
                self.lost >> Sink()
        seg = S("s")
    with pytest.raises(FloemError) as e:
        run_until(p, "check_segments")
    assert e.value.line == seg.lost.loc.line
    assert e.value.message == "element 'lost' is unreachable from the source 'g' of segment 's'"


def test_data_edge_between_two_segments():
    with Program("cross") as p:
        class A(Segment):
            def impl(self):
                self.out = Inc(name="out")
                Gen() >> self.out
        a = A("a")

        class B(Segment):
            def impl(self):
                self.line = here() + 1
                a.out >> Sink(name="inb")
        b = B("b")
    with pytest.raises(FloemError) as e:
        run_until(p, "check_segments")
    assert e.value.line == b.line
    assert "out (segment a) >> inb (segment b) joins two segments" in e.value.message


def test_segment_without_a_source():
    with Program("nosource") as p:
        class S(Segment):
            def impl(self):
                i = Inc()
                i >> Inc() >> i
        seg = S("s")
    with pytest.raises(FloemError) as e:
        run_until(p, "check_segments")
    assert e.value.line == seg.loc.line
    assert "has no source" in e.value.message


def test_segment_without_elements():
    with Program("empty") as p:
        seg = Segment("idle")
    with pytest.raises(FloemError) as e:
        run_until(p, "check_segments")
    assert e.value.line == seg.loc.line and "segment 'idle' has no elements" in e.value.message


def test_nic_segment_runs_in_the_nic_process():
    with Program("nic_ok") as p:
        class S(Segment):
            def impl(self):
                Gen() >> Sink()
        S("s", device=target.NIC)
    ir = run_until(p, "check_segments")
    assert ir.segments["s"].process == "nic" and ir.segments["s"].device == "NIC"


@pytest.mark.parametrize("case", ["callable", "process", "cpu_named_nic"])
def test_nic_segment_rules(case):
    with Program("nic_rules") as p:
        class S(Segment):
            def impl(self):
                Gen() >> Sink()

        class C(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                self.inp >> Sink()
        if case == "callable":
            seg, message = C("c", device=target.NIC), "cannot run on the NIC"
        elif case == "process":
            seg, message = S("s", device=target.NIC, process="p"), "drop process='p'"
        else:
            seg, message = S("s", process="nic"), "is the NIC's"
    with pytest.raises(FloemError) as e:
        run_until(p, "check_segments")
    assert e.value.line == seg.loc.line and message in e.value.message


def test_per_packet_state_of_the_flow_becomes_the_segments():
    class Packet(State):
        key = Field(Int)

    class Other(State):
        key = Field(Int)

    with Program("states") as p:
        class F(Flow):
            state = PerPacket(Packet)

            def impl(self):
                self.leaf = Sink(name="leaf")   # made in the flow, outside any segment
        F()

        class S(Segment):
            def impl(self):
                Gen() >> p.elements[0]
        S("s")
    ir = run_until(p, "check_segments")
    assert ir.segments["s"].packet_state.name == "Packet"

    with Program("mixed") as p:
        class G(Flow):
            state = PerPacket(Other)

            def impl(self):
                self.leaf = Sink(name="leaf")
        G()

        class F(Flow):
            state = PerPacket(Packet)

            def impl(self):
                class S(Segment):
                    def impl(self):
                        Gen() >> p.elements[0]
                S("s")
        F()
    with pytest.raises(FloemError) as e:
        run_until(p, "check_segments")
    assert "segment 's' mixes per-packet states (Other, Packet)" in e.value.message
