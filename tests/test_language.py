"""The language API in-process: elements, configuration, state, programs, types."""
from __future__ import annotations

import pytest

import floem
from floem import (Array, CallableSegment, Element, Field, FloemError, Input, Int, Output,
                   Persistent, Pointer, Program, Segment, State, Uint, Sint)
from floem.ir import CType
from floem.passes import run_pipeline


class Inc(Element):
    def configure(self, ty=Int, step=1):
        self.inp = Input(ty)
        self.out = Output(ty)
        self.step = step

    def impl(self):
        self.run_c("output { out(inp() + %d); }" % self.step)


class Counter(State):
    total = Field(Int)
    last = Field(Uint(8))

    def init(self, total=5, last=1):
        self.total = total
        self.last = last


class Observe(Element):
    counter = Persistent(Counter)

    def states(self, counter):
        self.counter = counter

    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c("counter->total += inp();")


def test_types_spell_c() -> None:
    assert str(Uint(8)) == "uint8_t" and str(Sint(64)) == "int64_t"
    assert str(Pointer(Pointer(Uint(16)))) == "uint16_t **"
    assert Array(Int, 4).declare("xs") == "int xs[4]"
    with pytest.raises(FloemError):
        Uint(12)


def test_configure_positional_and_keyword() -> None:
    with Program("p"):
        a = Inc(configure=[Uint(8), 3])
        b = Inc(ty=Uint(8), step=3)
        c = Inc(name="inc_c")
    assert a.inp.c_types == b.inp.c_types == ["uint8_t"]
    assert a.step == b.step == 3
    assert c.name == "inc_c" and c.inp.c_types == ["int"]
    assert a.name != b.name


def test_bad_configure_is_a_floem_error() -> None:
    with Program("p"), pytest.raises(FloemError, match="configure"):
        Inc(colour="red")


def test_states_shared_explicitly_and_fresh_by_default() -> None:
    with Program("p") as p:
        shared = Counter(init=[10])
        o1, o2 = Observe(states=[shared]), Observe(states=[shared])
        o3, o4 = Observe(), Observe()
    assert o1.counter is o2.counter is shared
    assert o3.counter is not o4.counter
    assert shared.values == {"total": 10, "last": 1}
    assert len(p.states) == 3


def test_state_layout_and_options() -> None:
    from floem.passes import run_pipeline
    from floem.templates import render

    class Hdr(State):
        a = Field(Uint(8))
        b = Field(Uint(32))
        layout = ["b", "a"]
        packed = False

    class Opaque(State):
        x = Field(Int)
        declare = False

    with Program("layouts") as p:
        Hdr(), Opaque(), Counter()
    layouts = {s.name: s for s in run_pipeline(p, stop_after="build_graph").layouts}
    text = render("declarations.h.j2", layouts=[layouts["Hdr"], layouts["Opaque"]])
    assert "struct Hdr {\n    uint32_t b;\n    uint8_t a;\n};" in text
    assert "Opaque" not in text
    assert "__attribute__((packed))" in render("declarations.h.j2", layouts=[layouts["Counter"]])


def test_program_context_and_default() -> None:
    with Program("inner") as p:
        e = Inc()
    assert e.program is p and e in p.elements
    assert floem.lang.program.current_program() is not p


def test_impl_nic_kept_apart() -> None:
    class Twice(Element):
        def configure(self):
            self.inp = Input(Int)
            self.out = Output(Int)

        def impl(self):
            self.run_c("output { out(inp() * 2); }")

        def impl_nic(self):
            self.run_c("output { out(inp() << 1); }")

    with Program("p"):
        t = Twice()
    assert "* 2" in t.code.text and "<< 1" in t.nic_code.text


def test_callable_multi_value_arguments_in_ir() -> None:
    class add(CallableSegment):
        def configure(self):
            self.inp = Input(Int, Int)
            self.out = Output(Int)

        def impl(self):
            class Add(Element):
                def configure(self):
                    self.inp = Input(Int, Int)
                    self.out = Output(Int)

                def impl(self):
                    self.run_c("(int a, int b) = inp(); output { out(a + b); }")
            self.inp >> Add() >> self.out

    with Program("p") as p:
        add("add")
    ir = run_pipeline(p)
    seg = ir.segments["add"]
    assert seg.kind == "callable" and seg.source == "add_args"
    assert ir.node("add_args").outputs == {"out": (CType("int"), CType("int"))}


def test_segment_rejects_bad_options() -> None:
    class S(Segment):
        pass

    with Program("p"), pytest.raises(FloemError, match="cores"):
        S("s", cores=[])
    with Program("p"), pytest.raises(FloemError, match="device"):
        S("s", device="GPU")
