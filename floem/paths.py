"""Where the installed package keeps what generated programs are compiled with (a leaf
module: element libraries and the build driver both use it)."""
from __future__ import annotations

from importlib import resources


def runtime_dir() -> str:
    """Where the C runtime (``include/``, ``src/``) is installed."""
    return str(resources.files("floem.runtime"))
