"""The README's example and set-up commands stay true."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

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


@pytest.mark.slow
def test_demo_compares_three_designs_of_the_key_value_store() -> None:
    """What scripts/demo.sh runs after the set-up."""
    result = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "kvs", "run.py"),
                             "--demo"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = {cells[0]: cells[1:] for line in result.stdout.splitlines()
            if line.startswith("| ") and not line.startswith("| ---")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    assert list(rows) == ["configuration", "cpu", "split", "cache-wb #2"]
    for design in ("cpu", "split", "cache-wb #2"):
        host_us, saved, rate = rows[design][:3]
        assert float(host_us) >= 0 and float(rate.replace(",", "")) > 1000
    assert rows["cpu"][4] == "-" and float(rows["cache-wb #2"][4].rstrip("%")) > 50
