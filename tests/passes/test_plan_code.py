"""plan_code: the choices the generated C depends on, recorded in the IR and shown in dumps."""
from __future__ import annotations

import pytest

from floem import (Element, Field, Flow, Input, Int, Output, PerPacket, Program, Queue, Segment,
                   State, main, target)
from floem.codegen.emit import generate
from floem.ir import Device, Home
from floem.library import Counter, Counts
from floem.passes.plan_code import INLINE_DEPTH, LONG_SEGMENT, UNIT_ELEMENTS

from .conftest import Sink, run_until
from .test_place_memory import program


def test_a_nic_end_of_a_host_queue_goes_through_the_sync_layer_with_a_manager_core():
    ir = run_until(program(main_reads=False), "plan_code")
    nic, host = ir.plan.processes["nic"], ir.plan.processes[ir.placement.main]
    q = ir.queue_home("q")
    assert (q.home, q.deq_device) == (Home.HOST, Device.NIC)
    assert nic.managers == 1 and not nic.threads_manage
    assert nic.queues["q"].synced and nic.queues["q"].dequeues and not nic.queues["q"].counts
    # the host enqueues directly; with a NIC consumer, the host side prints the counters
    assert not host.queues["q"].synced and host.queues["q"].enqueues and host.queues["q"].counts
    assert host.managers == 0


def test_without_manager_cores_nic_threads_manage_the_sync_layer():
    ir = run_until(program(main_reads=False), "plan_code", nic_managers=0)
    nic = ir.plan.processes["nic"]
    assert nic.managers == 0 and nic.threads_manage
    assert nic.queues["q"].manage_inline and nic.queues["q"].shared_shadow


def test_a_queue_between_nic_segments_needs_no_manager():
    ir = run_until(program(main_reads=False, enq_nic=True), "plan_code")
    nic = ir.plan.processes["nic"]
    assert ir.queue_home("q").home == Home.NIC
    assert nic.managers == 0 and not nic.queues["q"].synced and nic.queues["q"].counts


def test_element_plans_lower_bodies_and_name_the_states_they_use():
    ir = run_until(program(main_reads=False), "plan_code")
    user = next(ir.element_plan(n.name) for n in ir.nodes()
                if n.cls_name == "Use" and n.segment == "rx")
    assert user.pointers == ("counts",) and "(void)counts;" in user.body
    assert user.body.startswith("#line ")
    tx_source = ir.element_plan(ir.segments["tx"].source)
    assert tx_source.thread_source and not tx_source.emits_packets
    assert ir.plan.main_body is not None and "(void)shared;" in ir.plan.main_body


class Msg(State):
    qid = Field(Int)
    v = Field(Int)


class Emit(Element):
    def configure(self):
        self.out = Output()

    def impl(self):
        self.run_c("state->qid = 0; state->v = 1; output { out(); }")


class Show(Element):
    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c('printf("%d\\n", state->v);')


def test_an_enqueue_steers_by_qid_and_a_connected_full_port_is_planned():
    with Program("plan_qid") as p:
        q = Queue("q", inst=2, lossless=False)

        class F(Flow):
            state = PerPacket(Msg)

            def impl(self):
                class Tx(Segment):
                    def impl(self):
                        Emit() >> q
                        q.full >> Show()

                class Rx(Segment):
                    def impl(self):
                        q >> Show()
                Tx("tx")
                Rx("rx", device=target.NIC)
        F()
    ir = run_until(p, "plan_code")
    enq = next(n for n in ir.nodes() if n.role == "enqueue")
    assert ir.element_plan(enq.name).steers_by_qid and ir.element_plan(enq.name).full_port
    assert "steers by qid; full port" in ir.dump()
    assert "queue q: dequeues through the sync layer" in ir.dump()


class Pass(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("int x = inp(); output { out(x + 1); }")


class Source(Element):
    def configure(self):
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(0); }")


def test_a_long_chain_is_cut_into_out_of_line_functions_every_inline_depth_elements():
    """gcc inlining a chain whole nests it as deep as it is long (seconds and gigabytes to
    compile at 1,000 elements); in a segment longer than LONG_SEGMENT, every INLINE_DEPTH-th
    element is kept out of line."""
    with Program("plan_chain") as p:
        class Chain(Segment):
            def impl(self):
                x = Source()
                for _ in range(LONG_SEGMENT + 10):
                    x = x >> Pass()
        Chain("chain")
    ir = run_until(p, "plan_code")
    elements = ir.segments["chain"].elements
    outlined = [i for i, e in enumerate(elements) if ir.element_plan(e).out_of_line]
    assert outlined == list(range(INLINE_DEPTH, LONG_SEGMENT + 11, INLINE_DEPTH))
    assert "out of line" in ir.dump()


def test_a_short_segment_is_left_to_the_compiler_to_inline():
    with Program("plan_short") as p:
        class Chain(Segment):
            def impl(self):
                x = Source()
                for _ in range(LONG_SEGMENT - 1):
                    x = x >> Pass()
        Chain("chain")
    ir = run_until(p, "plan_code")
    assert len(ir.segments["chain"].elements) == LONG_SEGMENT
    assert not any(ir.element_plan(e).out_of_line for e in ir.segments["chain"].elements)


class Burst(Element):
    """Source: three packets per run, the state left alone (or, ``marks``, written)."""

    def configure(self, marks=False):
        self.marks = marks
        self.out = Output(Int)

    def impl(self):
        mark = "state->v = i; " if self.marks else ""
        self.run_c(f"output multiple; for (int i = 0; i < 3; i++) {{ {mark}out(i); }}")


class SetV(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c("state->v = inp(); output { out(); }")


def burst_program(name, marks=False, writes_first=True, **options):
    with Program(name) as p:
        class F(Flow):
            state = PerPacket(Msg)

            def impl(self):
                class S(Segment):
                    def impl(self):
                        src = Burst(marks=marks)
                        if writes_first:
                            src >> SetV() >> Show()
                        else:
                            src >> Show()
                S("s")
        F()
    return run_until(p, "plan_code", **options)


def test_a_source_that_never_touches_the_state_gives_each_packet_a_local_state():
    """Each packet a packet source emits gets a state of its own in the output port's
    function, which the C compiler keeps in registers; the thread keeps none."""
    ir = burst_program("plan_fresh")
    source = ir.node(ir.segments["s"].source)
    assert ir.element_plan(source.name).emits_packets and ir.element_plan(source.name).fresh_state
    assert "its state a local of the port" in ir.dump()


def test_a_source_writing_the_state_or_a_field_read_first_keeps_the_threads_state():
    writes = burst_program("plan_marks", marks=True)
    assert not writes.element_plan(writes.segments["s"].source).fresh_state
    unwritten = burst_program("plan_read_first", writes_first=False)
    assert unwritten.liveness.read_first["s"] == {"v"}
    assert not unwritten.element_plan(unwritten.segments["s"].source).fresh_state
    every = burst_program("plan_send_all", send_all_fields=True)    # queues copy every field
    assert not every.element_plan(every.segments["s"].source).fresh_state


class Leave(Element):
    """Sends its packet on unless it returns first."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("int x = inp(); if (x < 0) return; output { out(x); }")


def test_a_port_every_run_sends_on_once_has_no_counter_of_its_own():
    """Pass sends every packet on exactly once: its port counts what its input counts (the
    source's port), and the element after it is fed by that counter; Leave may return before
    its output block, so its port is counted."""
    with Program("plan_once") as p:
        class S(Segment):
            def impl(self):
                Source() >> Pass() >> Leave() >> Pass()
        S("s")
    ir = run_until(p, "plan_code")
    source, first, leave, last = (ir.node(e) for e in ir.segments["s"].elements)
    counted = {n.name: ir.element_plan(n.name).counters for n in (source, first, leave, last)}
    assert counted[source.name].outs == (("out", 0),)
    assert counted[first.name].outs == (("out", None),) and counted[first.name].fed_by == (0,)
    assert counted[leave.name].fed_by == (0,) and counted[leave.name].outs == (("out", 1),)
    assert counted[last.name].fed_by == (1,)
    layout = ir.plan.processes[ir.placement.main].counter_layout
    assert f"{first.name} s +0 ~ out:*\n" in layout and f"{leave.name} s +0 ~ out:1\n" in layout
    assert "out = in" in ir.dump()


class Sign(Element):
    """An output switch: with ``otherwise``, every run sends the packet on one port."""

    def configure(self, otherwise=True):
        self.inp = Input(Int)
        self.pos = Output(Int)
        self.neg = Output(Int)
        self.otherwise = otherwise

    def impl(self):
        last = "else: neg(x);" if self.otherwise else "case x < 0: neg(x);"
        self.run_c(f"int x = inp(); output switch {{ case x >= 0: pos(x); {last} }}")


def test_a_switch_with_an_else_case_ends_no_packet():
    """Read live, in minus out would count the packet inside the switch as ended: its
    layout says it ends none. Without an else case a packet may go nowhere (x = 0 here is
    sent, but the analysis does not know), so in minus out it stays."""
    with Program("plan_switch") as p:
        class S(Segment):
            def impl(self):
                sign, partial = Sign(), Sign(otherwise=False)
                Source() >> sign
                sign.pos >> partial
                sign.neg >> Pass()
        S("s")
    ir = run_until(p, "plan_code")
    sign, partial = ir.node("Sign0"), ir.node("Sign1")
    layout = ir.plan.processes[ir.placement.main].counter_layout
    assert ir.element_plan(sign.name).counters.never_ends
    assert f"{sign.name} s +0 0 pos:1,neg:2\n" in layout
    assert "pos 1, neg 2, ends none" in ir.dump()
    assert not ir.element_plan(partial.name).counters.never_ends
    assert f"{partial.name} s +1 ~ " in layout


def counting(name, threads=1, second_segment=False, main_code=None):
    """A segment of ``threads`` threads counting packets into one `Counts` state ``hits``
    with the library's `Counter`; ``second_segment``: another segment counts into it too;
    ``main_code``: the ``floem.main`` code."""
    with Program(name) as p:
        hits = Counts("hits")

        class S(Segment):
            def impl(self):
                Source() >> Counter(configure=[Int], states=[hits]) >> Pass()
        S("s", cores=list(range(threads)))
        if second_segment:
            S("t")
        if main_code is not None:
            main(main_code)
    return run_until(p, "plan_code")


def counters(ir):
    return [n for n in ir.nodes() if n.cls_name == "Counter"]


def test_the_only_writer_of_its_states_adds_to_them_plainly():
    """One thread runs the only element naming the state: `floem_add` needs no locked
    instruction (a few nanoseconds a packet), and the dump says why."""
    ir = counting("plan_alone")
    [c] = counters(ir)
    assert ir.element_plan(c.name).alone and "its states' only writer" in ir.dump()


def test_several_writers_of_a_state_add_to_it_atomically():
    for ir in (counting("plan_two_threads", threads=2),
               counting("plan_two_segments", second_segment=True),
               counting("plan_main_adds", main_code="floem_add(&hits->packets, 1);")):
        assert counters(ir), ir.name
        assert not any(ir.element_plan(c.name).alone for c in counters(ir)), ir.name
        assert "only writer" not in ir.dump()


@pytest.mark.parametrize("code, alone", [
    ('printf("%lu\\n", (unsigned long)hits->packets);', True),
    ("unsigned long seen = hits->packets + hits->bytes; (void)seen;", True),
    ("hits->packets = 0;", False),
    ("hits->packets++;", False),
    ("hits->bytes += 2;", False),
    ("unsigned long *p = &hits->packets; (void)p;", False),
    ("reset(hits);", False),
])
def test_main_reading_a_counter_leaves_its_element_the_only_writer(code, alone):
    """``floem.main`` code that only reads a counter does not make its element's
    ``floem_add`` atomic; code that may write it (assigns, increments, takes its address,
    passes the state on) does."""
    ir = counting("plan_main_reads", main_code=code)
    [c] = counters(ir)
    assert ir.element_plan(c.name).alone == alone
    source = "".join(f.text for f in generate(ir) if f.name.endswith(".c"))
    assert ("enum { floem_alone = 1 };" in source) == alone



class Pair(Element):
    """Never reads its input port (a port need not be read)."""

    def configure(self):
        self.inp = Input(Int, Int)
        self.out = Output(Int)

    def impl(self):
        self.run_c("output { out(0); }")


class Two(Element):
    def configure(self):
        self.out = Output(Int, Int)

    def impl(self):
        self.run_c("output { out(1, 2); }")


def test_the_values_a_body_never_reads_are_planned_unused_and_cast_to_void():
    with Program("plan_unused") as p:
        class Chain(Segment):
            def impl(self):
                Two() >> Pair(name="pair") >> Sink()
        Chain("chain")
    ir = run_until(p, "plan_code")
    assert ir.element_plan("pair").unused == ("inp_0", "inp_1")
    sink = next(n for n in ir.segments["chain"].elements if ir.node(n).cls_name == "Sink")
    assert ir.element_plan(sink).unused == ()                  # inp(): read, and thrown away
    assert "never reads inp_0, inp_1" in ir.dump()
    c = next(f.text for f in generate(ir) if f.name.endswith(".c"))
    assert "(void)inp_1;" in c


def long_chain(name: str, length: int, include_text: str = "") -> Program:
    """A thread segment: a source and ``length`` elements passing its packets on."""
    with Program(name) as p:
        if include_text:
            p.include(include_text)

        class Chain(Segment):
            def impl(self):
                x = Source()
                for _ in range(length):
                    x = x >> Pass()
        Chain("chain")
    return p


def test_a_large_process_is_compiled_in_units_that_call_each_other_across():
    """A process of more than UNIT_ELEMENTS elements: translation units of at most that many
    (a long segment in parts); an element called from another unit is marked so, and
    declared only in the unit that calls it."""
    ir = run_until(long_chain("plan_units", 2 * UNIT_ELEMENTS + 9), "plan_code")
    units = ir.plan.processes["plan_units"].units
    elements = ir.segments["chain"].elements
    assert [len(u) for u in units] == [UNIT_ELEMENTS, UNIT_ELEMENTS, 10]
    assert sum(units, ()) == elements
    shared = [i for i, e in enumerate(elements) if ir.element_plan(e).shared]
    assert shared == [UNIT_ELEMENTS, 2 * UNIT_ELEMENTS]
    assert all(ir.element_plan(elements[i]).out_of_line for i in shared)
    assert ir.plan.processes["plan_units"].imports == ((elements[UNIT_ELEMENTS],),
                                                       (elements[2 * UNIT_ELEMENTS],), ())
    assert "3 translation units of 256, 256, 10 elements" in ir.dump()
    assert "called from another unit" in ir.dump()


def test_include_text_defining_data_keeps_one_unit():
    """What floem.include defines once in a program (data it may write, a function with
    external linkage) would be defined once per unit: such a program stays one unit; static
    constant data and static or inline functions do not matter."""
    harmless = ("static const int table[2] = {1, 2};\n"
                "static inline int twice(int x) { return 2 * x; }\n"
                "extern int elsewhere;\n")
    ir = run_until(long_chain("plan_harmless", UNIT_ELEMENTS + 1, harmless), "plan_code")
    assert len(ir.plan.processes["plan_harmless"].units) == 2
    once = harmless + "static int seen;\nint helper(void) { return seen; }\n"
    ir = run_until(long_chain("plan_once", UNIT_ELEMENTS + 1, once), "plan_code")
    plan = ir.plan.processes["plan_once"]
    assert len(plan.units) == 1 and plan.one_unit_for == ("seen", "helper")
    assert "one translation unit: floem.include defines seen, helper" in ir.dump()
