"""Paths: where the installed package keeps what generated programs are compiled with (a
leaf module: element libraries and the build driver both use it), where a build directory
keeps its copy of it, and the directories floem writes, with errors that say what is
wrong with a path."""
from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from floem.errors import FloemError


def runtime_dir() -> str:
    """Where the C runtime (``include/``, ``src/``) is installed."""
    return str(resources.files("floem.runtime"))


def library_c_dir() -> str:
    """Where the element library's C support files (``floem.library``'s ``c/``) are installed."""
    return str(resources.files("floem.library") / "c")


def build_copies(program_files: Iterable[str] = ()) -> dict[str, str]:
    """What every build directory holds a copy of: each directory, and its copy's place in
    the build directory (relative to it). Floem's C (the runtime, the element library's
    support files), and the directories of the program's own files (``program_files``,
    absolute paths: the app file first, then the C files it names): the app's as ``app``,
    each other one as ``app-NAME`` (NAME its last component)."""
    runtime = runtime_dir()
    copies = {os.path.join(runtime, "include", "floem"): "runtime/include/floem",
              os.path.join(runtime, "src"): "runtime/src",
              library_c_dir(): "runtime/library"}
    for path in program_files:
        directory = os.path.dirname(os.path.realpath(path))
        if in_build(directory, copies) != directory:
            continue
        name = "app" if "app" not in copies.values() else f"app-{os.path.basename(directory)}"
        while name in copies.values():
            name += "_"
        copies[directory] = name
    return copies


def in_build(path: str, copies: dict[str, str] | None = None) -> str:
    """How a build directory's files name ``path``: for a directory of ``copies`` (by
    default `build_copies` of Floem's C alone) or a file in one, its copy's path relative to
    the build directory; else ``path`` itself."""
    real = os.path.realpath(path)
    for installed, copy in (build_copies() if copies is None else copies).items():
        directory = os.path.realpath(installed)
        if real == directory:
            return copy
        if os.path.dirname(real) == directory and not os.path.isdir(real):
            return f"{copy}/{os.path.basename(real)}"
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
        reason = e.strerror
    return reason if os.fspath(failed) == path else f"{failed}: {reason}"
