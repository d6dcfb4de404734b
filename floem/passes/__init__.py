"""The pass pipeline: a visible list of small modules, each ``run(ir) -> ir``.

Each pass is given an IR of its own, so the IR it was given stays as it was: the one after
any pass can be kept and read, and no pass changes another's. A pass that changes the
structure (`TRANSFORMATIONS`) gets a copy of the tables (`ProgramIR.copy`: their records
are frozen and shared); a check or an analysis, which adds a result or warnings only,
gets the same tables with results and warnings of its own (`ProgramIR.sharing_structure`).

Each pass declares what it needs done before it (``REQUIRES``) and what it gives the passes
after it (``PROVIDES``): a result type of `floem.ir.results` for an analysis (the pass adds
that result; the pipeline checks it did), or the name of a fact about the structural IR for
a pass that transforms it (``"cache_regions"``: expand_caches made the caches' regions).
"""
from __future__ import annotations

import os
from types import ModuleType

from floem.errors import FloemError
from floem.ir import BuildOptions, ProgramIR
from floem.lang.program import Program
from floem.passes import (build_graph, check_callables, check_segments, check_types,
                          expand_caches, find_sources, liveness, lower_queues, order_graph,
                          parse_bodies, place_memory, placement, plan_code, plan_entries,
                          slice_packets, split_auto, trace_packets)

#: The passes after the front end (``build_graph``, which makes the IR from the program).
PIPELINE: list[ModuleType] = [
    split_auto,
    parse_bodies,
    check_types,
    order_graph,
    find_sources,
    check_segments,
    expand_caches,
    check_callables,
    trace_packets,
    liveness,
    lower_queues,
    placement,
    place_memory,
    slice_packets,
    plan_entries,
    plan_code,
]


#: The passes that change the structural IR (the graph, segments, queues, caches, layouts).
TRANSFORMATIONS: frozenset[ModuleType] = frozenset({split_auto, parse_bodies, find_sources,
                                                    expand_caches, trace_packets, lower_queues})


def pass_names() -> list[str]:
    """Names usable with ``--dump-after``."""
    return [build_graph.NAME] + [p.NAME for p in PIPELINE]


def run_pipeline(program: Program, options: BuildOptions | None = None,
                 dump_after: str | None = None, dump_dir: str | None = None,
                 stop_after: str | None = None) -> ProgramIR:
    """Run every pass (up to ``stop_after``) over a fresh IR of ``program``.

    ``dump_after`` is a pass name or ``all``; dumps go to ``dump_dir/ir-<NN>-<pass>.txt``.
    """
    for option, value in (("--dump-after", dump_after), ("--after", stop_after)):
        if value not in (None, "all") and value not in pass_names():
            raise FloemError(f"{option}: no pass named {value!r} "
                             f"(passes: {', '.join(pass_names())}, all)")
    check_contracts(PIPELINE)
    ir = build_graph.run(program, options or BuildOptions())
    for index, stage in enumerate([build_graph] + PIPELINE):
        if index:
            ir = ir.copy() if stage in TRANSFORMATIONS else ir.sharing_structure()
            ir = stage.run(ir)      # (the IR before is gone first: no pass holds two graphs)
        missing: set[str | type] = {kind for kind in stage.PROVIDES
                                    if isinstance(kind, type) and kind not in ir.results}
        if missing:
            raise RuntimeError(f"pass {stage.NAME} did not make {_names(missing)}")
        if dump_dir and dump_after in ("all", stage.NAME):
            os.makedirs(dump_dir, exist_ok=True)
            path = os.path.join(dump_dir, f"ir-{index + 1:02d}-{stage.NAME}.txt")
            with open(path, "w") as f:
                f.write(f"# IR after pass {stage.NAME}\n" + ir.dump())
        if stage.NAME == stop_after:
            break
    return ir


def check_contracts(pipeline: list[ModuleType]) -> None:
    """Every pass's ``REQUIRES`` is provided by the passes before it (a pipeline that breaks
    this is the compiler's bug, not the user's)."""
    provided: set[str | type] = set(build_graph.PROVIDES)
    for stage in pipeline:
        missing = stage.REQUIRES - provided
        if missing:
            raise RuntimeError(f"pass {stage.NAME} runs before what it requires: "
                               f"{_names(missing)}")
        provided |= stage.PROVIDES


def _names(contract: set[str | type]) -> str:
    """The facts and result types of a contract, sorted, for a message."""
    return ", ".join(sorted(c if isinstance(c, str) else c.__name__ for c in contract))
