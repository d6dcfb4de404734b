"""parse_bodies: every element body (and floem.main) analysed; mistakes located in the body."""
from __future__ import annotations

import pytest

from floem import CallableSegment, Element, FloemError, Input, Int, Output, Program, Segment

from .conftest import Gen, Inc, Sink, run_until


class Fork(Element):
    def configure(self):
        self.inp = Input(Int)
        self.small = Output(Int)
        self.big = Output(Int)

    def impl(self):
        self.run_c(r'''
            int x = inp();
            output switch { case x < 10: small(x); else: big(x); }
        ''')


def test_every_body_gets_its_analysis():
    with Program("bodies") as p:
        class inc1(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                self.out = Output(Int)

            def impl(self):
                f = Fork(name="f")
                self.inp >> f
                f.small >> Inc(name="i") >> self.out
                f.big >> Sink(name="k")
        inc1("inc1")
        p.main('printf("%d\\n", inc1(1));')
    ir = run_until(p, "parse_bodies")
    assert ir.node("inc1_args").info is None and ir.node("inc1_return").info is None
    fork = ir.node("f").info
    assert (fork.form, fork.switch_ports, fork.switch_has_else) == ("switch", ["small", "big"], True)
    assert fork.reads == {"inp": 2}
    inc = ir.node("i").info
    assert (inc.form, inc.always_fires) == ("block", {"out"})
    assert ir.node("k").info.form is None and ir.node("k").info.consumed == {"inp"}
    assert ir.main_info is not None


def test_body_mistake_names_element_and_body_line():
    class Twice(Element):
        def configure(self):
            self.inp = Input(Int)

        def impl(self):
            self.run_c(r'''
                int a = inp();
                int b = inp();
            ''')

    with Program("twice") as p:
        class S(Segment):
            def impl(self):
                Gen() >> Twice(name="tw")
        S("s")
    with pytest.raises(FloemError) as e:
        run_until(p, "parse_bodies")
    assert (e.value.element, e.value.body_line, e.value.file) == ("tw", 3, __file__)
    assert "read twice" in e.value.message
    body_start = Twice.class_loc.line + 5          # the line of `self.run_c(r'''`
    assert e.value.line == body_start + 2
