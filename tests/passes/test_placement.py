"""placement: segments grouped into processes; one process holds main."""
from __future__ import annotations


from floem import CallableSegment, Element, Input, Int, Output, Program, Queue, Segment

from .conftest import Gen, Inc, Sink, run_until


def thread(name, process=None):
    class T(Segment):
        def impl(self):
            Gen() >> Sink()
    return T(name, process=process)


def callable_(name, process=None):
    class C(CallableSegment):
        def configure(self):
            self.inp = Input(Int)
            self.out = Output(Int)

        def impl(self):
            self.inp >> Inc() >> self.out
    return C(name, process=process)


def processes(ir):
    return {p.name: (list(p.segments), list(p.callables), p.has_main)
            for p in ir.processes.values()}


def test_default_process_is_the_program_name():
    with Program("app") as p:
        thread("rx")
        callable_("inc1")
    ir = run_until(p, "placement")
    assert processes(ir) == {"app": (["rx", "inc1"], ["inc1"], True)}
    assert ir.placement.main == "app"


def test_named_processes_and_the_main_process():
    with Program("app") as p:
        thread("rx")
        thread("worker", process="side")
        callable_("inc1", process="math")
        p.main("inc1(1);")
    ir = run_until(p, "placement")
    assert processes(ir) == {
        "app": (["rx"], [], True),
        "side": (["worker"], [], True),      # runs threads: an executable of its own
        "math": (["inc1"], ["inc1"], False),  # only callables: a library
    }
    assert ir.placement.main == "app"


def test_main_in_a_named_process():
    with Program("app") as p:
        callable_("inc1", process="math")
        p.main("return inc1(1);", process="math")
    ir = run_until(p, "placement")
    assert processes(ir) == {"math": (["inc1"], ["inc1"], True)}
    assert ir.placement.main == "math"


def test_the_only_process_holds_main_when_it_is_not_the_default():
    with Program("app") as p:
        thread("rx", process="server")
    ir = run_until(p, "placement")
    assert processes(ir) == {"server": (["rx"], [], True)}
    assert ir.placement.main == "server"


def test_callables_only_without_main_make_no_executable():
    with Program("lib") as p:
        callable_("inc1")
    ir = run_until(p, "placement")
    assert processes(ir) == {"lib": (["inc1"], ["inc1"], False)}


# -- queue producers and consumers ----------------------------------------------------------
# Chosen once placement has put segments on devices, by the pass that places queues in memory.

VARIANTS = "place_memory"


class Drop(Element):
    """Leaf taking a dequeued packet (no values)."""

    def configure(self):
        self.inp = Input()

    def impl(self):
        self.run_c("(void)0;")


class Fork(Element):
    """Sends each packet to ``a`` or ``b``."""

    def configure(self):
        self.inp = Input(Int)
        self.a = Output()
        self.b = Output()

    def impl(self):
        self.run_c("output switch { case inp() & 1: a(); else: b(); }")


def queue_program(producers, consumer="thread", consumer_cores=(0,), **queue_args):
    """Segments ``tx0``, ``tx1``... enqueue into ``q`` and ``rx`` dequeues from it.

    ``producers`` lists ``"callable"`` or a tuple of cores (a thread segment) per producer.
    """
    with Program("queues") as p:
        q = Queue("q", **queue_args)
        for i, kind in enumerate(producers):
            if kind == "callable":
                class Tx(CallableSegment):
                    def configure(self):
                        self.inp = Input(Int)

                    def impl(self):
                        self.inp >> Inc() >> q
                Tx(f"tx{i}")
            else:
                class Tx(Segment):
                    def impl(self):
                        Gen() >> q
                Tx(f"tx{i}", cores=list(kind))
        if consumer == "callable":
            class Rx(CallableSegment):
                def configure(self):
                    self.inp = Input(Int)

                def impl(self):
                    self.inp >> q.qid
                    q >> Drop()
            Rx("rx")
        else:
            class Rx(Segment):
                def impl(self):
                    q >> Drop()
            Rx("rx", cores=list(consumer_cores))
    return p


def variants(ir):
    q = ir.queue_home("q")
    return q.multi_producer, q.multi_consumer


def test_one_thread_on_each_side_is_single_producer_single_consumer():
    ir = run_until(queue_program([(0,)]), VARIANTS)
    assert variants(ir) == (False, False)
    assert ir.warnings == []


def test_a_producer_segment_with_two_threads_is_multi_producer():
    assert variants(run_until(queue_program([(0, 1)]), VARIANTS)) == (True, False)


def test_two_producer_segments_are_multi_producer():
    assert variants(run_until(queue_program([(0,), (1,)]), VARIANTS)) == (True, False)


def test_one_thread_enqueuing_into_two_channels_is_single_producer():
    with Program("channels") as p:
        q = Queue("q", channel=2)

        class Tx(Segment):
            def impl(self):
                two = Fork()
                Gen() >> two
                two.a >> q.enq[0]
                two.b >> q.enq[1]

        class Rx(Segment):
            def impl(self):
                q.deq[0] >> Drop()
                q.deq[1] >> Drop()
        Tx("tx")
        Rx("rx")
    assert variants(run_until(p, VARIANTS)) == (False, False)


def test_callable_producers_and_consumers_are_multi():
    assert variants(run_until(queue_program(["callable"]), VARIANTS)) == (True, False)
    assert variants(run_until(queue_program([(0,)], "callable"), VARIANTS)) == (False, True)


def test_consumer_threads_each_serve_their_own_instances():
    p = queue_program([(0,)], consumer_cores=(1, 2), inst=4)
    assert variants(run_until(p, VARIANTS)) == (False, False)


def test_forced_variants_win_over_inference():
    p = queue_program(["callable"], enq_atomic=False, deq_atomic=True)
    assert variants(run_until(p, VARIANTS)) == (False, True)
    p = queue_program([(0,)], "callable", enq_atomic=True, deq_atomic=False)
    assert variants(run_until(p, VARIANTS)) == (True, False)


def test_more_dequeuing_threads_than_instances_is_a_warning():
    p = queue_program([(0,)], consumer_cores=(1, 2, 3), inst=2)
    ir = run_until(p, VARIANTS)
    assert ir.warnings == [
        f"{__file__}:{ir.segments['rx'].loc.line}: segment 'rx' has 3 threads but queue 'q' "
        "only 2 instances; the extra threads stay idle"]
    p = queue_program([(0,)], consumer_cores=(1, 2), inst=2)
    assert run_until(p, VARIANTS).warnings == []
