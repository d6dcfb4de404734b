"""Running a small app file through ``floem run`` and reading what it printed."""
from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

from conftest import floem


def run_app_result(tmp_path: Path, source: str, *args: str, env: dict[str, str] | None = None,
                   name: str = "app", timeout: float = 60,
                   options: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Write ``source`` as ``NAME.py`` in ``tmp_path`` and ``floem run`` it; it must succeed."""
    app = tmp_path / f"{name}.py"
    app.write_text(textwrap.dedent(source))
    result = floem("run", "--timeout", str(timeout), *options, str(app), "--", *args,
                   env=env, timeout=timeout + 120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def run_app(tmp_path: Path, source: str, *args: str, **kwargs) -> str:
    """`run_app_result`, returning what the program printed on stdout."""
    return run_app_result(tmp_path, source, *args, **kwargs).stdout


def asan_env() -> dict[str, str]:
    """FLOEM_CFLAGS for an AddressSanitizer build: out-of-bounds reads abort the program."""
    return {"FLOEM_CFLAGS": os.environ.get("FLOEM_CFLAGS", "")
            + " -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"}
