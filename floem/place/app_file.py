"""A placement as an app file: the input app's own text, begun by ``floem.origin`` (so it
runs from wherever it is written) and ended by one ``floem.cut`` line per cut segment.

    import floem  # floem place: examples/nf/aes.py, placed as chosen (see the end)
    floem.origin("../examples/nf/aes.py")
    floem.defaults(buckets=8192)      # the parameters it sized, if any
    ... the app, unchanged ...
    floem.cut("aes", rx=["FromNet0", "CheckUDP0"], tx=["ToNet0"], rx_cores=2)

Moving an element from one list to another, or changing a thread count, is a new
placement; ``floem run`` checks it like any program (``split_auto``'s rules).
"""
from __future__ import annotations

import ast
import difflib
import os
from typing import Any

from floem.errors import FloemError
from floem.ir import Cut


def placed_source(app: str, cuts: list[Cut], values: dict[str, Any], written_to: str,
                  note: str) -> str:
    """The text of ``app`` placed by ``cuts`` with the parameter defaults ``values``, for a
    file at ``written_to``; ``note`` (a line or a few) says where the placement came from."""
    text = _read(app)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    at = _first_statement(text, app)
    origin = os.path.relpath(os.path.abspath(app), os.path.dirname(os.path.abspath(written_to)))
    head = [f"import floem  # floem place: {origin}, placed as chosen (see the end)\n",
            f"floem.origin({origin!r})\n"]
    if values:
        head.append(f"floem.defaults({', '.join(f'{k}={v!r}' for k, v in values.items())})\n")
    tail = ["\n"] + [f"# {line}\n" for line in note.splitlines()] \
        + [cut_call(c) + "\n" for c in cuts]
    return "".join(lines[:at] + head + lines[at:] + tail)


def cut_call(cut: Cut) -> str:
    """``cut`` as the ``floem.cut(...)`` line that states it."""
    words = [repr(cut.segment), f"rx={list(cut.rx)!r}", f"tx={list(cut.tx)!r}"]
    words += [f"rx_cores={cut.rx_cores}"] if cut.rx else []
    words += [f"cpu_cores={cut.cpu_cores}"] if cut.cpu_cores is not None else []
    words += [f"tx_cores={cut.tx_cores}"] if cut.tx else []
    line = f"floem.cut({', '.join(words)})"
    return line if len(line) <= 99 else "floem.cut(" + ",\n          ".join(words) + ")"


def diff(app: str, placed: str, placed_path: str) -> str:
    """A unified diff from ``app`` to the placed text written at ``placed_path``."""
    return "".join(difflib.unified_diff(_read(app).splitlines(keepends=True),
                                        placed.splitlines(keepends=True),
                                        fromfile=app, tofile=placed_path))


def _read(app: str) -> str:
    try:
        with open(app) as f:
            return f.read()
    except OSError as e:
        raise FloemError(f"cannot read the app file {app}: {e.strerror}") from None


def _first_statement(text: str, app: str) -> int:
    """The index of the line where the app's first statement after its docstring and
    ``from __future__`` imports begins (where the placed file's own lines go)."""
    try:
        body = ast.parse(text).body
    except SyntaxError as e:
        raise FloemError(f"the app file does not parse: {e.msg}", app, e.lineno or 0) from None
    for i, node in enumerate(body):
        docstring = i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str)
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not docstring and not future:
            return node.lineno - 1 - _comments_above(text, node.lineno)
    return len(text.splitlines())


def _comments_above(text: str, lineno: int) -> int:
    """How many comment lines sit right above line ``lineno`` (they stay with it)."""
    lines = text.splitlines()
    n = 0
    while lineno - 2 - n >= 0 and lines[lineno - 2 - n].lstrip().startswith("#"):
        n += 1
    return n
