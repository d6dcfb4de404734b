"""Where in the app file a Floem object was made."""
from __future__ import annotations

import ast
import functools
import os
import sys
from types import FrameType

from floem.errors import Location

_FLOEM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIBRARY_DIR = _FLOEM_DIR + "library" + os.sep


@functools.lru_cache(maxsize=256)
def _internal(filename: str) -> bool:
    """True for the compiler's own frames; library elements count as user code."""
    path = os.path.abspath(filename)
    return (path.startswith(_FLOEM_DIR) and not path.startswith(_LIBRARY_DIR)) \
        or filename.startswith("<frozen")


def caller_location() -> Location:
    """The innermost frame outside the compiler: the user's line that made the object."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return Location("<unknown>", 0)
    return Location(os.path.abspath(frame.f_code.co_filename), frame.f_lineno)


def string_location(call: Location, text: str) -> Location:
    """Where the string literal ``text`` passed at ``call`` starts in the app file.

    The literal nearest the call wins (a body kept in a variable is found too);
    a body built at run time keeps the line of the call.
    """
    try:
        stamp = os.stat(call.file).st_mtime_ns
    except OSError:
        return call
    lines = _string_constants(call.file, stamp).get(text)
    if not lines:
        return call
    return Location(call.file, min(lines, key=lambda n: abs(n - call.line)))


@functools.lru_cache(maxsize=64)
def _string_constants(path: str, stamp: int) -> dict[str, list[int]]:
    try:
        with open(path) as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, list[int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.setdefault(node.value, []).append(node.lineno)
    return found
