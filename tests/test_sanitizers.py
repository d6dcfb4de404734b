"""Generated code and the runtime under ASan+UBSan, and threaded programs under TSan."""
from __future__ import annotations

import os

import pytest

from conftest import PROGRAMS, ROOT, floem

APPS = sorted(f[:-3] for f in os.listdir(PROGRAMS) if f.endswith(".py"))
THREADED = ["thread_fills_state", "core_ids", "queue_two_channels", "queue_variable_field",
            "queue_processes", "fresh_state"]
SANITIZERS = {
    "address,undefined": "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer",
    "thread": "-fsanitize=thread -O1",
}


def run_with(flags: str, app: str, tmp_path) -> None:
    env = {"FLOEM_CFLAGS": os.environ["FLOEM_CFLAGS"] + " " + flags,
           "FLOEM_CACHE": str(tmp_path / "cache"),
           "TSAN_OPTIONS": "halt_on_error=1", "UBSAN_OPTIONS": "halt_on_error=1"}
    result = floem("run", "--timeout", "60", app, env=env)
    assert result.returncode == 0, result.stderr
    expected = os.path.splitext(app)[0] + ".expected"
    if os.path.exists(expected):
        with open(expected) as f:
            assert result.stdout == f.read()
    assert "Sanitizer" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("app", APPS)
def test_asan_ubsan(app: str, tmp_path) -> None:
    run_with(SANITIZERS["address,undefined"], os.path.join(PROGRAMS, app + ".py"), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("app", [os.path.join(PROGRAMS, a + ".py") for a in THREADED]
                         + [os.path.join(ROOT, "examples", "demo", "counters.py")])
def test_tsan(app: str, tmp_path) -> None:
    run_with(SANITIZERS["thread"], app, tmp_path)
