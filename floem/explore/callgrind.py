"""Reading a callgrind profile: the inclusive cost of each function, every event, exactly.

What benchmarks/counting/run.py and the tests read, to compare Floem's counting plugin
with callgrind on the same x86-64 builds: callgrind collecting only what threads execute
on packets (``--collect-atstart=no`` and the runtime's client requests), one profile per
thread, a thread's whole profile is the inclusive cost of its ``<segment>_thread``
function. This reads the profile file itself (the format of
callgrind's manual, "Callgrind Format Specification"), not ``callgrind_annotate``'s
report, whose lines drop a function's name when inlined code shares its cost: a
function's inclusive cost is its own cost lines plus the cost lines of the calls made
from it, summed over every block of the function in the file.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from floem.errors import FloemError

#: ``fn=(12) name``, ``fn=(12)`` or ``fn=name`` (and ``cfn=``, a called function's name).
_NAME = re.compile(r"^(c?fn)=(?:\((\d+)\))?\s*(.*)$")


@dataclass
class Profile:
    """One callgrind profile: its events (``Ir``, ``Ge``, ``DLmr``...), the total of each,
    and each function's inclusive cost, by name (an event missing from a line is 0)."""

    events: list[str]
    totals: list[int]
    inclusive: dict[str, list[int]] = field(default_factory=dict)
    calls: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # caller -> callee
    called: dict[str, dict[str, int]] = field(default_factory=dict)     # caller -> callee: times

    def total(self, event: str) -> int:
        """The whole profile's count of ``event`` (0 when it was not collected)."""
        return self.totals[self.events.index(event)] if event in self.events else 0

    def of(self, function: str, event: str) -> int:
        """``function``'s inclusive count of ``event`` (0 when not collected)."""
        if event not in self.events:
            return 0
        return self.inclusive.get(function, [0] * len(self.events))[self.events.index(event)]


def read_profile(path: str) -> Profile:
    """Parse the callgrind profile at ``path`` (a `FloemError` when it is not one)."""
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise FloemError(f"cannot read the callgrind profile {path}: {e.strerror}") from None
    events: list[str] = []
    positions = 1
    summary: list[int] | None = None
    totals: list[int] | None = None
    names: dict[str, str] = {}          # name compression: fn= and cfn= share the ids
    inclusive: dict[str, list[int]] = {}
    calls: dict[str, dict[str, list[int]]] = {}
    called: dict[str, dict[str, int]] = {}
    current: list[int] | None = None
    function = callee = ""
    call: list[int] | None = None           # the cost of the call the last calls= announced
    for line in lines:
        if not line or line[0] == "#":
            continue
        if line[0].isdigit() or line[0] in "+-*":     # a cost line: the function's own, or
            if current is not None:                     # a call's (after calls=): inclusive
                for i, value in enumerate(line.split()[positions:positions + len(events)]):
                    current[i] += int(value)
                    if call is not None:
                        call[i] += int(value)
            call = None
        elif line.startswith(("fn=", "cfn=")):
            m = _NAME.match(line)
            assert m is not None
            ident, name = m.group(2), m.group(3).strip()
            if ident is not None:
                name = names.setdefault(ident, name) if name else names.get(ident, "")
            if m.group(1) == "fn":
                function = name
                current = inclusive.setdefault(name, [0] * len(events))
            else:
                callee = name
        elif line.startswith("calls="):
            call = calls.setdefault(function, {}).setdefault(callee, [0] * len(events))
            times = called.setdefault(function, {})
            times[callee] = times.get(callee, 0) + int(line[6:].split()[0])
        elif line.startswith("events:"):
            events = line.split(":", 1)[1].split()
        elif line.startswith("positions:"):
            positions = len(line.split(":", 1)[1].split())
        elif line.startswith(("summary:", "totals:")):
            values = [int(v) for v in line.split(":", 1)[1].split()]
            if line.startswith("summary:"):
                summary = values
            else:
                totals = values if totals is None else [a + b for a, b in zip(totals, values)]
    totals = totals if totals is not None else summary
    if not events or totals is None:
        raise FloemError(f"{path} is not a callgrind profile (no events or totals)")
    totals += [0] * (len(events) - len(totals))
    return Profile(events, totals, inclusive, calls, called)
