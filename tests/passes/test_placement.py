"""placement: segments grouped into processes; one process holds main."""
from __future__ import annotations

from floem import CallableSegment, Input, Int, Output, Program, Segment

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
    return {p.name: (p.segments, p.callables, p.has_main) for p in ir.processes.values()}


def test_default_process_is_the_program_name():
    with Program("app") as p:
        thread("rx")
        callable_("inc1")
    ir = run_until(p, "placement")
    assert processes(ir) == {"app": (["rx", "inc1"], ["inc1"], True)}
    assert ir.options["main_process"] == "app"


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
    assert ir.options["main_process"] == "app"


def test_main_in_a_named_process():
    with Program("app") as p:
        callable_("inc1", process="math")
        p.main("return inc1(1);", process="math")
    ir = run_until(p, "placement")
    assert processes(ir) == {"math": (["inc1"], ["inc1"], True)}
    assert ir.options["main_process"] == "math"


def test_the_only_process_holds_main_when_it_is_not_the_default():
    with Program("app") as p:
        thread("rx", process="server")
    ir = run_until(p, "placement")
    assert processes(ir) == {"server": (["rx"], [], True)}
    assert ir.options["main_process"] == "server"


def test_callables_only_without_main_make_no_executable():
    with Program("lib") as p:
        callable_("inc1")
    ir = run_until(p, "placement")
    assert processes(ir) == {"lib": (["inc1"], ["inc1"], False)}
