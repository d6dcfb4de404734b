"""liveness: per-segment use sets of per-packet fields; dead-write and undefined-read warnings."""
from __future__ import annotations

from floem import Element, Field, Flow, Input, Int, Output, PerPacket, Program, Segment, State

from .conftest import Gen, Sink, run_until


class Packet(State):
    key = Field(Int)
    len = Field(Int)
    spare = Field(Int)


class Save(Element):
    """Writes key and spare."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c(r'''
            state->key = inp();
            state.spare = 0;
            output { out(); }
        ''')


class Use(Element):
    """Reads key and len."""

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c('printf("%d %d\\n", state->key, state.len);')


def program_with_state():
    with Program("live") as p:
        class F(Flow):
            state = PerPacket(Packet)

            def impl(self):
                class S(Segment):
                    def impl(self):
                        self.save = Save(name="save")
                        self.use = Use(name="use")
                        Gen() >> self.save >> self.use
                self.seg = S("s")
        flow = F()

        class Plain(Segment):
            def impl(self):
                Gen() >> Sink()
        Plain("plain")
    return p, flow.seg


def test_segment_uses_are_the_fields_read():
    p, _ = program_with_state()
    ir = run_until(p, "liveness")
    assert ir.segments["s"].uses == {"key", "len"}
    assert ir.segments["plain"].uses == set()
    fields = ir.node("save").info.fields
    assert (fields.uses, fields.writes) == (set(), {"key", "spare"})


def test_warnings_for_a_dead_write_and_an_undefined_read():
    p, seg = program_with_state()
    ir = run_until(p, "liveness")
    dead, undefined = sorted(ir.warnings, key=lambda w: "read by" in w)
    assert len(ir.warnings) == 2
    assert dead.startswith(f"{__file__}:{seg.save.loc.line}: per-packet field Packet.spare is "
                           "written by 'save' but never read")
    assert undefined.startswith(f"{__file__}:{seg.use.loc.line}: per-packet field Packet.len is "
                                "read by 'use'")
    assert "never written" in undefined


def test_no_warnings_when_every_field_is_written_and_read():
    class Pair(State):
        key = Field(Int)

    class Put(Element):
        def configure(self):
            self.inp = Input(Int)
            self.out = Output()

        def impl(self):
            self.run_c("state->key = inp(); output { out(); }")

    class Get(Element):
        def configure(self):
            self.inp = Input()

        def impl(self):
            self.run_c('printf("%d\\n", state->key);')

    with Program("quiet") as p:
        class F(Flow):
            state = PerPacket(Pair)

            def impl(self):
                class S(Segment):
                    def impl(self):
                        Gen() >> Put() >> Get()
                S("s")
        F()
    ir = run_until(p, "liveness")
    assert ir.segments["s"].uses == {"key"}
    assert ir.warnings == []
