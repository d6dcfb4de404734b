"""The fuzz harnesses of the C parsers (fuzz/, scripts/fuzz.sh, docs/fuzzing.md).

Fast: every kept regression input (fuzz/regressions/NAME/, each an input that once made
its parser crash) and every seed goes through its harness once, so fixed findings stay
fixed. Slow: `scripts/fuzz.sh --ci` fuzzes each harness for 8 seconds and fails on a
finding.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

FUZZ = os.path.join(ROOT, "scripts", "fuzz.sh")


def fuzz(*args: str, timeout: float) -> subprocess.CompletedProcess:
    """Run ``scripts/fuzz.sh ARGS``, capturing its output."""
    return subprocess.run(["bash", FUZZ, *args], capture_output=True, text=True, timeout=timeout)


HARNESSES = fuzz("--list", timeout=60).stdout.split()


@pytest.fixture(scope="module")
def built() -> None:
    """Every harness built (clang, libFuzzer, ASan and UBSan; installed when missing)."""
    result = fuzz("--build", timeout=1200)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_harness_has_seeds(tmp_path: Path) -> None:
    subprocess.run([sys.executable, os.path.join(ROOT, "fuzz", "make_corpus.py"), str(tmp_path)],
                   check=True, timeout=120)
    assert sorted(os.listdir(tmp_path)) == sorted(HARNESSES)
    for name in HARNESSES:
        assert os.listdir(tmp_path / name), f"{name} has no seeds"
        assert os.path.exists(os.path.join(ROOT, "fuzz", "harness", f"{name}.c"))


@pytest.mark.timeout(1900)               # the first one builds every harness (`built`)
@pytest.mark.parametrize("name", HARNESSES)
def test_regressions_and_seeds_replay_cleanly(name: str, built: None) -> None:
    result = fuzz("--replay", name, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"fuzz: {name}: replayed" in result.stdout


@pytest.mark.slow
@pytest.mark.timeout(1900)
def test_fuzzing_every_harness_finds_nothing() -> None:
    result = fuzz("--ci", timeout=1800)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("no finding") == len(HARNESSES), result.stdout
