"""Floem's counting plugin for qemu-user (``count_plugin.c`` beside this file): building it,
the arguments that load it, and reading what it writes.

``floem run --count-instructions BASE`` runs each process under qemu-user of its ISA
(``qemu-mips64`` for the LiquidIO, ``qemu-aarch64`` for the BlueField-2, ``qemu-x86_64``
for the host and the emulated NIC) with the plugin, which writes one line per thread to
``BASE.PROCESS``: the function the thread is named by and what it executed on packets
(instructions, atomic read-modify-writes, loads and fetches missing a simulated first and
last level cache). The plugin is compiled once per source into the build cache, against
qemu's plugin header (``scripts/qemu_plugin_header.sh`` installs it).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from importlib import resources

from floem.errors import FloemError

#: Where scripts/qemu_plugin_header.sh installs qemu's plugin API header.
HEADER = "/usr/local/include/qemu-plugin.h"
#: The events of each thread's line, in order (callgrind's names).
EVENTS = ("Ir", "Ge", "I1mr", "D1mr", "I2mr", "D2mr", "ILmr", "DLmr")


def plugin_path(cache: str) -> str:
    """The compiled plugin, a shared object in the build cache ``cache``, compiled if it is
    not."""
    source = str(resources.files("floem.explore") / "count_plugin.c")
    with open(source, "rb") as f:
        key = hashlib.sha256(f.read()).hexdigest()[:24]
    path = os.path.join(cache, f"count-plugin-{key}.so")
    if os.path.exists(path):
        return path
    if not os.path.exists(HEADER):
        raise FloemError(f"--count-instructions needs qemu's plugin header {HEADER}: run "
                         "bash scripts/setup.sh (it fetches it: scripts/qemu_plugin_header.sh)")
    fd, building = tempfile.mkstemp(suffix=".so", dir=cache)
    os.close(fd)
    cc = os.environ.get("CC", "cc")
    try:
        made = subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-shared",
                               "-fPIC", "-o", building, source, "-lpthread"],
                              capture_output=True, text=True)
    except OSError:
        os.unlink(building)
        raise FloemError(f"no C compiler: {cc!r} not found (install gcc)") from None
    if made.returncode != 0:
        os.unlink(building)
        raise FloemError(f"cannot compile the counting plugin {source}:\n{made.stderr.strip()}")
    os.replace(building, path)          # atomic: a concurrent build writes the same file
    return path


def plugin_arguments(cache: str, out: str, geometry: str | None = None,
                     elements: str | None = None) -> list[str]:
    """qemu-user's arguments that load the plugin (compiled into the build cache
    ``cache``), writing to ``out``, simulating caches of ``geometry`` (``I1:D1:LL`` or
    ``I1:D1:L2:LL``, each ``BYTES,WAYS,LINE``) when given, charging each thread's counts to
    the element functions named in the file ``elements`` (one a line) when given."""
    argument = f"file={_escaped(plugin_path(cache))},out={_escaped(out)}"
    if geometry:
        argument += ",cache=" + geometry.replace(",", "/")
    if elements:
        argument += f",elements={_escaped(elements)}"
    return ["-plugin", argument]


def _escaped(value: str) -> str:
    """``value`` in qemu's option syntax (a comma doubled)."""
    return value.replace(",", ",,")


#: Each kind of line: how many words it has, and where its numbers begin.
_LINES = {"thread": (3 + len(EVENTS), 3), "element": (2 + len(EVENTS), 2), "call": (4, 3),
          "idle": (3 + len(EVENTS), 1)}
#: The callee of an element's call that ends work it handed to an engine (runtime.h).
ENGINE_END = "floem_engine_end"


@dataclass(frozen=True)
class ThreadCounts:
    """One thread's line: the function it is named by, and each of `EVENTS`; with element
    functions named, what each counted while it was the innermost element on the thread's
    call stack, and how often each called another (or `ENGINE_END`), by (caller, callee);
    for a sync-layer manager, how many rounds it ran (``rounds``), how many of them moved
    nothing (``idle_rounds``) and what those counted (``idle``, not in ``counts``)."""

    root: str
    counts: dict[str, int]
    elements: dict[str, dict[str, int]] = field(default_factory=dict)
    calls: dict[tuple[str, str], int] = field(default_factory=dict)
    rounds: int = 0
    idle_rounds: int = 0
    idle: dict[str, int] = field(default_factory=dict)


def read_counts(path: str) -> list[ThreadCounts]:
    """The threads of the plugin's file at ``path``, in the order they started (a
    `FloemError` when it is not one, or the plugin says its counts failed)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise FloemError(f"cannot read the counts {path}: {e.strerror}") from None
    if lines and lines[0].startswith("failed "):
        raise FloemError(f"the counting plugin failed ({lines[0].removeprefix('failed ')}): "
                         f"{path}")
    if not lines or lines[0].split() != ["events", *EVENTS]:
        raise FloemError(f"{path} is not a file of the counting plugin")
    threads: list[ThreadCounts] = []
    for line in lines[1:]:
        words = line.split()
        kind = words[0] if words else ""
        length, numbers = _LINES.get(kind, (0, 0))
        if not length or len(words) != length or not all(w.isdigit() for w in words[numbers:]) \
                or (kind != "thread" and not threads):
            raise FloemError(f"{path}: not a thread's counts: {line!r}")
        if kind == "thread":
            threads.append(ThreadCounts(words[2], dict(zip(EVENTS, map(int, words[3:])))))
        elif kind == "element":
            threads[-1].elements[words[1]] = dict(zip(EVENTS, map(int, words[2:])))
        elif kind == "idle":
            threads[-1] = replace(threads[-1], rounds=int(words[1]),
                                  idle_rounds=int(words[2]),
                                  idle=dict(zip(EVENTS, map(int, words[3:]))))
        else:
            threads[-1].calls[(words[1], words[2])] = int(words[3])
    return threads
