"""expand_caches: cache points become lookup / fill / update / set_end with the policy's edges."""
from __future__ import annotations

import pytest

from floem import (Cache, Element, Field, Flow, FloemError, Input, Int, Output, PerPacket, Program,
                   Queue, Segment, State)

from .conftest import run_until


class KV(State):
    key = Field(Int)
    val = Field(Int)
    qid = Field(Int)


class Src(Element):
    def configure(self):
        self.get = Output()
        self.set = Output()

    def impl(self):
        self.run_c("output switch { case rand() & 1: get(); else: set(); }")


class Step(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output()

    def impl(self):
        self.run_c("output { out(); }")


class Leaf(Element):
    def configure(self):
        self.inp = Input()


def one_segment(policy: str, write_miss: str) -> Program:
    with Program(f"c_{policy}_{write_miss}") as p:
        c = Cache("c", key="key", val="val", policy=policy, write_miss=write_miss)

        class F(Flow):
            state = PerPacket(KV)

            def impl(self):
                class S(Segment):
                    def impl(self):
                        src = Src()
                        src.get >> c.get_start >> Step(name="fetch") >> c.get_end >> Leaf(name="got")
                        src.set >> c.set_start >> Step(name="store") >> c.set_end >> Leaf(name="put")
                S("s")
        F()
    return p


def out_edges(ir, name):
    return sorted((e.out_port, e.dst) for e in ir.out_edges(name))


@pytest.mark.parametrize("policy", [Cache.WRITE_THROUGH, Cache.WRITE_BACK])
@pytest.mark.parametrize("write_miss", [Cache.WRITE_ALLOC, Cache.NO_WRITE_ALLOC])
def test_points_take_their_roles_and_shortcuts(policy, write_miss):
    ir = run_until(one_segment(policy, write_miss), "expand_caches")
    assert ir.node("c_get_start").role == "cache_lookup"
    assert out_edges(ir, "c_get_start") == [("hit", "got"), ("miss", "fetch")]
    assert out_edges(ir, "c_get_end") == [("out", "got")]
    assert ir.node("c_set_start").role == "cache_update"
    expected = [("region", "store")]
    if policy == Cache.WRITE_BACK:
        expected = [("done", "put"), ("region", "store")]     # the region: evictions (and misses)
    assert out_edges(ir, "c_set_start") == expected
    assert ir.node("c_set_end").role == "cache_set_end"
    cache = ir.caches["c"]
    assert cache.get_region == ("fetch",) and cache.set_region == ("store",)


def test_the_state_gains_the_hidden_fields():
    ir = run_until(one_segment(Cache.WRITE_BACK, Cache.WRITE_ALLOC), "expand_caches")
    fields = [f.name for f in ir.node("fetch").packet_state.fields]
    assert fields == ["key", "val", "qid", "_c_version", "_c_evict"]
    assert ir.node("fetch").packet_state.name == "KV"
    assert [s for s in ir.layouts if s.name == "KV"] == [ir.node("fetch").packet_state]
    assert [f.name for f in KV.fields()] == ["key", "val", "qid"]      # the user's class is untouched


def test_liveness_carries_the_version_from_lookup_to_fill():
    ir = run_until(one_segment(Cache.WRITE_BACK, Cache.WRITE_ALLOC), "liveness")
    assert "_c_version" in ir.node("c_get_end").info.fields.uses
    assert "_c_version" in ir.node("c_get_start").info.fields.kills


def queued(inst_to: int, inst_back: int) -> Program:
    with Program(f"q_{inst_to}_{inst_back}") as p:
        c = Cache("c", key="key", val="val", policy=Cache.WRITE_BACK)
        to = Queue("to", channel=2, inst=inst_to)
        back = Queue("back", channel=2, inst=inst_back)

        class F(Flow):
            state = PerPacket(KV)

            def impl(self):
                class Front(Segment):
                    def impl(self):
                        src = Src()
                        src.get >> c.get_start >> to.enq[0]
                        src.set >> c.set_start >> to.enq[1]

                class Store(Segment):
                    def impl(self):
                        to.deq[0] >> Step() >> back.enq[0]
                        to.deq[1] >> Step() >> back.enq[1]

                class Back(Segment):
                    def impl(self):
                        back.deq[0] >> c.get_end >> Leaf()
                        back.deq[1] >> c.set_end >> Leaf()
                Front("front")
                Store("store")
                Back("back_seg")
        F()
    return p


def test_misses_and_evictions_are_steered_over_the_instances():
    ir = run_until(queued(2, 2), "place_memory")
    assert ir.caches["c"].steer_instances == 2
    assert "qid" in ir.node("c_get_start").info.fields.writes
    # a fill's eviction is not sent from get_end's segment (back_seg, which drains "back":
    # it could wait forever for room in "to") but left to set_start's, the only producer
    assert ir.caches["c"].defer_fill_evictions
    assert not ir.queue_home("to").multi_producer
    assert "fills defer their write-backs to set_start's segment" in ir.dump()


def test_fills_on_set_starts_segment_write_back_themselves():
    with Program("one_segment") as p:
        c = Cache("c", key="key", val="val", policy=Cache.WRITE_BACK)

        class F(Flow):
            state = PerPacket(KV)

            def impl(self):
                class All(Segment):
                    def impl(self):
                        src = Src()
                        src.get >> c.get_start >> Step() >> c.get_end >> Leaf()
                        src.set >> c.set_start >> Step() >> c.set_end >> Leaf()
                All("all")
        F()
    assert not run_until(p, "expand_caches").caches["c"].defer_fill_evictions


def test_queues_with_different_instance_counts_are_rejected():
    with pytest.raises(FloemError, match="different numbers of instances"):
        run_until(queued(2, 3), "expand_caches")


def test_steering_can_be_turned_off_only_by_the_diagnostic_option():
    ir = run_until(queued(2, 2), "expand_caches", cache_steering=False)
    assert ir.caches["c"].steer_instances == 0
