"""The analyses' results (floem/ir/results.py): each analysis adds one frozen result and
leaves the structural IR as it found it; a result is made once, and asking for one no pass
has made yet is refused with its name. No pass changes the IR it was given: the records
are frozen, and a pass changes only its own copy of the tables."""
from __future__ import annotations

import dataclasses
import os
from types import ModuleType

import pytest
from conftest import ROOT

from floem.api import load_app
from floem.ir import (CacheIR, Edge, ElementNode, FieldLayout, MainIR, PersistentState,
                      BuildOptions, Liveness, Placement, ProgramIR, QueueIR, Results, SegmentIR,
                      StateLayout, TraceFilter)
from floem.passes import PIPELINE, TRANSFORMATIONS, build_graph, run_pipeline

#: The passes that analyse (their contracts provide result types) and the checks.
ANALYSES = [p for p in PIPELINE if p.PROVIDES and all(isinstance(k, type) for k in p.PROVIDES)]
CHECKS = [p for p in PIPELINE if p.NAME.startswith("check_") or p.NAME == "order_graph"]

APPS = [("examples/kvs/kvs.py", {"design": "cpu"}, {}),
        ("examples/kvs/kvs.py", {"design": "split"}, {"nic": "liquidio"}),
        ("examples/kvs/kvs.py", {"design": "cache-wb"}, {"counters": False, "trace": True}),
        ("examples/nf/firewall.py", {}, {}),
        ("examples/storm/storm.py", {}, {}),
        ("tests/passes/golden/calc_app.py", {}, {"trace": True})]


def structure(ir: ProgramIR) -> str:
    """Everything of the structural IR (not its results, nor the warnings passes collect)."""
    records = [ir.name, ir.app_file, [n for n in ir.nodes()], ir.edges(), ir.segments,
               ir.queues, ir.caches, ir.layouts, ir.states, ir.regions, ir.main,
               ir.size_uses, ir.includes, ir.depends, ir.options, ir.user_names,
               ir.main_info, ir.trace_filter]
    return repr(records)


def test_the_analyses_are_the_passes_after_the_structure_is_made() -> None:
    assert [p.NAME for p in ANALYSES] == ["liveness", "placement", "place_memory",
                                          "slice_packets", "plan_entries", "plan_code"]
    # every other pass is a check or a transformation, and none is two of them
    assert set(PIPELINE) == set(ANALYSES) | set(CHECKS) | TRANSFORMATIONS
    assert len(PIPELINE) == len(ANALYSES) + len(CHECKS) + len(TRANSFORMATIONS)


@pytest.mark.parametrize("app, given, options", APPS,
                         ids=[f"{os.path.basename(a)}{g or ''}{o or ''}" for a, g, o in APPS])
def test_no_pass_changes_the_ir_it_was_given_and_analyses_only_add_their_result(
        app: str, given: dict[str, str], options: dict[str, object]) -> None:
    program = load_app(os.path.join(ROOT, app), given)
    ir = build_graph.run(program, BuildOptions.from_keywords(**options))
    for stage in PIPELINE:
        before = structure(ir), repr(list(ir.results)), repr(ir.warnings)
        made = stage.run(ir.copy() if stage in TRANSFORMATIONS else ir.sharing_structure())
        assert (structure(ir), repr(list(ir.results)), repr(ir.warnings)) == before, \
            f"{stage.NAME} changed the IR it was given"
        if stage not in TRANSFORMATIONS:
            assert structure(made) == before[0], f"{stage.NAME} changed the structural IR"
        new = {type(r) for r in made.results} - {type(r) for r in ir.results}
        assert new == {k for k in stage.PROVIDES if isinstance(k, type)}, stage.NAME
        ir = made
    for result in ir.results:
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.__setattr__(dataclasses.fields(result)[0].name, None)


def test_the_ir_records_are_frozen() -> None:
    for record in (ElementNode, SegmentIR, QueueIR, CacheIR, MainIR, TraceFilter, Edge,
                   StateLayout, FieldLayout, PersistentState):
        assert record.__dataclass_params__.frozen, record.__name__   # type: ignore[attr-defined]
    ir = run_pipeline(load_app(os.path.join(ROOT, "tests/passes/golden/calc_app.py")))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ir.nodes()[0].segment = "elsewhere"      # type: ignore[misc]
    assert all(isinstance(s.elements, tuple) for s in ir.segments.values())
    assert all(isinstance(names, tuple) for q in ir.queues.values() for names in q.enqueuers)


def test_a_result_is_made_once_and_frozen() -> None:
    results = Results()
    placement = Placement({}, "main")
    results.add(placement)
    assert results.get(Placement) is placement and Placement in results
    with pytest.raises(RuntimeError, match="Placement was made twice"):
        results.add(Placement({}, "other"))
    with pytest.raises(TypeError, match="a frozen dataclass"):
        results.add({"not": "frozen"})


def test_asking_for_a_result_before_its_pass_names_it() -> None:
    ir = run_pipeline(load_app(os.path.join(ROOT, "tests/passes/golden/calc_app.py")),
                      stop_after="lower_queues")
    assert Liveness in ir.results
    with pytest.raises(RuntimeError, match="Placement is asked for before the pass making it"):
        ir.results.get(Placement)


def test_an_analysis_not_making_its_result_is_the_compilers_bug(
        monkeypatch: pytest.MonkeyPatch) -> None:
    idle = ModuleType("idle")
    idle.NAME, idle.REQUIRES, idle.PROVIDES = "idle", frozenset(), frozenset({Liveness})
    idle.run = lambda ir: ir
    monkeypatch.setattr("floem.passes.PIPELINE", [idle])
    program = load_app(os.path.join(ROOT, "tests/passes/golden/calc_app.py"))
    with pytest.raises(RuntimeError, match="pass idle did not make Liveness"):
        run_pipeline(program)
