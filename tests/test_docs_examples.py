"""The programs of docs/examples print what their .expected files (and the guide) say.

Every ``docs/examples/NAME.py`` with a ``NAME.expected`` beside it is run through
``floem run``; extra options for the run (``--duration 0.5`` for a program without
``main``) go in ``NAME.args``. Its stdout must equal ``NAME.expected``, and the guide
must show the program in full and quote that output under its
``$ floem run ... docs/examples/NAME.py`` line. The programs of
``docs/examples/mistakes/`` must fail with the error the guide quotes for them.
"""
from __future__ import annotations

import os
import re
import shlex

import pytest

from conftest import ROOT, floem

EXAMPLES = os.path.join(ROOT, "docs", "examples")
GUIDE = os.path.join(ROOT, "docs", "guide.md")


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


NAMES = sorted(f[:-len(".expected")] for f in os.listdir(EXAMPLES) if f.endswith(".expected")
               and os.path.exists(os.path.join(EXAMPLES, f[:-len(".expected")] + ".py")))
# (command, app, error line) for each mistake the guide shows, e.g.
# ("check", "type_mismatch.py", ".../docs/examples/mistakes/type_mismatch.py:18: error: ...").
MISTAKES = re.findall(r"^\$ floem (run|check) docs/examples/mistakes/(\w+\.py)\n(\S+: error: .*)$",
                      read(GUIDE), re.M)


def run_options(name: str) -> list[str]:
    """Options from NAME.args, if any (shell syntax)."""
    path = os.path.join(EXAMPLES, name + ".args")
    return shlex.split(read(path)) if os.path.exists(path) else []


def test_there_are_examples() -> None:
    assert "inc2" in NAMES and "kvstore" in NAMES
    assert len(MISTAKES) == len([f for f in os.listdir(os.path.join(EXAMPLES, "mistakes"))
                                 if f.endswith(".py")])


@pytest.mark.parametrize("name", NAMES)
def test_example_prints_its_expected_output(name: str) -> None:
    app = os.path.join(EXAMPLES, name + ".py")
    result = floem("run", "--timeout", "60", *run_options(name), app)
    assert result.returncode == 0, result.stderr
    assert result.stdout == read(os.path.join(EXAMPLES, name + ".expected"))


@pytest.mark.parametrize("name", NAMES)
def test_guide_shows_the_program(name: str) -> None:
    listing = "```python\n" + read(os.path.join(EXAMPLES, name + ".py")).rstrip("\n") + "\n```"
    assert listing in read(GUIDE), f"the guide does not show docs/examples/{name}.py as it is"


@pytest.mark.parametrize("name", NAMES)
def test_guide_quotes_the_expected_output(name: str) -> None:
    command = " ".join(["$ floem run", *run_options(name), f"docs/examples/{name}.py"])
    quoted = re.search(re.escape(command) + r"\n(.*?)```", read(GUIDE), re.S)
    assert quoted is not None, f"the guide does not show `{command}`"
    assert quoted.group(1) == read(os.path.join(EXAMPLES, name + ".expected"))


@pytest.mark.parametrize("command,app,error", MISTAKES, ids=[m[1] for m in MISTAKES])
def test_mistake_fails_as_the_guide_says(command: str, app: str, error: str) -> None:
    result = floem(command, os.path.join(EXAMPLES, "mistakes", app))
    assert result.returncode == 1
    assert result.stderr.replace(ROOT, "...") == error + "\n"
