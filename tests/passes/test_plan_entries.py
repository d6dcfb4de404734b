"""plan_entries: each queue channel's entry layout, with room for its variable-size fields:
a bounded field's ``max_size``, and 256 bytes shared by the unbounded ones."""
from __future__ import annotations

import pytest

from floem import (Element, Field, Flow, Input, Int, Output, PerPacket, Pointer, Program, Queue,
                   Segment, State, Uint)
from floem.codegen.emit import generate
from floem.errors import FloemError
from floem.passes.plan_entries import ALIGNMENT, DEFAULT_VARIABLE_BYTES

from .conftest import Gen, run_until


class Message(State):
    key = Field(Pointer(Uint(8)), size="state->keylen", max_size=40)
    keylen = Field(Uint(16))
    val = Field(Pointer(Uint(8)), size="state->vallen")
    vallen = Field(Uint(32))


class Fill(Element):
    """Points key and, with ``val``, val at bytes of its own."""

    def __init__(self, val: bool, **kwargs) -> None:
        self.val = val
        super().__init__(**kwargs)

    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        val = 'state->val = (uint8_t *)"v"; state->vallen = 1; ' if self.val else ""
        self.run_c(f'inp(); static uint8_t k[40]; state->key = k; state->keylen = 40; {val}'
                   'output { out(); }')


class Read(Element):
    """Reads what crossed: key and, with ``val``, val."""

    def __init__(self, val: bool, **kwargs) -> None:
        self.val = val
        super().__init__(**kwargs)

    def configure(self):
        self.inp = Input()

    def impl(self):
        val = "(void)state->val[0];" if self.val else ""
        self.run_c(f"(void)state->key[0]; {val}")


def program(val: bool) -> Program:
    with Program(f"entries_{val}") as p:
        q = Queue("q")

        class F(Flow):
            state = PerPacket(Message)

            def impl(self):
                class Tx(Segment):
                    def impl(self):
                        Gen() >> Fill(val) >> q.enq

                class Rx(Segment):
                    def impl(self):
                        q.deq >> Read(val)
                Tx("tx")
                Rx("rx")
        F()
    return p


def test_a_bounded_field_keeps_its_largest_size() -> None:
    ir = run_until(program(val=False), "plan_entries")
    (entry,) = ir.entry_layouts.entries["q"]
    assert [(v.name, v.room) for v in entry.variable] == [("key", 40)]
    assert entry.variable_room == 40 + ALIGNMENT
    assert "key (40 bytes)" in ir.dump()


def test_unbounded_fields_share_the_default_room_beside_the_bounded() -> None:
    ir = run_until(program(val=True), "plan_entries")
    (entry,) = ir.entry_layouts.entries["q"]
    assert [(v.name, v.room) for v in entry.variable] == [("key", 40), ("val", 0)]
    assert entry.variable_room == DEFAULT_VARIABLE_BYTES + 40 + 2 * ALIGNMENT
    c = next(f.text for f in generate(run_until(program(val=True), "plan_code"))
             if f.name.endswith(".c"))
    assert f"sizeof(struct q_entry0) + {entry.variable_room}" in c


@pytest.mark.parametrize("size, max_size, message", [
    (None, 8, "only a variable-size field"),
    ("state->n", -1, "an int of 0 or more"),
    ("state->n", 8.5, "an int of 0 or more"),
    ("state->n", True, "an int of 0 or more"),
])
def test_a_largest_size_is_bytes_of_a_variable_size_field(size: str | None, max_size: object,
                                                          message: str) -> None:
    with pytest.raises(FloemError, match=message) as caught:
        Field(Pointer(Uint(8)), size=size, max_size=max_size)
    assert caught.value.line is not None
