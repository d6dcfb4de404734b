"""check_callables: every path of a callable segment returns, or it has a default_return."""
from __future__ import annotations

import pytest

from floem import CallableSegment, Element, FloemError, Input, Int, Output, Program

from .conftest import Inc, Sink, run_until


class Classify(Element):
    """Three ways out; with ``has_else`` the last one is the ``else`` case."""

    def configure(self, has_else=True):
        self.inp = Input(Int)
        self.neg = Output(Int)
        self.zero = Output(Int)
        self.pos = Output(Int)
        self.has_else = has_else

    def impl(self):
        last = "else:" if self.has_else else "case x > 0:"
        self.run_c(r'''
            int x = inp();
            output switch {
                case x < 0: neg(-x);
                case x == 0: zero(0);
                %s pos(x);
            }
        ''' % last)


class Both(Element):
    """Fires both outputs, every time."""

    def configure(self):
        self.inp = Input(Int)
        self.one = Output(Int)
        self.two = Output(Int)

    def impl(self):
        self.run_c("int x = inp(); output { one(x); two(x); }")


class Repeat(Element):
    """A looping element: fires its output any number of times (maybe none)."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("int n = inp(); output multiple; for (int i = 0; i < n; i++) out(i);")


class Join(Element):
    def configure(self):
        self.a = Input(Int)
        self.b = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("int x = a(); int y = b(); output { out(x + y); }")


def callable_program(wire, default_return=None, returns=True):
    """A program with one callable segment ``f`` whose `impl` is ``wire(segment)``."""
    with Program("calls") as p:
        class f(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
                if returns:
                    self.out = Output(Int)

            def impl(self):
                wire(self)
        seg = f("f", default_return=default_return)
    return p, seg


def chain(seg):
    seg.inp >> Inc() >> Inc() >> Inc() >> seg.out


def switch_with_else(seg):
    c = Classify()
    seg.inp >> c
    c.neg >> Inc() >> seg.out
    c.zero >> seg.out
    c.pos >> Inc() >> Inc() >> seg.out


def switch_without_else(seg):
    c = Classify(has_else=False)
    seg.inp >> c
    c.neg >> seg.out
    c.zero >> seg.out
    c.pos >> seg.out


def switch_case_to_a_leaf(seg):
    c = Classify()
    seg.inp >> c
    c.neg >> seg.out
    c.zero >> Sink()
    c.pos >> seg.out


def block_one_port_returns(seg):
    b = Both()
    seg.inp >> b
    b.one >> Sink()
    b.two >> Inc() >> seg.out


def looping(seg):
    seg.inp >> Repeat() >> seg.out


def join_of_two_chains(seg):
    j = Join()
    seg.inp >> Inc() >> j.a
    seg.inp >> Inc() >> j.b
    j >> seg.out


def join_fed_by_a_switch_without_else(seg):
    j = Join()
    c = Classify(has_else=False)
    seg.inp >> Inc() >> j.a
    seg.inp >> c
    c.neg >> j.b
    c.zero >> j.b
    c.pos >> j.b
    j >> seg.out


def no_return_value(seg):
    c = Classify(has_else=False)
    seg.inp >> c
    c.neg >> Sink()
    c.zero >> Sink()
    c.pos >> Sink()


@pytest.mark.parametrize("wire", [chain, switch_with_else, block_one_port_returns,
                                  join_of_two_chains])
def test_paths_that_always_return_are_accepted(wire):
    p, _ = callable_program(wire)
    ir = run_until(p, "check_callables")
    assert ir.segments["f"].default_return is None


def test_a_callable_without_result_needs_no_return():
    p, _ = callable_program(no_return_value, returns=False)
    run_until(p, "check_callables")


@pytest.mark.parametrize("wire", [
    switch_without_else,
    switch_case_to_a_leaf,
    looping,
    join_fed_by_a_switch_without_else,
])
def test_path_that_may_not_return_is_an_error_at_the_segment(wire):
    p, seg = callable_program(wire)
    with pytest.raises(FloemError) as e:
        run_until(p, "check_callables")
    assert (e.value.file, e.value.line) == (__file__, seg.loc.line)
    assert "callable segment 'f' may finish without a return value" in e.value.message
    assert "default_return" in e.value.message


@pytest.mark.parametrize("wire", [switch_without_else, switch_case_to_a_leaf, looping])
def test_default_return_allows_paths_without_a_return(wire):
    p, _ = callable_program(wire, default_return="-1")
    ir = run_until(p, "check_callables")
    assert ir.segments["f"].default_return == "-1"


def test_a_long_chain_is_checked_without_deep_recursion():
    """A callable of 600 chained elements (beyond Python's recursion limit for a recursive
    walk) is checked, both when it returns and when its last element may not."""
    def long_chain(seg):
        x = seg.inp
        for _ in range(600):
            x = x >> Inc()
        x >> seg.out

    p, _ = callable_program(long_chain)
    run_until(p, "check_callables")

    def long_chain_then_switch(seg):
        x = seg.inp
        for _ in range(600):
            x = x >> Inc()
        c = Classify()
        x >> c
        c.pos >> seg.out

    p, seg = callable_program(long_chain_then_switch)
    with pytest.raises(FloemError, match="may finish without a return value"):
        run_until(p, "check_callables")
