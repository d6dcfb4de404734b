"""Sizes and offsets of states (floem/ir/sizes.py) are those gcc gives the structs the
compiler declares: the bytes a typed packet's members reach decide what crosses a queue."""
from __future__ import annotations

import subprocess

from floem import (Array, Element, Field, Flow, Input, Output, PerPacket, Pointer, Program, Queue,
                   Segment, State, Uint)
from floem.ir.sizes import packet_view, state_size
from floem.templates import render

from .conftest import run_until


class Bytes3(State):
    """Packed (the default): 3 bytes, aligned to 1."""

    x = Field(Uint(16))
    y = Field(Uint(8))


class Aligned(State):
    """Not packed: 8 bytes, aligned to 4."""

    x = Field(Uint(32))
    y = Field(Uint(8))
    packed = False


class Either(State):
    """A union, not packed: 6 bytes, aligned to 2."""

    w = Field(Array(Uint(16), 3))
    b = Field(Uint(8))
    union = True
    packed = False


class Loose(State):
    """Not packed, holding a packed state (at offset 1, not 3) and states aligned to 4 and 2."""

    a = Field(Uint(8))
    n = Field(Bytes3)
    b = Field(Uint(8))
    m = Field(Aligned)
    c = Field(Uint(8))
    e = Field(Either)
    packed = False


class Tight(State):
    """Packed, holding a state that is not packed (at offset 1, its padding kept)."""

    a = Field(Uint(8))
    loose = Field(Loose)
    z = Field(Uint(32))


class Pkt(State):
    plen = Field(Uint(16))
    pkt = Field(Pointer(Tight), size="state->plen")


class Make(Element):
    def configure(self) -> None:
        self.out = Output()

    def impl(self) -> None:
        self.run_c("state->plen = sizeof *state->pkt; output { out(); }")


class Read(Element):
    def configure(self) -> None:
        self.inp = Input()

    def impl(self) -> None:
        self.run_c("inp(); if (state->pkt->z) {}")


def _program() -> Program:
    with Program("sizes") as p:
        class F(Flow):
            state = PerPacket(Pkt)

            def impl(self) -> None:
                q = Queue("q", size=4)

                class S(Segment):
                    def impl(self) -> None:
                        Make() >> q

                class T(Segment):
                    def impl(self) -> None:
                        q >> Read()
                S("s")
                T("t")
        F()
    return p


def test_member_offsets_and_sizes_are_what_gcc_lays_out(tmp_path):
    ir = run_until(_program(), "parse_bodies")
    names = ("Bytes3", "Aligned", "Either", "Loose", "Tight")
    layouts = [s for s in ir.layouts if s.name in names]
    view = packet_view(next(s for s in layouts if s.name == "Tight"))
    ours = {".".join(path): m.offset for path, m in view.members.items()}
    ours.update({f"sizeof {s.name}": state_size(s) for s in layouts})
    ours["sizeof view"] = view.size
    prints = [f'printf("%s %zu\\n", "{path}", offsetof(Tight, {path}));'
              for path in ours if not path.startswith("sizeof")]
    prints += [f'printf("%s %zu\\n", "sizeof {s.name}", sizeof({s.name}));' for s in layouts]
    prints.append('printf("%s %zu\\n", "sizeof view", sizeof(Tight));')
    source = tmp_path / "sizes.c"
    source.write_text("#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n"
                      + render("declarations.h.j2", layouts=layouts) + "int main(void)\n{\n    "
                      + "\n    ".join(prints) + "\n    return 0;\n}\n")
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", "-o", str(tmp_path / "sizes"),
                    str(source)], check=True)
    out = subprocess.run([str(tmp_path / "sizes")], capture_output=True, text=True,
                         check=True).stdout
    gcc = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in out.splitlines()}
    assert ours == gcc
    assert gcc["loose.n"] == 2 and gcc["loose.m"] == 9 and gcc["sizeof Loose"] == 24
