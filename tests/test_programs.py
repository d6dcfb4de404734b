"""Every app in tests/programs prints exactly its .expected file through `floem run`."""
from __future__ import annotations

import os

import pytest

from conftest import PROGRAMS, floem

APPS = sorted(f[:-3] for f in os.listdir(PROGRAMS) if f.endswith(".py"))


@pytest.mark.parametrize("app", APPS)
def test_program_output(app: str) -> None:
    with open(os.path.join(PROGRAMS, app + ".expected")) as f:
        expected = f.read()
    result = floem("run", "--timeout", "60", os.path.join(PROGRAMS, app + ".py"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected
