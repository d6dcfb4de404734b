"""The emulated NIC's runtime: the DMA engine and the queue synchronization layer.

Builds runtime/tests/test_dma.c and runtime/tests/test_sync.c in several variants and
runs them: optimised, under ASan+UBSan, under TSan (threaded cases), the blocking
unbatched layer (-DFLOEM_SYNC_BLOCKING), and, when the cross tools are installed
(scripts/setup.sh installs them), big-endian MIPS64 under qemu-mips64, where the
test's host side keeps the rings little-endian so the layer's byte-order conversions
are what make it pass.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT

RUNTIME = os.path.join(ROOT, "runtime")
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-pthread",
          "-I" + os.path.join(RUNTIME, "include")]
VARIANTS = {
    "plain": ["-O2"],
    "asan": ["-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
             "-fno-omit-frame-pointer"],
    "tsan": ["-O1", "-fsanitize=thread"],
    "blocking": ["-O2", "-DFLOEM_SYNC_BLOCKING"],
    "blocking-asan": ["-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                      "-fno-omit-frame-pointer", "-DFLOEM_SYNC_BLOCKING"],
    "blocking-tsan": ["-O1", "-fsanitize=thread", "-DFLOEM_SYNC_BLOCKING"],
}
SOURCES = {
    "test_dma": ["tests/test_dma.c", "src/dma.c", "src/count.c"],
    "test_sync": ["tests/test_sync.c", "src/sync.c", "src/dma.c", "src/count.c", "src/queue.c",
                  "src/threads.c", "src/shared.c"],
}
SANITIZER_ENV = {"TSAN_OPTIONS": "halt_on_error=1", "UBSAN_OPTIONS": "halt_on_error=1"}
MIPS_CC = "mips64-linux-gnuabi64-gcc"
MIPS_RUN = "qemu-mips64"


def build(directory, program: str, variant: str, cc: str | None = None,
          extra: tuple[str, ...] = ()) -> str:
    """Compile runtime test PROGRAM in VARIANT into DIRECTORY; returns the executable."""
    exe = str(directory / f"{program}-{variant}")
    sources = [os.path.join(RUNTIME, s) for s in SOURCES[program]]
    cmd = [cc or os.environ.get("CC", "gcc"), *CFLAGS, *VARIANTS[variant], *extra, *sources,
           "-o", exe]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return exe


def run(*cmd: str) -> str:
    """Run a test program: exit 0, no sanitizer report, "ok" last. Returns its stdout."""
    result = subprocess.run(list(cmd), capture_output=True, text=True, timeout=120,
                            env={**os.environ, **SANITIZER_ENV})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Sanitizer" not in result.stderr, result.stderr
    assert result.stdout.splitlines()[-1].startswith("ok"), result.stdout
    return result.stdout


def entries(out: str) -> int:
    """Entries moved by the end-to-end cases in a test_sync e2e run."""
    return sum(int(n) for n in re.findall(r"(\d+) entries", out))


@pytest.mark.parametrize("variant", ["plain", "asan", "tsan"])
def test_dma_engine(variant: str, tmp_path) -> None:
    run(build(tmp_path, "test_dma", variant))


@pytest.mark.parametrize("variant", ["plain", "asan", "blocking-asan"])
def test_sync_single_threaded(variant: str, tmp_path) -> None:
    run(build(tmp_path, "test_sync", variant))


# (variant, scale): scale 1 moves 2 million entries in each of five cases.
END_TO_END = [
    ("plain", 1.0, False),
    ("asan", 0.02, True),
    ("tsan", 0.05, True),
    ("blocking", 0.1, True),
    ("blocking-tsan", 0.01, True),
]


@pytest.mark.parametrize("variant,scale", [
    pytest.param(v, s, marks=[pytest.mark.slow] if slow else [], id=v)
    for v, s, slow in END_TO_END])
def test_sync_end_to_end(variant: str, scale: float, tmp_path) -> None:
    out = run(build(tmp_path, "test_sync", variant), "e2e", str(scale))
    assert entries(out) >= 5 * max(1000, int(2_000_000 * scale) // 2 * 2)


@pytest.mark.slow
def test_big_endian_nic(tmp_path) -> None:
    missing = [t for t in (MIPS_CC, MIPS_RUN) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (scripts/setup.sh installs "
                    "gcc-mips64-linux-gnuabi64 and qemu-user)")
    mips = ("-march=mips64r2", "-static")
    run(MIPS_RUN, build(tmp_path, "test_dma", "plain", MIPS_CC, mips))
    sync = build(tmp_path, "test_sync", "plain", MIPS_CC, mips)
    run(MIPS_RUN, sync)
    out = run(MIPS_RUN, sync, "e2e", "0.05")
    assert entries(out) >= 4 * 100_000
