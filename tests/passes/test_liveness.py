"""liveness: per-segment use sets of per-packet fields; dead-write and undefined-read warnings."""
from __future__ import annotations

import pytest

from floem import (Element, Field, Flow, Input, Int, Output, PerPacket, Pointer, Program, Queue,
                   Segment, State, Uint, run_order)

from .conftest import carried, Gen, run_until, Sink


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
    assert ir.liveness.uses["s"] == {"key", "len"}
    assert ir.liveness.uses["plain"] == set()
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
    assert ir.liveness.uses["s"] == {"key"}
    assert ir.warnings == []


def test_a_segment_reading_a_field_it_never_wrote_starts_each_packet_zeroed():
    """`read_first`: the fields some path reads before writing; only those make the
    generated code zero the per-packet state for every packet."""
    p, _ = program_with_state()
    ir = run_until(p, "liveness")
    assert ir.liveness.read_first["s"] == {"len"}     # key and spare are written first
    assert ir.liveness.read_first["plain"] == set()
    assert "reads first (zeroed per packet) len" in ir.dump()


def test_a_field_read_first_on_the_far_side_of_a_queue_is_read_first_at_the_source():
    ir = run_until(across(lambda q: Gen() >> C(text="state->key = 1; output { out(); }") >> q,
                          lambda q: q >> Leaf(text=READ_KEY + 'printf("%d", state->len);')),
                   "liveness")
    assert ir.liveness.read_first["tx"] == {"len"}    # carried, so zero when it leaves
    assert ir.liveness.read_first["rx"] == set()      # a dequeue's fields come from the entry


# -- queues ---------------------------------------------------------------------------------
# Each program below runs segment "tx" (Gen >> ... >> q) and segment "rx" (q >> ...) in one
# flow with per-packet state `Req`; `C` elements and `Leaf` leaves carry their C body as ``text=``.

class Req(State):
    key = Field(Int)
    val = Field(Int)
    len = Field(Int)


class C(Element):
    """An element given its body; ``outs`` names its output ports (untyped, as is its input)."""

    def configure(self, text, outs=("out",)):
        self.inp = Input()
        for port in outs:
            setattr(self, port, Output())
        self.text = text

    def impl(self):
        self.run_c(self.text)


class Leaf(Element):
    """A leaf given its body as ``text=``."""

    def configure(self, text):
        self.inp = Input()
        self.text = text

    def impl(self):
        self.run_c(self.text)


class Join(Element):
    """Runs once both ``a`` and ``b`` have arrived; its body reads as ``text=`` says."""

    def configure(self, text):
        self.a = Input()
        self.b = Input()
        self.text = text

    def impl(self):
        self.run_c("a(); b();" + self.text)


class Last(Element):
    """No ports: runs by ``run_order`` and reads ``len``."""

    def impl(self):
        self.run_c('printf("%d\\n", state->len);')


WRITE_ALL = "state->key = 1; state->val = 2; state->len = 3; output { out(); }"
READ_KEY = 'printf("%d\\n", state->key);'
READ_VAL = 'printf("%d\\n", state->val);'


def across(tx, rx, state_class=Req, **queue_args):
    """Segments ``tx`` (``tx(q)`` wires it) and ``rx`` around the queue ``q``."""
    with Program("live_q") as p:
        q = Queue("q", **queue_args)

        class F(Flow):
            state = PerPacket(state_class)

            def impl(self):
                class Tx(Segment):
                    def impl(self):
                        tx(q)

                class Rx(Segment):
                    def impl(self):
                        rx(q)
                Tx("tx")
                Rx("rx")
        F()
    return p


def test_a_field_written_before_and_read_after_the_queue_is_carried():
    p = across(lambda q: Gen() >> C(text=WRITE_ALL) >> q, lambda q: q >> Leaf(text=READ_KEY))
    ir = run_until(p, "liveness")
    assert carried(ir, "q") == [["key"]]


def test_a_field_only_read_before_the_queue_is_not_carried():
    def tx(q):
        read = C(text=READ_VAL + 'printf("%d\\n", state->len); output { out(); }')
        Gen() >> C(text=WRITE_ALL) >> read >> q
    ir = run_until(across(tx, lambda q: q >> Leaf(text=READ_KEY)), "liveness")
    assert carried(ir, "q") == [["key"]]
    assert ir.warnings == []


def test_a_field_overwritten_after_the_queue_before_any_read_is_not_carried():
    def rx(q):
        q >> C(text="state->val = 5; output { out(); }") >> Leaf(text=READ_KEY + READ_VAL)
    ir = run_until(across(lambda q: Gen() >> C(text=WRITE_ALL) >> q, rx), "liveness")
    assert carried(ir, "q") == [["key"]]


@pytest.mark.parametrize("write, also", [
    ("if (rand() & 1) state->val = 5; else state->val = 6;", []),
    ("switch (rand() & 3) { case 0: state->val = 5; break; default: state->val = 6; }", []),
    ("do { state->val = rand(); } while (rand() & 1);", []),
    ("if (rand() & 1) state->val = 5;", ["val"]),
    ("switch (rand() & 3) { case 0: state->val = 5; break; case 1: state->val = 6; }", ["val"]),
    ("for (int i = rand(); i > 0; i--) state->val = i;", ["val"]),
])
def test_a_field_written_on_every_path_after_the_queue_is_not_carried(write, also):
    """Written on every path through the element after the queue (both branches of an if,
    every case of a switch with a default) before it is read: the entries need not carry
    it. Written on some paths only (one branch, a loop that may not run): they do."""
    def rx(q):
        q >> C(text=write + " output { out(); }") >> Leaf(text=READ_KEY + READ_VAL)
    ir = run_until(across(lambda q: Gen() >> C(text=WRITE_ALL) >> q, rx), "liveness")
    assert carried(ir, "q") == [["key"] + also]


def test_two_channels_carry_different_fields_in_layout_order():
    def tx(q):
        split = C(text="state->key = 1; state->val = 2; state->len = 3;"
                  "output switch { case rand() & 1: get(); else: set(); }", outs=("get", "set"))
        Gen() >> split
        split.get >> q.enq[0]
        split.set >> q.enq[1]

    def rx(q):
        q.deq[0] >> Leaf(text=READ_KEY)
        q.deq[1] >> Leaf(text='printf("%d %d\\n", state->len, state->val);')
    ir = run_until(across(tx, rx, channel=2), "liveness")
    assert carried(ir, "q") == [["key"], ["val", "len"]]


def test_fields_read_after_a_fan_out_and_a_join_on_the_receiving_side_are_carried():
    def rx(q):
        join = Join(text='printf("%d\\n", state->len);')
        q >> C(text=READ_KEY + "output { out(); }") >> join.a
        q >> C(text="output { out(); }") >> join.b
    ir = run_until(across(lambda q: Gen() >> C(text=WRITE_ALL) >> q, rx), "liveness")
    assert carried(ir, "q") == [["key", "len"]]


def test_a_field_read_by_a_run_order_successor_is_carried():
    def rx(q):
        leaf = Leaf(text=READ_KEY)
        q >> leaf
        run_order(leaf, Last())
    ir = run_until(across(lambda q: Gen() >> C(text=WRITE_ALL) >> q, rx), "liveness")
    assert carried(ir, "q") == [["key", "len"]]


def test_a_field_read_on_one_branch_after_the_queue_is_carried():
    def rx(q):
        branch = C(text="output switch { case rand() & 1: a(); else: b(); }", outs=("a", "b"))
        q >> branch
        branch.a >> Leaf(text=READ_VAL)
        branch.b >> Leaf(text="(void)0;")
    ir = run_until(across(lambda q: Gen() >> C(text=WRITE_ALL) >> q, rx), "liveness")
    assert carried(ir, "q") == [["val"]]


def test_liveness_through_a_cycle_of_channels_converges():
    """rx: channel 0 -> step -> channel 1 -> last -> back into channel 0 (or done)."""
    def rx(q):
        step = C(text="state->len = state->key; output { out(); }")
        last = C(text='printf("%d %d\\n", state->len, state->val);'
                      "output switch { case rand() & 1: again(); else: done(); }",
                 outs=("again", "done"))
        q.deq[0] >> step >> q.enq[1]
        q.deq[1] >> last
        last.again >> q.enq[0]
        last.done >> Leaf(text="(void)0;")

    def tx(q):
        Gen() >> C(text=WRITE_ALL) >> q.enq[0]
    ir = run_until(across(tx, rx, channel=2), "liveness")
    # key reaches channel 1 only because last may send the packet round again
    assert carried(ir, "q") == [["key", "val"], ["key", "val", "len"]]
    assert ir.queues["q"].enqueuers[0] == ("q_enq0", "q_enq0_rx")


def test_a_segment_that_dequeues_and_enqueues_into_the_same_channel_converges():
    def rx(q):
        again = C(text="state->val++;"
                       "output switch { case state->val < 3: again(); else: done(); }",
                  outs=("again", "done"))
        q >> again
        again.again >> q
        again.done >> Leaf(text=READ_KEY)
    ir = run_until(across(lambda q: Gen() >> C(text=WRITE_ALL) >> q, rx), "liveness")
    assert carried(ir, "q") == [["key", "val"]]


class Message(State):
    qid = Field(Int)
    len = Field(Int)
    data = Field(Pointer(Uint(8)), size="state->len")
    spare = Field(Int)


def test_qid_and_variable_size_lengths_are_used_by_the_enqueue():
    write = ("static uint8_t bytes[4]; state->qid = 0; state->len = 4; state->spare = 1;"
             "state->data = bytes; output { out(); }")
    read = 'printf("%d\\n", state->data[0]);'
    p = across(lambda q: Gen() >> C(text=write, name="write") >> q, lambda q: q >> Leaf(text=read),
               state_class=Message)
    ir = run_until(p, "liveness")
    assert ir.node("q_enq0").info.fields.uses == {"qid"}
    assert ir.size_uses["Message"] == {"data": {"len"}}     # read when data is sent
    assert carried(ir, "q") == [["data"]]
    assert ir.liveness.uses["tx"] == {"qid", "len", "data"}
    assert ir.liveness.uses["rx"] == {"data"}
    assert [w for w in ir.warnings if "written by 'write'" in w] == [
        f"{__file__}:{ir.node('write').loc.line}: per-packet field Message.spare is written by "
        "'write' but never read afterwards"]


def test_a_size_expression_is_read_only_where_its_field_is_sent():
    write = "state->qid = 0; output { out(); }"        # len and data never written here
    p = across(lambda q: Gen() >> C(text=write, name="write") >> q,
               lambda q: q >> Leaf(text='printf("%d\\n", state->qid);'), state_class=Message)
    ir = run_until(p, "liveness")
    assert carried(ir, "q") == [["qid"]]
    assert ir.liveness.uses["tx"] == {"qid"}
    assert not [w for w in ir.warnings if "Message.len" in w]


def test_per_segment_uses_on_both_sides_of_a_queue():
    def tx(q):
        Gen() >> C(text=WRITE_ALL) >> C(text='printf("%d\\n", state->len); output { out(); }') >> q
    ir = run_until(across(tx, lambda q: q >> Leaf(text=READ_KEY)), "liveness")
    assert ir.liveness.uses["tx"] == {"len", "key"}      # read before, sent through q
    assert ir.liveness.uses["rx"] == {"key"}


def test_warnings_across_a_queue():
    p = across(lambda q: Gen() >> C(text="state->key = 1; state->val = 2; output { out(); }",
                                    name="write") >> q,
               lambda q: q >> Leaf(text=READ_KEY + 'printf("%d\\n", state->len);', name="read"))
    ir = run_until(p, "liveness")
    write, read = ir.node("write").loc.line, ir.node("read").loc.line
    assert sorted(ir.warnings) == sorted([
        f"{__file__}:{write}: per-packet field Req.val is written by 'write' but never read "
        "afterwards",
        f"{__file__}:{read}: per-packet field Req.len is read by 'read' on a path where it was "
        "never written"])


def test_a_field_written_on_one_branch_before_a_merge_is_reported():
    def tx(q):
        branch = C(text="state->key = 1; output switch { case rand() & 1: a(); else: b(); }",
                   outs=("a", "b"))
        Gen() >> branch
        branch.a >> C(text="state->val = 2; output { out(); }") >> q
        branch.b >> C(text="output { out(); }") >> q

    def rx(q):
        q >> Leaf(text=READ_KEY + READ_VAL, name="read")
    ir = run_until(across(tx, rx), "liveness")
    assert carried(ir, "q") == [["key", "val"]]
    assert ir.warnings == [
        f"{__file__}:{ir.node('read').loc.line}: per-packet field Req.val is read by 'read' on "
        "a path where it was never written"]


def test_a_field_written_by_only_one_of_two_producers_is_reported():
    with Program("producers") as p:
        q = Queue("q")

        class F(Flow):
            state = PerPacket(Req)

            def impl(self):
                class A(Segment):
                    def impl(self):
                        Gen() >> C(text="state->key = 1; state->val = 2; output { out(); }") >> q

                class B(Segment):
                    def impl(self):
                        Gen() >> C(text="state->key = 1; output { out(); }") >> q

                class Rx(Segment):
                    def impl(self):
                        q >> Leaf(text=READ_KEY + READ_VAL, name="read")
                A("a")
                B("b")
                Rx("rx")
        F()
    ir = run_until(p, "liveness")
    assert ir.queues["q"].enqueuers == (("q_enq0", "q_enq0_b"),)
    assert carried(ir, "q") == [["key", "val"]]
    assert ir.warnings == [
        f"{__file__}:{ir.node('read').loc.line}: per-packet field Req.val is read by 'read' on "
        "a path where it was never written"]


def test_a_join_sees_the_fields_written_on_each_of_its_inputs():
    """Both inputs of a join arrive before it runs: a write on either branch reaches it."""

    def rx(q):
        join = Join(text=READ_KEY + READ_VAL)
        q >> C(text="state->val = 2; output { out(); }") >> join.a
        q >> C(text="output { out(); }") >> join.b

    def tx(q):
        Gen() >> C(text="state->key = 1; output { out(); }") >> q
    ir = run_until(across(tx, rx), "liveness")
    assert ir.warnings == []
