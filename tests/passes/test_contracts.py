"""The pass pipeline's contracts: each pass declares what it requires and provides, and
run_pipeline refuses an order in which a pass would run before what it needs."""
from __future__ import annotations

import pytest

from floem.passes import PIPELINE, build_graph, check_contracts


def test_every_pass_declares_its_contract() -> None:
    for stage in [build_graph] + PIPELINE:
        assert isinstance(stage.REQUIRES, frozenset) and isinstance(stage.PROVIDES, frozenset)


def test_the_pipeline_keeps_its_contracts() -> None:
    check_contracts(PIPELINE)


def test_a_pass_moved_before_what_it_needs_is_refused() -> None:
    names = [p.NAME for p in PIPELINE]
    moved = list(PIPELINE)
    liveness = moved.pop(names.index("liveness"))
    moved.insert(names.index("expand_caches"), liveness)       # before the cache regions
    with pytest.raises(RuntimeError, match="pass liveness runs before what it requires: "
                                           "cache_regions"):
        check_contracts(moved)


def test_every_requirement_is_provided_by_some_pass() -> None:
    provided = set().union(*(p.PROVIDES for p in [build_graph] + PIPELINE))
    for stage in PIPELINE:
        assert stage.REQUIRES <= provided, stage.NAME
