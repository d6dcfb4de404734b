"""The C runtime's queue, cache, kept-frame and packet-trace tests (runtime/tests/),
compiled and run here.

Queue unit tests run optimised and under ASan+UBSan; the queue stress test (several
producer and consumer threads, millions of entries) runs optimised and under TSan.
Both also run for the NIC platforms' CPUs (Arm64, big-endian MIPS64) under qemu when
the cross compilers are installed, and so does the packet-trace test.
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
SANITIZERS = {
    "address,undefined": ["-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                          "-fno-omit-frame-pointer"],
    "thread": ["-O1", "-fsanitize=thread"],
    "none": ["-O2"],
}
SANITIZER_ENV = {"TSAN_OPTIONS": "halt_on_error=1", "UBSAN_OPTIONS": "halt_on_error=1"}
# Entries per stress scenario relative to the default run (about 10 million in all).
STRESS_SCALE = {"thread": "0.25", "none": "1"}
# Cross compiler (with flags) and emulator for each foreign CPU.
FOREIGN = {
    "aarch64": (["aarch64-linux-gnu-gcc"], "qemu-aarch64"),
    "mips64": (["mips64-linux-gnuabi64-gcc", "-march=mips64r2"], "qemu-mips64"),
}


def build(tmp_path, program: str, sanitizer: str, compiler: list[str] | None = None,
          runtime: str = "queue.c", defines: list[str] | None = None) -> str:
    """Compile runtime/tests/PROGRAM.c with a runtime source (the queue's) and ``-D``
    ``defines``; returns the executable."""
    exe = str(tmp_path / f"{program}-{sanitizer.replace(',', '-')}")
    sources = [os.path.join(RUNTIME, "tests", program + ".c"),
               os.path.join(RUNTIME, "src", runtime)]
    cmd = [*(compiler or [os.environ.get("CC", "gcc")]), *CFLAGS, *SANITIZERS[sanitizer],
           *[f"-D{d}" for d in defines or []], *sources, "-o", exe]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return exe


def run(exe: str, *args: str, emulator: str | None = None) -> str:
    """Run a test program; it must exit 0 with no sanitizer report. Returns its stdout."""
    result = subprocess.run([*([emulator] if emulator else []), exe, *args], capture_output=True,
                            text=True, timeout=120, env={**os.environ, **SANITIZER_ENV})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Sanitizer" not in result.stderr, result.stderr
    return result.stdout


@pytest.mark.parametrize("sanitizer", ["address,undefined", "none"])
def test_queue_unit(sanitizer: str, tmp_path) -> None:
    out = run(build(tmp_path, "test_queue", sanitizer))
    assert out.startswith("ok: ")


@pytest.mark.parametrize("sanitizer", [pytest.param("thread", marks=pytest.mark.slow), "none"])
def test_queue_stress(sanitizer: str, tmp_path) -> None:
    out = run(build(tmp_path, "stress_queue", sanitizer), STRESS_SCALE[sanitizer])
    assert out.splitlines()[-1] == "ok"
    assert sum(int(n) for n in re.findall(r"(\d+) entries", out)) >= 2_000_000


@pytest.mark.parametrize("cpu", sorted(FOREIGN))
def test_queue_foreign_cpu(cpu: str, tmp_path) -> None:
    compiler, emulator = FOREIGN[cpu]
    if shutil.which(compiler[0]) is None or shutil.which(emulator) is None:
        pytest.skip(f"{compiler[0]} or {emulator} is not installed")
    static = [*compiler, "-static"]
    assert run(build(tmp_path, "test_queue", "none", static), emulator=emulator).startswith("ok: ")
    out = run(build(tmp_path, "stress_queue", "none", static), "0.1", emulator=emulator)
    assert out.splitlines()[-1] == "ok"


@pytest.mark.parametrize("sanitizer", ["address,undefined", "thread", "none"])
def test_cache_forget_and_values_by_reference_under_concurrent_sets(sanitizer: str,
                                                                    tmp_path) -> None:
    out = run(build(tmp_path, "test_cache", sanitizer, runtime="cache.c"), "0.5")
    assert out.splitlines()[-1].startswith("ok: ")


@pytest.mark.parametrize("sanitizer", ["address,undefined", "thread", "none"])
def test_kept_frames_are_taken_back_only_by_their_reference(sanitizer: str, tmp_path) -> None:
    exe = build(tmp_path, "test_frames", sanitizer, runtime="frames.c", defines=["FLOEM_NET_PCAP"])
    assert run(exe, "0.3").startswith("ok: ")


@pytest.mark.parametrize("cpu", sorted(FOREIGN))
def test_kept_frames_foreign_cpu(cpu: str, tmp_path) -> None:
    compiler, emulator = FOREIGN[cpu]
    if shutil.which(compiler[0]) is None or shutil.which(emulator) is None:
        pytest.skip(f"{compiler[0]} or {emulator} is not installed")
    exe = build(tmp_path, "test_frames", "none", [*compiler, "-static"], runtime="frames.c",
                defines=["FLOEM_NET_PCAP"])
    assert run(exe, "0.2", emulator=emulator).startswith("ok: ")


@pytest.mark.parametrize("sanitizer", ["address,undefined", "thread", "none", "mips64"])
def test_trace_events_pending_packets_and_the_bounded_buffer(sanitizer: str, tmp_path) -> None:
    """runtime/tests/test_trace.c: the trace file it writes is read back (also on the
    big-endian MIPS64 of the LiquidIO, under qemu)."""
    if sanitizer in FOREIGN:
        compiler, emulator = FOREIGN[sanitizer]
        if shutil.which(compiler[0]) is None or shutil.which(emulator) is None:
            pytest.skip(f"{compiler[0]} or {emulator} is not installed")
        exe = build(tmp_path, "test_trace", "none", [*compiler, "-static"], runtime="trace.c")
    else:
        compiler, emulator = None, None
        exe = build(tmp_path, "test_trace", sanitizer, runtime="trace.c")
    assert run(exe, str(tmp_path), emulator=emulator).startswith("ok: ")
