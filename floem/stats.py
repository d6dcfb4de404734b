"""`floem stats`: the per-element packet counters of running programs, read live.

Every process of a program built with counters (the default) keeps them in a memory file
named ``floem-counters`` (runtime/include/floem/counters.h), with its segment threads'
statistics (runs, packets, busy, waited and idle time); this module finds those files
through ``/proc/PID/fd``, reads them without disturbing the program (a read-only view, as a
monitoring tool reads a device's counter registers: the emulated NIC's too), and prints
them as a table, refreshed like ``top``; with the connections of a process serving TCP
(``--net tcp``): open, accepted, closed, and the bytes of their streams.
"""
from __future__ import annotations

import json
import os
import struct
import sys
import time
from dataclasses import dataclass, field

from floem.errors import FloemError
from floem.launcher import launcher_of

MAGIC = b"FLOEMCNT"
VERSION = 4
#: magic, byte-order mark, version, counters, layout bytes, counters offset, pid, process, run,
#: threads offset, thread slots, bytes per slot, (a kept file) queues offset, queues, bytes
#: each, connections offset
HEADER = "8sIIIIQq32s64sQIIQIIQ"
#: The connections of a stream transport (floem_connection_stats_t): accepted, closed, bytes
#: in and out
CONNECTIONS = "4Q"
#: A thread's slot (floem_thread_stats_t): segment, index, runs, packets, busy, waited, idle,
#: slept, cpu and wall time (ns; cpu and wall once the thread has ended), frames received and
#: sent, DMA waits and their bytes, engine calls and their bytes
THREAD = "48si4x14Q"
#: A queue instance's counters in a kept file: queue, instance, enqueued, dequeued, dropped,
#: full-spins
QUEUE = "48sI4x4Q"
MEMFD_LINK = "/memfd:floem-counters"


@dataclass
class ElementCounts:
    """One element's counters: packets in (``runs``) and runs that sent nothing on
    (``ended``: drops and ends of paths), for an element with input ports (None for a
    source); packets sent on each output port."""

    name: str
    segment: str
    runs: int | None
    ended: int | None
    outs: dict[str, int] = field(default_factory=dict)


@dataclass
class ThreadCounts:
    """One segment thread's statistics (``floem run --report``'s thread lines): its turns
    that found work (``runs``) and the packets its source handed on, the time of those turns
    (``busy_ns``, of which ``waited_ns`` waiting for room in a full queue) and of the others
    (``idle_ns``, of which ``slept_ns`` blocked); ``cpu_ns`` and ``wall_ns`` once it ended;
    the frames it received and sent, the DMA transfers it waited for and its engine calls,
    and their bytes."""

    segment: str
    index: int
    runs: int
    packets: int
    busy_ns: int
    waited_ns: int
    idle_ns: int
    slept_ns: int
    cpu_ns: int
    wall_ns: int
    received: int
    sent: int
    dma_waits: int
    dma_bytes: int
    engine_calls: int
    engine_bytes: int

    @property
    def name(self) -> str:
        """``segment[index]``, as the report names it."""
        return f"{self.segment}[{self.index}]"


@dataclass
class QueueCounts:
    """One queue instance's counters when the process that counts it ended."""

    queue: str
    instance: int
    enqueued: int
    dequeued: int
    dropped: int
    full_spins: int


@dataclass
class ConnectionCounts:
    """The connections of a process serving TCP: accepted and closed so far (``open`` is the
    difference), and the bytes received and sent on them."""

    accepted: int
    closed: int
    bytes_in: int
    bytes_out: int

    @property
    def open(self) -> int:
        """Connections open now."""
        return self.accepted - self.closed


@dataclass
class ProcessCounts:
    """The counters of one process of a running program."""

    process: str
    pid: int
    run: str            # the program's shared memory name: the processes of one run share it
    elements: list[ElementCounts]
    threads: list[ThreadCounts] = field(default_factory=list)
    queues: list[QueueCounts] = field(default_factory=list)     # a kept file's
    connections: ConnectionCounts | None = None     # a process that has served TCP


def read_counters(path: str) -> ProcessCounts | None:
    """The counters in the memory file at ``path`` (None if it is not one, or is gone)."""
    try:
        with open(path, "rb") as f:
            head = f.read(struct.calcsize("<" + HEADER))
            if len(head) < struct.calcsize("<" + HEADER) or head[:8] != MAGIC:
                return None
            order = ">" if head[8:12] == b"\x01\x02\x03\x04" else "<"
            (_, _, version, count, layout_bytes, offset, pid, process, run, threads_offset,
             slots, slot_bytes, queues_offset, queues, queue_bytes,
             connections_offset) = struct.unpack(order + HEADER, head)
            if version != VERSION or slot_bytes != struct.calcsize(order + THREAD) or \
                    (queues and queue_bytes != struct.calcsize(order + QUEUE)):
                return None
            layout = f.read(layout_bytes).rstrip(b"\0").decode()
            f.seek(offset)
            values = struct.unpack(f"{order}{count}Q", f.read(8 * count))
            f.seek(threads_offset)
            threads = [_thread(struct.unpack_from(order + THREAD, f.read(slot_bytes)))
                       for _ in range(slots)]
            f.seek(queues_offset)
            counted = [struct.unpack_from(order + QUEUE, f.read(queue_bytes))
                       for _ in range(queues)]
            f.seek(connections_offset)
            connections = ConnectionCounts(*struct.unpack_from(
                order + CONNECTIONS, f.read(struct.calcsize(CONNECTIONS))))
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return ProcessCounts(process.rstrip(b"\0").decode(), pid, run.rstrip(b"\0").decode(),
                         [_element(line, values) for line in layout.splitlines() if line],
                         [t for t in threads if t.segment],
                         [QueueCounts(_text(name), *rest) for name, *rest in counted],
                         connections if connections.accepted or connections.bytes_in else None)


def _thread(fields: tuple) -> ThreadCounts:
    """A thread's statistics from its slot (an unused one has segment "")."""
    segment, index, *times = fields
    return ThreadCounts(_text(segment), index, *times)


def _text(field: bytes) -> str:
    """A NUL-terminated C string field."""
    return field.split(b"\0", 1)[0].decode(errors="replace")


def _element(line: str, values: tuple[int, ...]) -> ElementCounts:
    """An element's counts from its layout line, NAME SEGMENT IN ENDED OUTS
    (runtime/include/floem/counters.h)."""
    name, segment, packets_in, ended, outs = line.split(" ")
    runs = (None if packets_in == "-" else sum(values[int(i)] for i in packets_in[1:].split(",")))
    e = ElementCounts(name, segment, None, None, {   # port "*": sends what comes in
        port: (runs or 0) if i == "*" else values[int(i)] for port, i in
        (o.split(":") for o in ([] if outs == "-" else outs.split(",")))})
    if runs is not None:
        e.runs = runs
        e.ended = (values[int(ended[1:])] if ended.startswith("=")
                   else max(0, e.runs - sum(e.outs.values())) if ended == "~" else 0)
    return e


def find_counters(pid: int | None = None, everyone: bool = False) -> list[ProcessCounts]:
    """The counters of every running process of the caller's user that has them (of every
    user's: ``everyone``), or only those of the run that process ``pid`` belongs to (a
    program's process, or the `floem run` that started it)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or not (everyone or pid is not None or owned(int(entry))):
            continue
        fds = f"/proc/{entry}/fd"
        try:
            names = os.listdir(fds)
        except OSError:
            continue
        for fd in names:
            try:
                if not os.readlink(f"{fds}/{fd}").startswith(MEMFD_LINK):
                    continue
            except OSError:
                continue
            counts = read_counters(f"{fds}/{fd}")
            if counts is not None:
                found.append(counts)
    if pid is not None:
        runs = {c.run for c in found if c.pid == pid or launcher_of(c.run) == pid}
        found = [c for c in found if (c.run and c.run in runs) or c.pid == pid]
    return sorted(found, key=lambda c: (c.run, c.pid))


def owned(pid: int) -> bool:
    """Process ``pid`` runs as the caller's user."""
    try:
        return os.stat(f"/proc/{pid}").st_uid == os.getuid()
    except OSError:
        return False


def table(processes: list[ProcessCounts], rates: dict[tuple[int, str], float] | None = None,
          busy: dict[tuple[int, str], float] | None = None) -> str:
    """The counters as text, a table per process, then its threads; ``rates``: packets in
    per second by (pid, element), and ``busy``: the share of the time each thread was
    busy by (pid, thread), shown as columns when given (live)."""
    lines = []
    for p in processes:
        lines.append(f"process {p.process} (pid {p.pid}{', run ' + p.run if p.run else ''}):")
        head = f"  {'element':<28} {'segment':<20} {'in':>12} {'ended':>12}"
        lines.append(head + (f" {'in/s':>12}" if rates is not None else "") + "  out")
        for e in p.elements:
            row = f"  {e.name:<28} {e.segment:<20} {_count(e.runs):>12} {_count(e.ended):>12}"
            if rates is not None:
                rate = rates.get((p.pid, e.name))
                row += f" {'-' if rate is None else f'{rate:.0f}':>12}"
            lines.append(f"{row}  {_ports(e.outs) or '-'}")
        if p.threads:
            lines.append(f"  {'thread':<28} {'runs':>12} {'packets':>12} {'busy ms':>12} "
                         f"{'waited ms':>12} {'idle ms':>12}" + ("  busy" if busy is not None
                                                                 else ""))
        for t in p.threads:
            row = (f"  {t.name:<28} {t.runs:>12} {t.packets:>12} {t.busy_ns / 1e6:>12.1f} "
                   f"{t.waited_ns / 1e6:>12.1f} {t.idle_ns / 1e6:>12.1f}")
            if busy is not None:
                share = busy.get((p.pid, t.name))
                row += "  -" if share is None else f"  {100 * share:.0f}%"
            lines.append(row)
        c = p.connections
        if c is not None:
            lines.append(f"  connections: open {c.open}, accepted {c.accepted}, closed "
                         f"{c.closed}, bytes in {c.bytes_in}, bytes out {c.bytes_out}")
        lines.append("")
    return "\n".join(lines)


def _count(n: int | None) -> str:
    return "-" if n is None else str(n)


def _ports(ports: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in ports.items())


def as_json(processes: list[ProcessCounts]) -> str:
    """The counters as JSON: a list of processes, each with its elements."""
    return json.dumps([{"process": p.process, "pid": p.pid, "run": p.run,
                        "elements": [e.__dict__ for e in p.elements],
                        "threads": [t.__dict__ for t in p.threads],
                        "queues": [q.__dict__ for q in p.queues],
                        "connections": None if p.connections is None else
                        {**p.connections.__dict__, "open": p.connections.open}}
                       for p in processes],
                      indent=1)


def save_counts(directory: str, path: str) -> None:
    """Write, as JSON at ``path``, the counter files the processes of a run kept in
    ``directory`` when they ended (``floem run --stats``)."""
    found = [c for name in sorted(os.listdir(directory)) if name.endswith(".counters")
             if (c := read_counters(os.path.join(directory, name))) is not None]
    try:
        with open(path, "w") as f:
            f.write(as_json(found) + "\n")
    except OSError as e:
        raise FloemError(f"cannot write the counters to {path}: {e.strerror}") from None


@dataclass
class RunCounts:
    """A run's counters as `floem graph --stats` draws them: the elements' by name, the
    queue instances' by queue (those of a run that has ended)."""

    elements: dict[str, ElementCounts]
    queues: dict[str, list[QueueCounts]]


def load_counts(path: str) -> RunCounts:
    """The counters in a JSON file of ``floem run --stats`` or ``floem stats --json``."""
    try:
        with open(path) as f:
            processes = json.load(f)
        queues: dict[str, list[QueueCounts]] = {}
        for p in processes:
            for q in p.get("queues", []):
                queues.setdefault(q["queue"], []).append(QueueCounts(**q))
        return RunCounts({e["name"]: ElementCounts(**e) for p in processes
                          for e in p["elements"]}, queues)
    except OSError as e:
        raise FloemError(f"cannot read the counters in {path}: {e.strerror}") from None
    except (ValueError, TypeError, KeyError, AttributeError):
        raise FloemError(f"{path}: not the counters of floem run --stats or floem stats --json") \
            from None


def stats(pid: int | None, once: bool, interval: float, as_json_text: bool,
          everyone: bool = False) -> int:
    """`floem stats`: print the counters of running programs (the caller's, or
    ``everyone``'s) once, or every ``interval`` seconds until they end; 1 when no running
    program has counters."""
    found = find_counters(pid, everyone)
    if not found:
        which = f"process {pid}" if pid is not None else \
            "any running program" + ("" if everyone else " of yours (--all: anyone's)")
        raise FloemError(f"no element counters found for {which} (is it running, and built "
                         "without --no-counters?)")
    try:
        return _show(found, pid, once, interval, as_json_text, everyone)
    except BrokenPipeError:             # e.g. `floem stats | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _show(found: list[ProcessCounts], pid: int | None, once: bool, interval: float,
          as_json_text: bool, everyone: bool) -> int:
    if once or as_json_text:
        sys.stdout.write(as_json(found) + "\n" if as_json_text else table(found))
        return 0
    clear = "\x1b[H\x1b[J" if sys.stdout.isatty() else ""
    before, busy_before, then = _runs(found), _busy(found), time.monotonic()
    sys.stdout.write(clear + table(found))
    while True:
        time.sleep(interval)
        found, now = find_counters(pid, everyone), time.monotonic()
        if not found:
            print("floem: the program has ended")
            return 0
        after, busy_after = _runs(found), _busy(found)
        rates = {k: (v - before[k]) / (now - then) for k, v in after.items() if k in before}
        shares = {k: (v - busy_before[k]) / ((now - then) * 1e9) for k, v in busy_after.items()
                  if k in busy_before}
        sys.stdout.write(clear + table(found, rates, shares))
        sys.stdout.flush()
        before, busy_before, then = after, busy_after, now


def _busy(processes: list[ProcessCounts]) -> dict[tuple[int, str], int]:
    """Busy time so far (ns) by (pid, thread)."""
    return {(p.pid, t.name): t.busy_ns for p in processes for t in p.threads}


def _runs(processes: list[ProcessCounts]) -> dict[tuple[int, str], int]:
    """Packets in (runs, or a source's packets out) by (pid, element)."""
    return {(p.pid, e.name): e.runs if e.runs is not None else sum(e.outs.values())
            for p in processes for e in p.elements}
