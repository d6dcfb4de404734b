"""Shared fixtures: the floem CLI as a user runs it, with a private build cache."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

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
