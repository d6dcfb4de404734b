"""The programs of docs/examples print what their .expected files (and the guide) say.

Every ``docs/examples/NAME.py`` with a ``NAME.expected`` beside it is run through
``floem run``; extra options for the run (``--duration 0.5`` for a program without
``main``) go in ``NAME.args``. Its stdout must equal ``NAME.expected``, and the guide
must show the program in full and quote that output under its
``$ floem run ... docs/examples/NAME.py`` line. The programs of
``docs/examples/mistakes/`` must fail with the error the guide quotes for them.

Every listing of the guide with ``$ COMMAND`` lines is what those commands show in a
terminal today, run one after the other from a fresh directory: a ``...`` line stands
for any lines, a path ``.../`` for the checkout, and times (``N ns``) and full-spins
change from run to run.
"""
from __future__ import annotations

import os
import pty
import re
import select
import shlex
import subprocess
import textwrap
import time

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


def guide_listings() -> list[tuple[int, list[tuple[str, str]]]]:
    """(line, [(command, what it shows), ...]) for each listing of the guide with commands."""
    listings, block, start = [], None, 0
    for number, text in enumerate(read(GUIDE).splitlines(), 1):
        if re.fullmatch(r" *```\w*", text):
            if block is None:
                block, start = [], number
                continue
            listing = textwrap.dedent("\n".join(block) + "\n")
            if listing.startswith("$ "):
                steps = [step.split("\n", 1) for step in listing[2:].split("\n$ ")]
                listings.append((start, [(step[0], step[1]) for step in steps]))
            block = None
        elif block is not None:
            block.append(text)
    return listings


LISTINGS = guide_listings()


def in_terminal(command: str, cwd: str, timeout: float = 120) -> str:
    """What the bash ``command`` shows in a terminal: stdout and stderr as they were written."""
    main, side = pty.openpty()
    proc = subprocess.Popen(["bash", "-c", command], stdin=subprocess.DEVNULL, stdout=side,
                            stderr=side, cwd=cwd)
    os.close(side)
    shown = b""
    deadline = time.monotonic() + timeout
    try:
        while select.select([main], [], [], max(0.0, deadline - time.monotonic()))[0]:
            try:
                data = os.read(main, 65536)
            except OSError:             # the terminal's other side is closed: all is read
                break
            if not data:
                break
            shown += data
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        proc.kill()
        os.close(main)
    return shown.decode().replace("\r\n", "\n")


def changing(text: str) -> str:
    """``text`` with what changes from run to run made the same."""
    text = re.sub(r"\b\d+ ns\b", "N ns", text)
    return re.sub(r"full-spins \d+", "full-spins N", text)


def listing_pattern(shown: str) -> str:
    """A regular expression for what a listing shows (``...`` lines: any lines)."""
    lines = [r"(?:.*\n)*?" if line == "..." else re.escape(line) + r"\n"
             for line in changing(shown).splitlines()]
    return "".join(lines)


@pytest.mark.parametrize("line, steps", LISTINGS, ids=[f"guide.md:{n}" for n, _ in LISTINGS])
def test_guide_listing_is_what_the_commands_show(tmp_path, line: int, steps) -> None:
    for top in ("docs", "tests"):
        os.symlink(os.path.join(ROOT, top), tmp_path / top)
    for command, shown in steps:
        actual = in_terminal(command, str(tmp_path))
        actual = changing(actual.replace(str(tmp_path), "...").replace(ROOT, "..."))
        assert re.fullmatch(listing_pattern(shown), actual), \
            f"guide.md:{line}: `$ {command}` shows\n{actual}\nnot\n{shown}"
