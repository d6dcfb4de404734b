"""Where the installed package keeps what generated programs are compiled with (a leaf
module: element libraries and the build driver both use it), and where a build directory
keeps its copy of it."""
from __future__ import annotations

import os
from importlib import resources


def runtime_dir() -> str:
    """Where the C runtime (``include/``, ``src/``) is installed."""
    return str(resources.files("floem.runtime"))


def library_c_dir() -> str:
    """Where the element library's C support files (``floem.library``'s ``c/``) are installed."""
    return str(resources.files("floem.library") / "c")


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
    for installed, copy in build_copies().items():
        inside = os.path.relpath(real, os.path.realpath(installed))
        if inside == ".":
            return copy
        if os.sep not in inside and inside != "..":
            return f"{copy}/{inside}"
    return path
