"""Cutting target.AUTO segments: every cut of small graphs against a hand count, the reason
each invalid one is rejected, and what a cut makes (segments, queues, carried values)."""
from __future__ import annotations

import pytest

from floem import (Element, Field, FloemError, Flow, Input, Int, Output, PerPacket, Persistent,
                   Pointer, Program, Segment, State, Uint, cut, target)
from floem.ir import Cut, Device, Role
from floem.place import cuts
from floem.place.cuts import candidates, segment_order

from .conftest import carried, Gen, Inc, Sink, here, run_until


class Counter(State):
    """A count two elements share."""

    n = Field(Int)


class Count(Element):
    """Adds one and counts in a persistent state."""

    counter = Persistent(Counter)

    def configure(self) -> None:
        self.inp = Input(Int)
        self.out = Output(Int)

    def states(self, counter: Counter) -> None:
        self.counter = counter

    def impl(self) -> None:
        self.run_c("int x = inp(); counter->n++; output { out(x + 1); }")


class HostInc(Inc):
    """Adds one with the host's help."""

    host_only = True


class Pair(Element):
    """A join: adds its two inputs."""

    def configure(self) -> None:
        self.a = Input(Int)
        self.b = Input(Int)
        self.out = Output(Int)

    def impl(self) -> None:
        self.run_c("int x = a(); int y = b(); output { out(x + y); }")


class Branch(Element):
    """An output switch: odd values one way, even ones the other."""

    def configure(self) -> None:
        self.inp = Input(Int)
        self.odd = Output(Int)
        self.even = Output(Int)

    def impl(self) -> None:
        self.run_c("int x = inp(); output switch { case x % 2: odd(x); else: even(x); }")


def chain(middle: type = Inc, shared: bool = False) -> Program:
    """S -> A -> B -> T in one AUTO segment (A of class ``middle``; A and B sharing a
    persistent state when ``shared``)."""
    with Program("chain") as p:
        class Chain(Segment):
            def impl(self) -> None:
                if shared:
                    counter = Counter()
                    a, b = Count(name="A", states=[counter]), Count(name="B", states=[counter])
                else:
                    a, b = middle(name="A"), Inc(name="B")
                Gen(name="S") >> a >> b >> Sink(name="T")
        Chain("c", device=target.AUTO)
    return p


def fan_out_join() -> Program:
    """S fans out to A and B, whose outputs join in J, then T."""
    with Program("diamond") as p:
        class Diamond(Segment):
            def impl(self) -> None:
                s, j = Gen(name="S"), Pair(name="J")
                s >> Inc(name="A") >> j.a
                s >> Inc(name="B") >> j.b
                j >> Sink(name="T")
        Diamond("d", device=target.AUTO)
    return p


def cuts_of(p: Program, segment: str) -> tuple[int, int, dict[tuple, str | None]]:
    """How many cuts ``segment`` of ``p`` has, how many are valid, and each one's problem."""
    ir = run_until(p, "parse_bodies")
    found = candidates(ir, ir.segments[segment]).cuts
    problems = {(c.rx, c.tx): c.problem for c in found}
    return len(found), sum(c.problem is None for c in found), problems


def fs(*names: str) -> frozenset[str]:
    return frozenset(names)


def test_a_chain_of_four_has_fifteen_cuts_eleven_valid() -> None:
    total, valid, problems = cuts_of(chain(), "c")
    # (n + 1)(n + 2) / 2 pairs of a prefix and a suffix; the four with an empty CPU part
    # between a receiving and a sending part (or a sending part alone) are not programs.
    assert (total, valid) == (15, 11)
    assert problems[(fs("S", "A"), fs("B", "T"))] is not None
    assert problems[(fs("S", "A"), fs("T"))] is None
    assert "needs a CPU part" in problems[(fs(), fs("S", "A", "B", "T"))]


def test_fan_out_and_join_has_four_valid_cuts() -> None:
    total, valid, problems = cuts_of(fan_out_join(), "d")
    # 27 pairs; the 17 with a receiving part that edges leave from two places (or from one
    # port fanning out) are rejected once each, whatever the sending part: 4 entries.
    assert (total, valid) == (27 - 17 + 4, 4)
    valid_cuts = {k for k, v in problems.items() if v is None}
    assert valid_cuts == {(fs(), fs()), (fs(), fs("T")), (fs("S", "A", "B", "J"), fs()),
                          (fs("S", "A", "B", "J", "T"), fs())}
    assert "'S'.out fans out" in problems[(fs("S"), None)]
    assert "could cross twice" in problems[(fs("S", "A", "B"), None)]
    assert "join 'J'" in problems[(fs(), fs("A", "J", "T"))]


def test_shared_state_keeps_its_users_on_one_side() -> None:
    total, valid, problems = cuts_of(chain(shared=True), "c")
    assert (total, valid) == (15, 7)
    assert "persistent state" in problems[(fs("S", "A"), fs())]
    assert problems[(fs(), fs("A", "B", "T"))] is None


def test_a_host_only_element_stays_on_the_cpu() -> None:
    total, valid, problems = cuts_of(chain(middle=HostInc), "c")
    # 15 pairs, of which the 6 whose receiving part holds A count once per receiving part.
    assert (total, valid) == (15 - 6 + 3, 6)
    assert "host-only" in problems[(fs("S", "A"), None)]
    assert "host-only" in problems[(fs(), fs("A", "B", "T"))]


def test_a_switch_may_send_each_branch_over_its_own_channel() -> None:
    with Program("branchy") as p:
        class Branchy(Segment):
            def impl(self) -> None:
                b = Branch(name="B")
                Gen(name="S") >> b
                b.odd >> Sink(name="O")
                b.even >> Sink(name="E")
        Branchy("b", device=target.AUTO)
        cut("b", rx=["S", "B"])
    ir = run_until(p, "check_segments")
    q = ir.queues["b_rxq"]
    assert (q.channels, q.boundary) == (2, "rx")
    assert ir.segments["b_rx"].device == Device.NIC and ir.segments["b"].device == Device.CPU


def test_a_cut_moves_values_through_the_per_packet_state() -> None:
    p = chain()
    ir = run_until(p, "liveness", cuts=(Cut("c", rx=("S",), tx=("T",), rx_cores=2),))
    assert ir.segments["c_rx"].cores == [0, 1] and ir.segments["c_tx"].device == Device.NIC
    roles = {ir.node(n).cls_name for n in ir.segments["c"].elements}
    assert {"CutUnstash", "CutStash"} <= roles
    assert carried(ir, "c_rxq") == [["c_rxq_0_v0"]]
    assert carried(ir, "c_txq") == [["c_txq_0_v0"]]
    assert ir.node("c_rxq_enq0").role == Role.ENQUEUE


@pytest.mark.parametrize("producers, consumers, instances",
                         [(1, 1, 1), (2, 3, 6), (4, 1, 4), (1, 4, 4), (4, 2, 4)])
def test_every_thread_at_a_cut_has_instances_of_its_own(producers: int, consumers: int,
                                                        instances: int) -> None:
    ir = run_until(chain(), "plan_code", cuts=(Cut("c", rx=("S",), rx_cores=producers,
                                                   cpu_cores=consumers),))
    q = ir.queues["c_rxq"]
    assert q.instances == instances
    # one producer and one consumer thread per instance: no atomic enqueue or dequeue
    assert not ir.queue_home(q.name).multi_producer and not ir.queue_home(q.name).multi_consumer
    assert ir.element_plan("c_rxq_enq0").spreads_over == (producers if instances > 1 else 0)
    assert not ir.warnings


def test_an_invalid_cut_is_an_error_at_its_line() -> None:
    p = chain(shared=True)
    with p:
        line = here() + 1
        cut("c", rx=["S", "A"])
    with pytest.raises(FloemError) as e:
        run_until(p, "split_auto")
    assert e.value.line == line and "persistent state" in str(e.value)


def test_a_cut_of_a_segment_that_is_not_auto_is_an_error() -> None:
    with Program("plain") as p:
        class Plain(Segment):
            def impl(self) -> None:
                Gen(name="S") >> Sink(name="T")
        Plain("p")
        cut("p", rx=["S"])
    with pytest.raises(FloemError, match="not a target.AUTO segment"):
        run_until(p, "split_auto")


def test_without_a_cut_an_auto_segment_runs_on_the_cpu() -> None:
    ir = run_until(chain(), "placement")
    assert ir.segments["c"].device == Device.CPU and not ir.queues


class Handle(State):
    """A per-packet state holding a plain pointer."""

    p = Field(Pointer(Uint(8)))
    n = Field(Int)


class Point(Element):
    """Sets the pointer (to a byte of its own)."""

    def configure(self) -> None:
        self.inp = Input(Int)
        self.out = Output()

    def impl(self) -> None:
        self.run_c("static uint8_t b; int x = inp(); state->p = &b; state->n = x; "
                   "output { out(); }")


class Pass(Element):
    """Counts, leaving the pointer alone."""

    def configure(self) -> None:
        self.inp = Input()
        self.out = Output()

    def impl(self) -> None:
        self.run_c("inp(); state->n++; output { out(); }")


class Deref(Element):
    """Reads through the pointer."""

    def configure(self) -> None:
        self.inp = Input()

    def impl(self) -> None:
        self.run_c("inp(); state->n += *state->p;")


def handles() -> Program:
    with Program("handles") as p:
        class Handles(Flow):
            state = PerPacket(Handle)

            def impl(self) -> None:
                class H(Segment):
                    def impl(self) -> None:
                        Gen(name="S") >> Point(name="P") >> Pass(name="A") >> Deref(name="D")
                H("h", device=target.AUTO)
        Handles()
    return p


def test_a_pointer_may_cross_and_come_back_but_not_be_read_across() -> None:
    p = handles()
    ir = run_until(p, "liveness", cuts=(Cut("h", rx=("S", "P"), tx=("D",)),))
    assert "p" in carried(ir, "h_rxq")[0] and "p" in carried(ir, "h_txq")[0]
    with pytest.raises(FloemError, match="Handle.p, a pointer .* to 'D', which reads it"):
        run_until(p, "liveness", cuts=(Cut("h", rx=("S", "P")),))
    with pytest.raises(FloemError, match="to 'D', which reads it"):
        run_until(p, "liveness", cuts=(Cut("h", rx=(), tx=("D",)),))


class Both(Element):
    """Fires both its ports for every packet."""

    def configure(self) -> None:
        self.inp = Input(Int)
        self.a = Output(Int)
        self.b = Output(Int)

    def impl(self) -> None:
        self.run_c("int x = inp(); output { a(x); b(x); }")


def branches(split: type, ports: tuple[str, str]) -> Program:
    """S -> B (``split``), each of its ``ports`` through an Inc to a Sink."""
    with Program("branches") as p:
        class Branches(Segment):
            def impl(self) -> None:
                b = split(name="B")
                Gen(name="S") >> b
                getattr(b, ports[0]) >> Inc(name="X") >> Sink(name="T1")
                getattr(b, ports[1]) >> Inc(name="Y") >> Sink(name="T2")
        Branches("b", device=target.AUTO)
    return p


def test_edges_from_several_elements_may_cross_when_a_switch_parted_them() -> None:
    _, _, problems = cuts_of(branches(Branch, ("odd", "even")), "b")
    assert problems[(fs(), fs("T1", "T2"))] is None
    _, _, problems = cuts_of(branches(Both, ("a", "b")), "b")
    assert "'B' fires several ports for one packet" in problems[(fs(), fs("T1", "T2"))]


def test_a_segment_too_wide_to_list_is_cut_along_packet_order() -> None:
    """40 branches from one source: 2**40 receiving parts. Past MAX_CUTS the enumeration
    stops, and the cuts listed are those along packet order: rx a prefix of it, tx a suffix
    of the rest."""
    with Program("wide") as p:
        class Wide(Segment):
            def impl(self) -> None:
                source = Gen(name="S")
                for i in range(40):
                    source >> Sink(name=f"T{i}")
        Wide("w", device=target.AUTO)
    ir = run_until(p, "parse_bodies")
    space = candidates(ir, ir.segments["w"])
    order = segment_order(ir, ir.segments["w"])
    assert space.along_order and order == ["S"] + [f"T{i}" for i in range(40)]
    for c in space.cuts:
        assert set(c.rx) == set(order[:len(c.rx)])
        assert set(c.tx or ()) == set(order[len(order) - len(c.tx or ()):])
    # No rx: 42 suffixes as tx. S with 0 to 38 sinks: 40 to 2 edges leave it, which no queue
    # can be (S fires them all): 39 receiving parts rejected once. S with 39 sinks: no tx,
    # or T39 (fed straight from rx: rejected). All 41: no tx.
    assert len(space.cuts) == 42 + 39 + 2 + 1
    valid = {(len(c.rx), len(c.tx or ())) for c in space.cuts if c.problem is None}
    # all on the CPU, T39 on the NIC after it, all but T39 or all on the NIC
    assert valid == {(0, 0), (0, 1), (40, 0), (41, 0)}


def test_a_segment_too_long_to_search_even_along_packet_order_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain of 20 elements has 21 * 22 / 2 = 231 cuts, every one along packet order: all
    listed with a limit of 231, none with 230."""
    with Program("long") as p:
        class Long(Segment):
            def impl(self) -> None:
                last = Gen(name="S")
                for i in range(18):
                    last = last >> Inc(name=f"I{i}")
                last >> Sink(name="T")
        Long("l", device=target.AUTO)
    ir = run_until(p, "parse_bodies")
    monkeypatch.setattr(cuts, "MAX_CUTS", 231)
    assert len(candidates(ir, ir.segments["l"]).cuts) == 231
    monkeypatch.setattr(cuts, "MAX_CUTS", 230)
    with pytest.raises(FloemError, match="segment 'l' has more than 230 cuts even along "
                                         r"packet order \(20 elements\): too long to search"):
        candidates(ir, ir.segments["l"])
