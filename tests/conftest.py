"""Shared fixtures: the floem CLI as a user runs it, with a private build cache; waiting for
a condition."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from floem.launcher import launcher_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "tests", "programs")


def floem_command() -> list[str]:
    """The installed ``floem`` console script (or the module, when not installed)."""
    exe = shutil.which("floem")
    return [exe] if exe else [sys.executable, "-m", "floem.cli"]


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Every test builds into one fresh cache, with warnings as errors."""
    cache = str(tmp_path_factory.mktemp("floem-cache"))
    os.environ["FLOEM_CACHE"] = cache
    os.environ["FLOEM_CFLAGS"] = os.environ.get("FLOEM_CFLAGS", "") + " -Werror"
    return cache


def floem(*args: str, timeout: float = 120, cwd: str | None = None,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``floem ARGS`` and capture its output."""
    return subprocess.run(floem_command() + list(args), capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env={**os.environ, **(env or {})})


def left_in_shm(before: set[str]) -> set[str]:
    """The shared memory objects in /dev/shm that were not in ``before`` and whose `floem
    run` has ended: what runs left behind (those of runs still going, another test's
    beside this one, are not)."""
    return {name for name in set(os.listdir("/dev/shm")) - before
            if (pid := launcher_of(name)) is None or not os.path.exists(f"/proc/{pid}")}


def wait_until(ready: Callable[[], bool], what: str, proc: subprocess.Popen | None = None,
               timeout: float = 60) -> None:
    """Poll ``ready`` until it holds (rather than sleeping for a guessed time); fail, saying
    that ``what`` did not happen, if ``proc`` ends first or after ``timeout`` seconds (a
    bound for a hung program, far above the time it takes)."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc is None or proc.poll() is None, f"{what}: not before the process ended " \
                                                    f"(status {proc.returncode})"
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.01)
