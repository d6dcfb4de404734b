"""The key-value store behind examples/kvs (store.c), tested through tests/kvs/store_test.c,
and the split-pointer design's item log (itemlog.h), through tests/kvs/itemlog_test.c.

The behaviour tests run optimised and under ASan+UBSan; the multi-threaded stress test
(own keys read back exactly, self-checking shared records, eviction and expiry running
concurrently) runs optimised and under TSan. The store must compile warning-free with
gcc and clang, and for the NIC platforms' CPUs (Arm64, big-endian MIPS64), where the
tests also run under qemu when it is installed. The item log's tests (its arithmetic and
item format; threads reserving room at once; writers and readers racing) run the same ways.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from test_runtime_c import FOREIGN, SANITIZERS, run

KVS = os.path.join(ROOT, "examples", "kvs")
STORE = os.path.join(KVS, "store.c")
TEST = os.path.join(ROOT, "tests", "kvs", "store_test.c")
ITEMLOG_TEST = os.path.join(ROOT, "tests", "kvs", "itemlog_test.c")
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-g", "-pthread",
          "-I" + KVS, "-I" + os.path.join(ROOT, "library", "c"),
          "-I" + os.path.join(ROOT, "runtime", "tests")]
# Stress operations relative to the default run (4 threads x a million operations).
STRESS_SCALE = {"thread": "0.1", "none": "1"}


def find_compiler(name: str) -> str | None:
    """NAME on PATH, or else its newest versioned install (Debian's clang-14 and the like)."""
    if shutil.which(name):
        return name
    versions = [os.path.basename(path) for folder in os.environ.get("PATH", "").split(os.pathsep)
                for path in glob.glob(os.path.join(folder, name + "-[0-9]*"))]
    versions = [v for v in versions if v[len(name) + 1:].isdigit()]
    return max(versions, key=lambda v: int(v[len(name) + 1:]), default=None)


def build(tmp_path: Path, sanitizer: str, compiler: list[str] | None = None,
          sources: tuple[str, ...] = (TEST, STORE)) -> str:
    """Compile ``sources`` (store_test.c with the store); returns the executable."""
    name = os.path.splitext(os.path.basename(sources[0]))[0]
    exe = str(tmp_path / f"{name}-{sanitizer.replace(',', '-')}")
    cmd = [*(compiler or [os.environ.get("CC", "gcc")]), *CFLAGS, *SANITIZERS[sanitizer],
           *sources, "-o", exe]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return exe


def check_stress(out: str) -> None:
    """The stress run finished, and evicted and expired items while it ran."""
    assert out.splitlines()[-1] == "ok"
    summary = re.search(r"(\d+) evictions, (\d+) expired", out)
    assert summary and int(summary[1]) > 0 and int(summary[2]) > 0, out


@pytest.mark.parametrize("sanitizer", ["address,undefined", "none"])
def test_store_unit(sanitizer: str, tmp_path: Path) -> None:
    """Behaviour a user relies on: overwrite, delete, expiry, bounded memory, a model."""
    out = run(build(tmp_path, sanitizer), "unit")
    assert re.fullmatch(r"ok: \d+ checks\n", out)


@pytest.mark.parametrize("sanitizer", ["thread", "none"])
def test_store_stress(sanitizer: str, tmp_path: Path) -> None:
    """Four threads: no torn or stale record, no data race, counters consistent."""
    check_stress(run(build(tmp_path, sanitizer), "stress", STRESS_SCALE[sanitizer]))


@pytest.mark.parametrize("sanitizer", ["address,undefined", "thread", "none"])
def test_item_log(sanitizer: str, tmp_path: Path) -> None:
    """itemlog.h: the item format, reserving room (a lap's tail skipped), intact and
    overwritten items; four threads reserving at once get disjoint room; two writers
    going round a 4 KiB log while two readers read from it: every item the checks let
    through is whole (torn ones, whose header and key still matched, are caught)."""
    exe = build(tmp_path, sanitizer, sources=(ITEMLOG_TEST,))
    if sanitizer != "thread":
        assert re.fullmatch(r"ok: \d+ checks\n", run(exe, "unit"))
    assert run(exe, "stress") == "ok\n"
    assert run(exe, "race").endswith("\nok\n")


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_store_compiles_clean(compiler: str, tmp_path: Path) -> None:
    """store.c and itemlog.h compile without a warning, unoptimised and optimised."""
    found = find_compiler(compiler)
    if found is None:
        pytest.skip(f"{compiler} is not installed")
    for level in ("-O0", "-O2"):
        for source in (STORE, ITEMLOG_TEST):
            result = subprocess.run([found, *CFLAGS, level, "-c", source, "-o",
                                     str(tmp_path / "out.o")],
                                    capture_output=True, text=True, timeout=120)
            assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("cpu", sorted(FOREIGN))
def test_store_foreign_cpu(cpu: str, tmp_path: Path) -> None:
    """The NIC platforms' CPUs: compiles warning-free; passes the tests under qemu."""
    compiler, emulator = FOREIGN[cpu]
    if shutil.which(compiler[0]) is None:
        pytest.skip(f"{compiler[0]} is not installed")
    exe = build(tmp_path, "none", [*compiler, "-static"])
    itemlog = build(tmp_path, "none", [*compiler, "-static"], sources=(ITEMLOG_TEST,))
    if shutil.which(emulator) is None:
        pytest.skip(f"{emulator} is not installed (compiled only)")
    assert run(exe, "unit", emulator=emulator).startswith("ok: ")
    check_stress(run(exe, "stress", "0.1", emulator=emulator))
    assert run(itemlog, "unit", emulator=emulator).startswith("ok: ")
