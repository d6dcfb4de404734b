"""lower_queues: a save per channel after the dequeue, a release after the packet."""
from __future__ import annotations

from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Program,
                   Queue, Segment, State)

from .conftest import carried, edges, Gen, run_until


class Req(State):
    key = Field(Int)
    val = Field(Int)


class Classify(Element):
    """Writes key and val, then sends the packet to ``get`` or ``set``."""

    def configure(self):
        self.inp = Input(Int)
        self.get = Output()
        self.set = Output()

    def impl(self):
        self.run_c("state->key = inp(); state->val = 1;"
                   "output switch { case state->key & 1: get(); else: set(); }")


class Put(Element):
    """Writes key."""

    def configure(self):
        self.inp = Input(Int)
        self.out = Output()

    def impl(self):
        self.run_c("state->key = inp(); output { out(); }")


class Key(Element):
    """Reads key."""

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c('printf("%d\\n", state->key);')


class Both(Element):
    """Reads key and val."""

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c('printf("%d %d\\n", state->key, state->val);')


def two_channels():
    """tx: Classify >> q.enq[0] / q.enq[1]; rx: q.deq[0] >> get, get2; q.deq[1] >> set."""
    with Program("lower") as p:
        q = Queue("q", channel=2)

        class F(Flow):
            state = PerPacket(Req)

            def impl(self):
                class Tx(Segment):
                    def impl(self):
                        c = Classify(name="classify")
                        Gen() >> c
                        c.get >> q.enq[0]
                        c.set >> q.enq[1]

                class Rx(Segment):
                    def impl(self):
                        q.deq[0] >> Key(name="get")
                        q.deq[0] >> Key(name="get2")
                        q.deq[1] >> Both(name="set")
                Tx("tx")
                Rx("rx")
        F()
    return p


def test_each_channel_gets_a_save_between_the_dequeue_and_its_targets():
    ir = run_until(two_channels(), "lower_queues")
    rx = [e for e in edges(ir) if e[0] in ("q_deq", "q_save0", "q_save1")]
    assert sorted(rx) == sorted([
        ("q_deq", "out0", "q_save0", "inp"), ("q_deq", "out1", "q_save1", "inp"),
        ("q_save0", "out", "get", "inp"), ("q_save0", "out", "get2", "inp"),
        ("q_save1", "out", "set", "inp")])
    assert [e.dst for e in ir.out_edges("q_save0")] == ["get", "get2"]    # fan-out order kept
    for c in (0, 1):
        save = ir.node(f"q_save{c}")
        assert (save.role, save.queue, save.channel, save.segment) == ("save", "q", c, "rx")
        assert save.packet_state is ir.node("q_deq").packet_state and save.packet_state.name == "Req"


def test_a_release_runs_after_the_dequeue_by_an_order_edge():
    ir = run_until(two_channels(), "lower_queues")
    assert [e for e in edges(ir, "order")] == [("q_deq", "", "q_release", "")]
    release = ir.node("q_release")
    assert (release.role, release.queue, release.segment) == ("release", "q", "rx")
    assert release.inputs == {} and release.outputs == {}


def test_segment_element_lists_hold_the_saves_after_the_dequeue_and_the_release_last():
    ir = run_until(two_channels(), "lower_queues")
    assert ir.segments["rx"].elements == ("q_deq", "q_save0", "q_save1", "get", "get2", "set",
                                          "q_release")
    assert sorted(ir.segments["tx"].elements) == ["Gen0", "classify", "q_enq0", "q_enq1"]


def test_lowering_keeps_what_each_channel_carries():
    p = two_channels()
    assert carried(run_until(p, "lower_queues"), "q") == [["key"], ["key", "val"]]


def test_each_segment_enqueuing_into_a_channel_gets_its_own_enqueue():
    with Program("two_producers") as p:
        fifo = Queue("fifo")

        class F(Flow):
            state = PerPacket(Req)

            def impl(self):
                class push_a(CallableSegment):
                    def configure(self):
                        self.inp = Input(Int)

                    def impl(self):
                        self.inp >> Put(name="put_a") >> fifo

                class push_b(CallableSegment):
                    def configure(self):
                        self.inp = Input(Int)

                    def impl(self):
                        self.inp >> Put(name="put_b") >> fifo

                class Rx(Segment):
                    def impl(self):
                        fifo >> Key(name="get")
                push_a("push_a")
                push_b("push_b")
                Rx("rx")
        F()
    ir = run_until(p, "lower_queues")
    assert ir.queues["fifo"].enqueuers == (("fifo_enq0", "fifo_enq0_push_b"),)
    assert [(u, v) for u, _, v, _ in edges(ir) if v.startswith("fifo_enq0")] == [
        ("put_a", "fifo_enq0"), ("put_b", "fifo_enq0_push_b")]
    for name, segment in (("fifo_enq0", "push_a"), ("fifo_enq0_push_b", "push_b")):
        enq = ir.node(name)
        assert (enq.role, enq.queue, enq.channel, enq.segment) == ("enqueue", "fifo", 0, segment)
        assert name in ir.segments[segment].elements
    assert carried(ir, "fifo") == [["key"]]
    assert ir.segments["rx"].elements == ("fifo_deq", "fifo_save0", "get", "fifo_release")
