"""The queue, compile-time and code-generation benchmarks still run: each script's --short
mode (one round, small inputs) builds, runs and prints its whole table. Times are printed,
never asserted (docs/benchmarks.md has the figures)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow


def run(command: list[str], timeout: float, env: dict[str, str] | None = None) -> str:
    """The output of a benchmark command run from the repository, which must succeed
    (``env``: more environment variables)."""
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, **(env or {})})
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_queue_benchmark_short() -> None:
    """Both Floem layouts and a git revision's two (QUEUE_REVS) beside rte_ring at the three
    sizes, every entry checked."""
    out = run(["bash", "benchmarks/queue/run.sh", "--short"], timeout=300,
              env={"QUEUE_REVS": "HEAD"})
    for size in (256, 1024, 4096):
        for mode in ("single", "burst 32"):
            assert re.search(rf"^\| {size} \| {mode} \| [\d.]+ .*(\| [\d.]+x \| .*){{3}}"
                             rf"\| [\d.]+x \|$", out, re.M), out
    for layout in ("ring", "turns", "ring HEAD", "turns HEAD"):
        assert re.search(rf"^Floem {layout} counters \(all sizes\): (\d+) enqueued, \1 dequeued",
                         out, re.M), out


def test_queue_instructions_short() -> None:
    """Instructions per entry under callgrind, of the working tree's queue and a git
    revision's, in the four modes."""
    out = run(["bash", "benchmarks/queue/instructions.sh", "--short"], timeout=300,
              env={"QUEUE_REVS": "HEAD"})
    for queue in ("Floem queue", "Floem HEAD"):
        assert re.search(rf"^\| {queue} \|( [\d.]+ \|){{4}}$", out, re.M), out


def test_compile_time_benchmark_short() -> None:
    out = run([sys.executable, "benchmarks/compile_time/run.py", "--short"], timeout=300)
    for case in ("examples/echo/echo.py", "chain of 100", "fanout of 100"):
        assert re.search(rf"^\| {re.escape(case)} \|( [\d.]+ \|){{8}}$", out, re.M), out


def test_codegen_overhead_benchmark_short() -> None:
    """Every app built both ways, counted under callgrind, their outputs compared."""
    env_path = os.path.dirname(sys.executable)
    out = subprocess.run([sys.executable, "benchmarks/codegen_overhead/run.py", "--short"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PATH": f"{env_path}:{os.environ['PATH']}"})
    assert out.returncode == 0, out.stdout + out.stderr
    for app in ("echo", "hashcount", "kvs"):
        for variant in ("generated", "hand-written"):
            assert re.search(rf"^\| {app} \| {variant} \| [\d.]+ \|", out.stdout, re.M), out.stdout
    assert out.stdout.count("Codegen overhead") == 1
