"""Where an exploration's rows come from, so that a result can be traced and found stale.

Every row records the Floem commit it was counted with (``+changes`` when the work tree
differed from it), a hash of the app's own sources (every ``.py``, ``.c``, ``.h`` and
``.toml`` file in the app file's directory and below: its elements, C, workload generator
and data; the compiler, runtime and element library are the commit's), a hash of the
figures of each platform file its prediction read (``floem/platforms/<name>.toml``, its
cited sources left out) and the toolchain
that built and counted it (gcc, valgrind, qemu). `stale` says whether a recorded hash
still matches the tree.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import tomllib

from floem.explore.model import PLATFORM_DIR

#: What is hashed of an app's directory.
SOURCE_SUFFIXES = (".py", ".c", ".h", ".toml")
#: The tools whose version a row records, each with the command that prints it.
TOOLS = {"gcc": ["gcc", "--version"], "valgrind": ["valgrind", "--version"],
         "qemu": ["qemu-mips64", "--version"], "mips64-gcc": ["mips64-linux-gnuabi64-gcc",
                                                            "--version"],
         "aarch64-gcc": ["aarch64-linux-gnu-gcc", "--version"]}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def app_sources_hash(app: str) -> str:
    """A hash of the app's own sources (see the module's docstring): 16 hex digits."""
    top = os.path.dirname(os.path.abspath(app))
    digest = hashlib.sha256()
    for where, dirs, files in sorted(os.walk(top)):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                path = os.path.join(where, name)
                digest.update(os.path.relpath(path, top).encode() + b"\0")
                with open(path, "rb") as f:
                    digest.update(f.read() + b"\0")
    return digest.hexdigest()[:16]


def platform_hash(name: str) -> str:
    """A hash of the figures of the platform file ``floem/platforms/<name>.toml`` (every
    value but the ``source`` texts, which cite them): 16 hex digits, or ``missing``."""
    try:
        with open(os.path.join(PLATFORM_DIR, name + ".toml"), "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError):
        return "missing"

    def figures(value: object) -> object:
        if isinstance(value, dict):
            return {k: figures(v) for k, v in value.items() if k != "source"}
        return value
    text = json.dumps(figures(data), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def app_path(app: str) -> str:
    """The app file as a row names it: relative to the repository when inside it."""
    real = os.path.abspath(app)
    inside = os.path.relpath(real, ROOT)
    return real if inside.startswith("..") else inside


def resolve(path: str) -> str:
    """A row's app path as a file here (relative paths are the repository's)."""
    return path if os.path.isabs(path) else os.path.join(ROOT, path)


@functools.cache
def commit() -> str:
    """The commit of the Floem tree counting, ``+changes`` when its files differ from it;
    ``unknown`` outside a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        head = git("rev-parse", "--short=12", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if changed else "")


@functools.cache
def toolchain() -> dict[str, str]:
    """Each tool's version line (``missing`` when it is not installed)."""
    found = {}
    for name, command in TOOLS.items():
        try:
            out = subprocess.run(command, capture_output=True, text=True).stdout
        except OSError:
            out = ""
        found[name] = out.splitlines()[0].strip() if out.strip() else "missing"
    return found


def stale(row: dict[str, object]) -> str | None:
    """Why a row no longer describes the tree (its app's sources or a platform file it was
    predicted on changed, or it records none), or None."""
    app, recorded = row.get("app"), row.get("app_sources")
    if not isinstance(app, str) or not isinstance(recorded, str):
        return "records no app sources"
    path = resolve(app)
    if not os.path.exists(path):
        return f"{app} is gone"
    if app_sources_hash(path) != recorded:
        return f"{app}'s sources changed since it was counted"
    platforms = row.get("platform_sources")
    if not isinstance(platforms, dict) or not platforms:
        return "records no platform files"
    for name, hashed in sorted(platforms.items()):
        if platform_hash(name) != hashed:
            return f"floem/platforms/{name}.toml changed since the row was predicted"
    return None
