"""Packet traces: what `floem run --trace N` prints when the program has ended.

Each process of a build with tracing writes, when it ends, its trace sites (what each
records, as `plan_code` laid them out) and its events to ``$FLOEM_TRACE_DIR/PROCESS.trace``
(runtime/include/floem/trace.h). `read_traces` reads the files of a run; `trace_report`
merges their events by packet and time and writes one line per packet, its path through
the elements and queues in the order it took it, with the per-packet fields each element
changed::

    floem: trace: 2 packets
    packet 1: FromNet0 -> Parse0 (op=1 len=32) -> queue to_nic[0] (CPU->NIC) -> Lookup0 ...
    packet 2: FromNet0 -> Parse0 (op=9) -drop-> Reject0 [sent nothing]
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from floem.errors import FloemError
from floem.ir.plan import TraceKind
from floem.ir.scalars import NumberKind

#: The version of the trace files this module reads (FLOEM_TRACE_VERSION).
VERSION = 1
#: Packets a process traces at most (ids hold 24 bits of their number in the process).
MAX_PACKETS = (1 << 24) - 1


@dataclass(frozen=True)
class Site:
    """One trace site: what an event there means (``KIND ELEMENT key=value ...``)."""

    kind: TraceKind
    element: str
    attrs: dict[str, str]

    @property
    def fields(self) -> list[tuple[str, NumberKind]]:
        """The per-packet fields its events hold values of, with their number kind."""
        text = self.attrs.get("fields", "-")
        return [] if text == "-" else [(name, NumberKind(kind)) for name, _, kind in
                                       (f.partition(":") for f in text.split(","))]

    @property
    def targets(self) -> list[str]:
        """The elements its port sends to."""
        text = self.attrs.get("to", "-")
        return [] if text == "-" else text.split(",")

    @property
    def hop(self) -> str:
        """A queue crossing as the path shows it: ``queue q[0] (CPU->NIC)``."""
        return f"queue {self.attrs['queue']}[{self.attrs['channel']}] ({self.attrs['route']})"

    @staticmethod
    def parse(line: str) -> Site:
        """The site of a line of a trace file's site table."""
        kind, element, *pairs = line.split()
        return Site(TraceKind(kind), element, dict(p.split("=", 1) for p in pairs))


@dataclass(frozen=True)
class Event:
    """A traced packet passing a site: when, and the values of the site's fields."""

    packet: int
    site: Site
    time: int                       # ns, CLOCK_MONOTONIC
    values: tuple[int | float, ...]
    order: tuple[int, int]          # process number, position in its buffer


@dataclass
class ProcessTrace:
    """The trace file of one process."""

    process: str
    number: int
    limit: int
    admitted: int
    lost: int
    events: list[Event]


def read_traces(directory: str) -> list[ProcessTrace]:
    """The trace files of a run, in process number order."""
    traces = []
    for name in sorted(os.listdir(directory)):
        if name.endswith(".trace"):
            with open(os.path.join(directory, name)) as f:
                traces.append(_parse(f.read(), name))
    return sorted(traces, key=lambda t: t.number)


def _parse(text: str, name: str) -> ProcessTrace:
    lines = text.splitlines()
    header = dict(line.split(" ", 1) for line in lines[:7] if " " in line)
    if header.get("floem-trace") != str(VERSION) or "sites" not in header:
        raise FloemError(f"{name}: not a packet trace of this floem (version {VERSION})")
    try:
        sites = [Site.parse(line) for line in lines[7:7 + int(header["sites"])]]
        kinds = [s.fields for s in sites]
    except ValueError as e:
        raise FloemError(f"{name}: a site line this floem does not know ({e})") from None
    number = int(header["number"])
    events = []
    for k, line in enumerate(lines[7 + len(sites):]):
        _, packet, site, time, *values = line.split()
        s = sites[int(site)]
        events.append(Event(int(packet), s, int(time),
                            tuple(_value(int(v), kind)
                                  for (_, kind), v in zip(kinds[int(site)], values)),
                            (number, k)))
    return ProcessTrace(header["process"], number, int(header["limit"]), int(header["admitted"]),
                        int(header["lost"]), events)


def _value(word: int, kind: NumberKind) -> int | float:
    """An event's 64-bit value as the number it holds."""
    if kind == NumberKind.REAL:
        return struct.unpack("<d", struct.pack("<Q", word))[0]
    if kind == NumberKind.SIGNED and word >= 1 << 63:
        return word - (1 << 64)
    return word


@dataclass
class _Step:
    """One element (or queue crossing) on a packet's path."""

    name: str
    element: str                    # the element whose site made it (for a crossing: the enqueue)
    came_from: _Step | None = None
    port: str = ""                  # the port of came_from it came through (when it has several)
    changed: dict[str, int | float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    queue: tuple[str, str] | None = None    # a crossing: its queue and channel
    sent: bool = False              # it sent the packet on (a crossing: came out, or went to full)

    def text(self) -> str:
        """The step as the path shows it."""
        changes = " ".join(f"{k}={_number(v)}" for k, v in self.changed.items())
        return self.name + (f" ({changes})" if changes else "") + \
            "".join(f" [{note}]" for note in self.notes)


def _number(v: int | float) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def packet_path(events: list[Event]) -> str:
    """The path of one packet, from its events in time order: each step ``-> NAME`` (with
    ``-PORT->`` when the element before has several output ports or the port is not called
    ``out``, e.g. a lossy queue's ``full``), the per-packet fields
    an element changed in parentheses (as first seen, then when they change), a step
    reached from another than the one before (after a fan-out) restated as ``, FROM ->
    NAME``, a queue crossing as ``queue Q[CHANNEL] (CPU->NIC)``."""
    steps: list[_Step] = []
    sends: list[tuple[Site, _Step]] = []        # the sends so far, with the step they left
    known: dict[str, int | float] = {}          # the packet's field values as last seen

    def came_from(element: str) -> tuple[_Step | None, str]:
        for site, step in reversed(sends):
            if element in site.targets:
                port = site.attrs["port"]
                return step, port if site.attrs.get("ports") != "1" or port != "out" else ""
        return None, ""

    def changes(step: _Step, ev: Event) -> None:
        for (name, _), value in zip(ev.site.fields, ev.values):
            if known.get(name) != value:
                known[name] = step.changed[name] = value

    for ev in events:
        s = ev.site
        step = next((st for st in reversed(steps) if st.element == s.element), None)
        if s.kind in (TraceKind.ADMIT, TraceKind.ENTER, TraceKind.ENQ):
            source, port = came_from(s.element) if s.kind != TraceKind.ADMIT else (None, "")
            step = _Step(s.element, s.element, source, port)
            if "queue" in s.attrs:
                step.queue = (s.attrs["queue"], s.attrs["channel"])
                instance = "".join(f", instance {_number(v)}" for v in ev.values)
                step.name = s.hop[:-1] + instance + ")"
            if s.kind != TraceKind.ENQ:
                changes(step, ev)
            steps.append(step)
            if s.kind == TraceKind.ADMIT:
                step.sent = True
                sends.append((s, step))
        elif s.kind == TraceKind.SEND and step is not None:
            changes(step, ev)
            step.sent = True
            sends.append((s, step))
        elif s.kind == TraceKind.END and step is not None:
            step.notes.append("sent nothing")
        elif s.kind == TraceKind.RESTORE:
            where = (s.attrs["queue"], s.attrs["channel"])
            crossing = next((st for st in steps if st.queue == where and not st.sent), None)
            if crossing is not None:
                crossing.sent = True
                sends.append((s, crossing))
    for step in steps:
        if step.queue is not None and not step.sent:
            step.notes.append("not dequeued")
    return _render(steps)


def _render(steps: list[_Step]) -> str:
    parts = []
    for i, step in enumerate(steps):
        arrow = f" -{step.port}-> " if step.port else " -> "
        if i == 0:
            parts.append(step.text())
        elif step.came_from is steps[i - 1] or step.came_from is None:
            parts.append(arrow + step.text())
        else:
            parts.append(f", {step.came_from.name}{arrow}{step.text()}")
    return "".join(parts)


def trace_report(traces: list[ProcessTrace], limit: int, filtered: bool) -> str:
    """What `floem run --trace LIMIT` prints: the first ``limit`` packets to enter (by the
    time of their first event; each process traced up to ``limit`` of its own), each with
    its path; then the events each process could not keep."""
    by_packet: dict[int, list[Event]] = {}
    for t in traces:
        for ev in t.events:
            by_packet.setdefault(ev.packet, []).append(ev)
    for events in by_packet.values():
        events.sort(key=lambda ev: (ev.time, ev.order))
    first = sorted(by_packet.values(), key=lambda evs: (evs[0].time, evs[0].order))[:limit]
    matching = " matching --trace-filter" if filtered else ""
    if not first:
        lines = [f"floem: trace: no packet{matching} entered the program"]
    else:
        lines = [f"floem: trace: {len(first)} packet{'s' if len(first) > 1 else ''}{matching}"
                 f" (--trace {limit})"]
        lines += [f"packet {k}: {packet_path(events)}" for k, events in enumerate(first, 1)]
    for t in traces:
        if t.lost:
            lines.append(f"floem: trace: process {t.process} lost {t.lost} events (its trace "
                         "buffer was full): the paths above may end early")
    return "".join(line + "\n" for line in lines)
