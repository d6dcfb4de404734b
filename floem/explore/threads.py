"""Each design at its best: the threads of a configuration's segments that the model
predicts best, found by trying every integer assignment of the free cores.

A configuration's thread segments share two budgets: the NIC's cores, with the queue
synchronization layer's managers (`MANAGERS`, ``--nic-managers``) when it has them, and the
host cores a study allows (``--host-cores``, else every core of the host platform). Each
segment gets one thread or more; one declared ``parallel=False`` exactly one; one fed by a
queue at most that queue's instances (thread t of n serves instances t, t + n, ...: a
thread beyond them would only poll), the managers at most one a queue instance they
manage. Every assignment within the budgets is predicted from a measurement's counts per
packet (which are per packet of all of a segment's threads: only the threads change). The
best (of those predicted alike, the one taking the fewest cores) is then counted again with
its own threads (``floem run --threads``), and the search goes on with those counts until
the best assignment is one counted with its own threads: what the counts depend on (each
thread's share of the caches, which lines move between cores, the managers' batches)
changes with the threads, so it is recounted, never extrapolated.
"""
from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

from floem.errors import FloemError
from floem.explore.measure import MANAGERS, Measurement
from floem.explore.model import Platform, Prediction, predict

#: Counted runs a search makes at most beyond the first (the best is usually found by the
#: first recount; a search that keeps moving stops at the best counted so far).
MAX_RECOUNTS = 3

#: An assignment: threads for each thread segment, by name (the same for every machine of
#: a study of several).
Assignment = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Room:
    """What a thread segment may be given: its side and the most threads that can work in
    it (0: no limit but the cores)."""

    on_nic: bool
    limit: int = 0


@dataclass
class Best:
    """The best assignment found, its own counts and prediction, and what the search did."""

    assignment: Assignment
    measurement: Measurement
    prediction: Prediction
    tried: int                      # assignments predicted
    recounted: int                  # counted with their own threads by this search


def text(assignment: Assignment) -> str:
    """``nic_rx=10 nic_tx=1 store=1``."""
    return " ".join(f"{name}={n}" for name, n in assignment)


def assignments(rooms: dict[str, Room], nic_free: int, host_cores: int) -> list[Assignment]:
    """Every assignment of threads to the segments of ``rooms`` within ``nic_free`` NIC cores
    and ``host_cores`` host cores (none when the segments of a side outnumber its cores)."""
    names = sorted(rooms)

    def choices(name: str) -> range:
        room = rooms[name]
        cores = nic_free if room.on_nic else host_cores
        return range(1, min(cores, room.limit or cores) + 1)

    found = []
    for threads in itertools.product(*(choices(n) for n in names)):
        nic = sum(t for n, t in zip(names, threads) if rooms[n].on_nic)
        host = sum(t for n, t in zip(names, threads) if not rooms[n].on_nic)
        if nic <= nic_free and host <= host_cores:
            found.append(tuple(zip(names, threads)))
    return found


def with_threads(m: Measurement, assignment: Assignment) -> Measurement:
    """``m`` with each segment of ``assignment`` given its threads, and the NIC its managers
    (on every machine)."""
    given = dict(assignment)
    out = copy.deepcopy(m)
    for name, s in out.segments.items():
        base = name.split("/")[-1]
        if base in given:
            s.threads = given[base]
    if MANAGERS in given:
        for record in (r for r in out.machines.values() if r.nic_managers):
            record.nic_managers = given[MANAGERS]
            if record.managers is not None:
                record.managers.threads = given[MANAGERS]
    return out


def search(known: dict[Assignment, Measurement], rooms: dict[str, Room],
           count: Callable[[Assignment], Measurement], nic: Platform, host: Platform,
           host_cores: int | None, per_core: bool) -> Best:
    """The best assignment for ``nic`` beside ``host`` (by packets/s, or ``per_core`` per
    host thread), from the configuration's counts with the threads of each assignment in
    ``known`` (at least the threads it is written with; a search adds what it counts, so
    that the searches of other platforms reuse it); ``count`` counts the configuration with
    an assignment's threads."""
    first = next(iter(known.values()))
    managers = 0 if MANAGERS in rooms else \
        max((r.nic_managers for r in first.machines.values()), default=0)
    nic_free = nic.cores - managers if any(r.on_nic for r in rooms.values()) else 0
    host_budget = host_cores or host.cores
    options = assignments(rooms, nic_free, host_budget)
    if not options:
        sides = [f"{sum(r.on_nic == on for r in rooms.values())} {side} segments on "
                 f"{cores} {side} cores" for on, side, cores in
                 ((True, "NIC", nic_free), (False, "host", host_budget))]
        raise FloemError("no assignment of threads fits: " + ", ".join(sides))
    counted_before = len(known)
    for recount in range(MAX_RECOUNTS + 1):
        latest = list(known.values())[-1]
        best = max(options, key=lambda a: (_score(known.get(a) or with_threads(latest, a),
                                                  nic, host, per_core), -_cores(a)))
        if best in known or recount == MAX_RECOUNTS:
            break
        known[best] = count(best)
    mine = [a for a in known if a in options]
    if not mine:
        raise FloemError("no assignment counted with its own threads fits the cores")
    chosen = max(mine, key=lambda a: (_score(known[a], nic, host, per_core), -_cores(a)))
    return Best(chosen, known[chosen], predict(known[chosen], nic, host), len(options),
                len(known) - counted_before)


def _cores(assignment: Assignment) -> int:
    """The cores an assignment takes: of two predicted alike, the search keeps the one
    that takes fewer (a thread a bottleneck elsewhere leaves idle is a core wasted)."""
    return sum(n for _, n in assignment)


def _score(m: Measurement, nic: Platform, host: Platform, per_core: bool) -> float:
    """What the search maximises: predicted packets/s, or per host thread that works."""
    p = predict(m, nic, host, latency_too=False)
    if p.error is not None:
        return -math.inf
    return p.packets_per_s / m.host_threads if per_core and m.host_threads else p.packets_per_s
