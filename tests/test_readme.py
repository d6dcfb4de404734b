"""The README's example and set-up commands stay true."""
from __future__ import annotations

import os
import re

from conftest import ROOT, floem


def readme() -> str:
    with open(os.path.join(ROOT, "README.md")) as f:
        return f.read()


def test_readme_example_runs(tmp_path) -> None:
    code = re.search(r"```python\n(.*?)```", readme(), re.S).group(1)
    app = tmp_path / "app.py"
    app.write_text(code)
    result = floem("run", "--timeout", "60", str(app))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "42\n"


def test_readme_names_exactly_the_two_setup_commands() -> None:
    commands = re.findall(r"```\n(bash scripts/\S+)\n```", readme())
    assert commands == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    for command in commands:
        assert os.path.exists(os.path.join(ROOT, command.split()[1]))
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        assert "scripts/test.sh" in f.read()


def test_demo_runs() -> None:
    result = floem("run", "--timeout", "60", os.path.join(ROOT, "examples", "demo", "counters.py"))
    assert result.returncode == 0, result.stderr
    sizes = [64 + (i * 7919) % 1437 for i in range(1, 1001)]   # the demo's packet sizes
    small = sum(size < 512 for size in sizes)
    assert result.stdout == (f"small packets: {small}\nlarge packets: {len(sizes) - small}\n"
                             f"bytes: {sum(sizes)}\n")
