"""examples/legacy: a plain C program, and Python through cffi, calling Floem callable segments."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import cffi
import pytest

from conftest import ROOT, floem, floem_command

LEGACY = os.path.join(ROOT, "examples", "legacy")
APP = os.path.join(LEGACY, "simple_math.py")

PROTOTYPES = """
void floem_init(void);
void floem_run_threads(void);
void floem_kill_threads(void);
void floem_finalize(void);
int add(int arg0, int arg1);
int inc2(int arg0);
int exact_sqrt(int arg0);
int accumulate(int arg0);
"""

CALCULATOR_INPUT = """\
add 2 3
add -7 4
inc2 40
inc2 -2
sqrt 16
sqrt 15
sqrt 0
sqrt -4
sum 5
sum 10
sum -3
"""

CALCULATOR_OUTPUT = """\
add 2 3 = 5
add -7 4 = -3
inc2 40 = 42
inc2 -2 = 0
sqrt 16 = 4
sqrt 15 = none
sqrt 0 = 0
sqrt -4 = none
sum 5 = 5
sum 10 = 15
sum -3 = 12
"""


def make_env() -> dict[str, str]:
    """The environment for `make`: the `floem` console script on PATH when there is one."""
    env = dict(os.environ)
    exe = shutil.which("floem") or os.path.join(os.path.dirname(sys.executable), "floem")
    if os.path.exists(exe):
        env["PATH"] = os.path.dirname(exe) + os.pathsep + env.get("PATH", "")
    else:
        env["FLOEM"] = " ".join(floem_command())
    return env


@pytest.fixture(scope="module")
def legacy_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A copy of examples/legacy after `make` (the repository stays clean)."""
    work = str(tmp_path_factory.mktemp("legacy") / "legacy")
    shutil.copytree(LEGACY, work,
                    ignore=shutil.ignore_patterns("build", "legacy", "legacy_shared"))
    result = subprocess.run(["make"], cwd=work, env=make_env(), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return work


def run(program: str, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run([program], input=stdin, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("program", ["legacy", "legacy_shared"])
def test_make_builds_a_calculator_that_calls_floem(legacy_dir: str, program: str) -> None:
    result = run(os.path.join(legacy_dir, program), CALCULATOR_INPUT)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == CALCULATOR_OUTPUT


def test_calculator_reports_malformed_lines(legacy_dir: str) -> None:
    result = run(os.path.join(legacy_dir, "legacy"), "add 1\nsum 2\nmul 2 3\nsum 3\n")
    assert result.returncode == 1
    assert result.stdout == "sum 2 = 2\nsum 3 = 5\n"
    assert result.stderr.splitlines() == [
        "legacy: line 1: expected 'add A B', 'inc2 X', 'sqrt X' or 'sum X'",
        "legacy: line 3: expected 'add A B', 'inc2 X', 'sqrt X' or 'sum X'",
    ]


def test_static_and_shared_links_differ(legacy_dir: str, tmp_path) -> None:
    """`legacy` carries the library inside it; `legacy_shared` needs build/libsimple_math.so."""
    moved = shutil.copytree(legacy_dir, str(tmp_path / "moved"), symlinks=True)
    os.remove(os.path.join(moved, "build", "libsimple_math.so"))
    os.remove(os.path.join(moved, "build", "libsimple_math.a"))
    assert run(os.path.join(moved, "legacy"), "inc2 1\n").stdout == "inc2 1 = 3\n"
    assert run(os.path.join(moved, "legacy_shared"), "inc2 1\n").returncode != 0


@pytest.fixture
def built_library(tmp_path) -> str:
    """`floem build simple_math.py` into a fresh directory (so each dlopen gets fresh state)."""
    out = str(tmp_path / "build")
    result = floem("build", APP, "-o", out)
    assert result.returncode == 0, result.stderr
    return out


def load(library_dir: str):
    ffi = cffi.FFI()
    ffi.cdef(PROTOTYPES)
    return ffi.dlopen(os.path.join(library_dir, "libsimple_math.so"))


def test_header_declares_the_callable_functions(built_library: str) -> None:
    with open(os.path.join(built_library, "simple_math.h")) as f:
        header = f.read()
    for prototype in PROTOTYPES.strip().splitlines():
        assert prototype in header


FLOEM_MAIN = """
from floem import main

main(r'''
    printf("%d\\n", add(1, 2));
''')
"""


@pytest.mark.parametrize("with_main", [False, True], ids=["callables", "callables+main"])
def test_library_has_no_main(tmp_path, with_main: bool) -> None:
    """The libraries never define `main`, even when the process also gets a floem main."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    with open(APP) as f:
        source = f.read()
    app = tmp_path / "simple_math.py"
    app.write_text(source + (FLOEM_MAIN if with_main else ""))
    out = str(tmp_path / "build")
    result = floem("build", str(app), "-o", out)
    assert result.returncode == 0, result.stderr
    assert os.path.exists(os.path.join(out, "simple_math")) == with_main
    for lib, dynamic in (("libsimple_math.a", []), ("libsimple_math.so", ["-D"])):
        symbols = subprocess.run([nm, "--defined-only", "-g", *dynamic, os.path.join(out, lib)],
                                 capture_output=True, text=True, check=True).stdout.split()
        assert "add" in symbols and "floem_init" in symbols
        assert "main" not in symbols


def test_cffi_calls_each_segment(built_library: str) -> None:
    lib = load(built_library)
    lib.floem_init()
    lib.floem_run_threads()
    assert lib.add(2, 3) == 5
    assert lib.add(-7, 4) == -3
    assert lib.add(0, -2147483648) == -2147483648
    assert lib.inc2(40) == 42
    assert lib.inc2(-2) == 0
    assert [lib.exact_sqrt(x) for x in (0, 1, 16, 144, 46340 * 46340)] == [0, 1, 4, 12, 46340]
    assert [lib.exact_sqrt(x) for x in (2, 15, 143, -4)] == [-1, -1, -1, -1]
    assert [lib.accumulate(x) for x in (5, 10, -3)] == [5, 15, 12]
    lib.floem_kill_threads()
    lib.floem_finalize()


def test_default_return_does_not_leak_between_calls(built_library: str) -> None:
    """A call whose return path fires, then one whose path does not: the second gets -1."""
    lib = load(built_library)
    lib.floem_init()
    lib.floem_run_threads()
    assert [lib.exact_sqrt(x) for x in (9, 10, 25, 26)] == [3, -1, 5, -1]
    lib.floem_kill_threads()
    lib.floem_finalize()


def test_default_return_is_required_without_else(tmp_path) -> None:
    """The `output switch` in ExactSqrt may not fire: without default_return the app is rejected."""
    with open(APP) as f:
        source = f.read()
    assert 'default_return="-1"' in source
    app = tmp_path / "simple_math.py"
    app.write_text(source.replace(', default_return="-1"', ""))
    result = floem("check", str(app))
    assert result.returncode != 0
    assert "exact_sqrt" in result.stderr and "default_return" in result.stderr
