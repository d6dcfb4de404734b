"""Paths: where the installed package keeps what generated programs are compiled with (a
leaf module: element libraries and the build driver both use it), where a build directory
keeps its copy of it, and the directories floem writes, with errors that say what is
wrong with a path."""
from __future__ import annotations

import errno
import functools
import os
from importlib import resources
from pathlib import Path

from floem.errors import FloemError


def runtime_dir() -> str:
    """Where the C runtime (``include/``, ``src/``) is installed."""
    return str(resources.files("floem.runtime"))


def library_c_dir() -> str:
    """Where the element library's C support files (``floem.library``'s ``c/``) are installed."""
    return str(resources.files("floem.library") / "c")


@functools.cache
def _package_roots() -> tuple[str, ...]:
    """Where Floem's own packages (the compiler's, the element library's) are installed."""
    return tuple(os.path.realpath(str(resources.files(p))) for p in ("floem", "floem.library"))


def is_floem_source(path: str) -> bool:
    """Whether ``path`` is in one of Floem's own packages (the compiler's or the element
    library's), not a file of the user's."""
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root + os.sep) for root in _package_roots())


#: The makefile of the runtime archive, in the runtime's directory (and a build directory's
#: ``runtime/``): every build links the runtime compiled once per toolchain (floem/builder.py).
RUNTIME_MAKEFILE = "runtime.mk"


def build_copies() -> dict[str, str]:
    """Floem's C that every build directory holds a copy of: each installed directory, and
    its copy's place in the build directory (relative to it)."""
    runtime = runtime_dir()
    return {os.path.join(runtime, "include", "floem"): "runtime/include/floem",
            os.path.join(runtime, "src"): "runtime/src",
            library_c_dir(): "runtime/library"}


def in_build(path: str) -> str:
    """How a build directory's files name ``path``: for a directory of `build_copies` or a
    file in one, its copy's path relative to the build directory; else ``path`` itself (a
    file of the program's)."""
    real = os.path.realpath(path)
    if real == os.path.realpath(os.path.join(runtime_dir(), RUNTIME_MAKEFILE)):
        return f"runtime/{RUNTIME_MAKEFILE}"
    for installed, copy in build_copies().items():
        inside = os.path.relpath(real, os.path.realpath(installed))
        if inside == ".":
            return copy
        if os.sep not in inside and inside != "..":
            return f"{copy}/{inside}"
    return path


def make_directory(path: str, what: str) -> str:
    """Create directory ``path``, and its parents, unless it exists; ``path``. When it
    cannot be, a FloemError: ``cannot create WHAT PATH: ...`` (``what``: e.g. 'the build
    directory')."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise FloemError(f"cannot create {what} {path}: {path_problem(e, path)}") from None
    return path


def path_problem(e: OSError, path: str | None = None) -> str:
    """What is wrong with the path of ``e`` in words a user reads: the part of it that is
    not a directory, or the system's reason, preceded by the path that failed unless it is
    ``path``."""
    failed = e.filename
    if failed is None:
        return e.strerror or str(e)
    if e.errno == errno.ENOTDIR:
        whole = Path(failed)
        part = next((p for p in [*reversed(whole.parents), whole] if p.exists() and not p.is_dir()),
                    whole)
        reason = f"{part} is not a directory"
    elif e.errno == errno.EEXIST and not os.path.isdir(failed):
        reason = "it exists and is not a directory"
    else:
        reason = e.strerror or str(e)
    return reason if os.fspath(failed) == path else f"{failed}: {reason}"
