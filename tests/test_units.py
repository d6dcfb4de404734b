"""Processes compiled as several translation units (plan_code.UNIT_ELEMENTS, made tiny here)
behave as compiled whole: programs of each kind print their expected output, a cache still
matches a dict, and a library of callable segments links into a C program."""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import PROGRAMS, ROOT
from floem.api import load_app
from floem.builder import build_program, check_program, run_built
from floem.ir import BuildOptions
from floem.passes import plan_code
from test_cache import APPS as CACHE_APPS
from test_cache import operations

# Each kind of program: callables and a library, joins, a NIC with the sync layer, the ring
# layout between two processes, per-packet and persistent state, variable-size fields, a
# queue steered by qid, floem.external_main.
SPLIT = ["callable_inc2", "fanout_join", "nic_roundtrip", "queue_processes", "persistent_state",
         "queue_variable_field", "queue_steering", "external_main"]


@pytest.fixture
def tiny_units(monkeypatch: pytest.MonkeyPatch) -> None:
    """Translation units of two elements: every process of more is split."""
    monkeypatch.setattr(plan_code, "UNIT_ELEMENTS", 2)


def unit_files(out: str) -> list[str]:
    return sorted(f for f in os.listdir(out) if f.endswith(".c"))


@pytest.mark.parametrize("app", SPLIT)
def test_split_programs_print_what_they_print_whole(app: str, tiny_units, tmp_path) -> None:
    program = load_app(os.path.join(PROGRAMS, app + ".py"))
    built = build_program(program, BuildOptions(), str(tmp_path))
    assert any(".units.h" in f for f in os.listdir(tmp_path))
    assert len(unit_files(str(tmp_path))) > len(built.headers)
    result = run_built(built, program, timeout=60)
    assert result.returncode == 0, result.stderr
    with open(os.path.join(PROGRAMS, app + ".expected")) as f:
        assert result.stdout == f.read()


def test_a_split_cache_matches_a_dict(tiny_units, tmp_path, monkeypatch) -> None:
    """A write-back cache whose write-backs run in a unit of their own."""
    monkeypatch.setenv("CACHE_POLICY", "write_back")
    program = load_app(os.path.join(CACHE_APPS, "kv_app.py"))
    built = build_program(program, BuildOptions(), str(tmp_path / "out"))
    ops, expected = operations(300, 7)
    path = tmp_path / "ops.txt"
    path.write_text(ops)
    result = run_built(built, program, timeout=60, args=[str(path)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == expected


def test_a_split_library_links_into_a_c_program(tiny_units, tmp_path) -> None:
    """examples/legacy's calculator against libsimple_math.a made of several units, whose
    shared names stay out of a program's way."""
    legacy = os.path.join(ROOT, "examples", "legacy")
    out = tmp_path / "build"
    program = load_app(os.path.join(legacy, "simple_math.py"))
    built = build_program(program, BuildOptions(), str(out))
    assert len(unit_files(str(out))) > 1
    exe = tmp_path / "legacy"
    subprocess.run(["cc", "-std=c11", "-O2", f"-I{out}", "-o", str(exe),
                    os.path.join(legacy, "legacy.c"), built.libraries[0], "-lpthread"],
                   check=True)
    result = subprocess.run([str(exe)], input="add 2 3\ninc2 40\nsum 5\nsum 10\n",
                            capture_output=True, text=True, timeout=60)
    assert result.stdout == "add 2 3 = 5\ninc2 40 = 42\nsum 5 = 5\nsum 10 = 15\n", result.stderr
    exported = subprocess.run(["nm", "-D", "--defined-only", str(out / "libsimple_math.so")],
                              capture_output=True, text=True, check=True).stdout.split()
    elements = {n.name for n in check_program(program).nodes()}
    assert "add" in exported and not elements & set(exported)
