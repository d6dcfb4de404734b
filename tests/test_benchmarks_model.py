"""The performance model's benchmark scripts (counting, validation against the paper, this
machine's calibration and measurement, placement and what its search costs) run in their
short modes, as tests/test_benchmarks.py runs the others: in a module of their own, so that
the two share the test processes.
"""
from __future__ import annotations

import os

import pytest

from test_benchmarks import run_short

SCRIPTS = [
    ("counting/run.py", "--short"),
    ("explore/validate.py", "--short"),
    ("explore/calibrate_this.py", "--short"),
    ("explore/this_machine.py", "--short"),
    ("place/run.sh", "--short", "out"),
    ("place/search_cost.py", "--short"),
]
#: Scripts that need root (network namespaces for DPDK's runtime files).
ROOT_ONLY = {"explore/this_machine.py"}
#: What a script prints that is not just a Markdown table: calibrate_this.py, the platform
#: file; search_cost.py, its bounded search ranking the 15 best as predicting every
#: placement does.
PRINTS = {"explore/calibrate_this.py": "cpi = ", "place/search_cost.py": "| yes |"}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("script", SCRIPTS, ids=[s[0] for s in SCRIPTS])
def test_short_mode(script: tuple[str, ...], tmp_path) -> None:
    if script[0] in ROOT_ONLY and os.geteuid() != 0:
        pytest.skip(f"{script[0]} needs root")
    run_short(script, tmp_path, PRINTS.get(script[0], "| "))
