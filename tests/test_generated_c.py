"""The generated C of a few programs, against golden files reviewed in diffs.

A change to code generation shows here as a diff of readable C. To accept one, run
``FLOEM_UPDATE_GOLDEN=1 python -m pytest tests/test_generated_c.py`` and review
``git diff tests/golden_c``. Absolute paths are written as ``<repo>``.
"""
from __future__ import annotations

import os

import pytest

from conftest import PROGRAMS, floem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "golden_c")
APPS = {
    "callable_inc2": os.path.join(PROGRAMS, "callable_inc2.py"),       # callable segments, main
    "queue_two_channels": os.path.join(PROGRAMS, "queue_two_channels.py"),   # queue lowering
    "queue_processes": os.path.join(PROGRAMS, "queue_processes.py"),   # the ring layout
    "nic_roundtrip": os.path.join(PROGRAMS, "nic_roundtrip.py"),       # NIC, sync layer
    "echo": os.path.join(ROOT, "examples", "echo", "echo.py"),         # packet I/O thread
}


@pytest.mark.parametrize("name", sorted(APPS))
def test_generated_c_matches_its_golden_files(name: str, tmp_path) -> None:
    out = tmp_path / "out"
    result = floem("check", APPS[name])
    assert result.returncode == 0, result.stderr
    result = floem("build", APPS[name], "-o", str(out), "--nic", "emu")
    assert result.returncode == 0, result.stderr
    generated = {f: (out / f).read_text().replace(ROOT, "<repo>")
                 for f in sorted(os.listdir(out)) if f.endswith((".c", ".h"))}
    golden = os.path.join(GOLDEN, name)
    if os.environ.get("FLOEM_UPDATE_GOLDEN"):
        os.makedirs(golden, exist_ok=True)
        for f in os.listdir(golden):
            os.remove(os.path.join(golden, f))
        for f, text in generated.items():
            with open(os.path.join(golden, f), "w") as fh:
                fh.write(text)
    assert sorted(os.listdir(golden)) == sorted(generated)
    for f, text in generated.items():
        with open(os.path.join(golden, f)) as fh:
            assert text == fh.read(), f"{name}/{f} differs from tests/golden_c (see the docstring)"
