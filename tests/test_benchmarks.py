"""Every benchmark script runs in its short mode (one round, a fraction of a second a
program), so that a benchmark which no longer builds, runs or reads its programs' output
fails here rather than rotting unseen. Nothing here looks at a figure: speed is measured
by running the scripts themselves (docs/benchmarks.md).

A new benchmark script is one more line in SCRIPTS: its path under benchmarks/ and the
arguments of its short mode.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPTS = [
    ("echo/run.py", "--short"),
    ("kvs/run.py", "--short"),
    ("kvs/vs_memcached.py", "--short"),
    ("live_fields/run.py", "--short"),
    ("slicing/run.py", "--short"),
    ("storm/run.py", "--short"),
    ("sync_layer/run.py", "--short"),
]


def run_short(script: tuple[str, ...], tmp_path, prints: str = "| ") -> None:
    """Run a benchmark script (Python, or bash for a .sh) with its short-mode arguments from
    ``tmp_path``: it must succeed and print what it makes (``prints``: a Markdown table's
    cells, unless said otherwise)."""
    path, *args = script
    bin_dir = os.path.dirname(sys.executable)       # the venv's floem, as the README sets up
    runner = ["bash"] if path.endswith(".sh") else [sys.executable]
    result = subprocess.run([*runner, os.path.join(ROOT, "benchmarks", path), *args],
                            capture_output=True, text=True, timeout=880, cwd=tmp_path,
                            env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert prints in result.stdout, result.stdout


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("script", SCRIPTS, ids=[s[0] for s in SCRIPTS])
def test_short_mode(script: tuple[str, ...], tmp_path) -> None:
    run_short(script, tmp_path)
