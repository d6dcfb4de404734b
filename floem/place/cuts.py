"""Every cut of a ``target.AUTO`` segment, valid or not (and why not).

A cut is a pair of element sets of the segment: ``rx``, closed under "runs before" (it
holds the segment's source and everything before each of its elements), and ``tx``, closed
under "runs after", apart from ``rx``. Both are enumerated exactly (every down-set of the
segment's graph, then every up-set of what is left), so a chain of n elements has
(n + 1)(n + 2) / 2 of them; `floem.passes.split_auto.cut_problem` then rejects those that
are not valid programs, with the reason. A receiving part that no sending part can make
valid (an element that cannot run on the NIC, or edges leaving it that cannot become one
queue) is rejected once for every ``tx`` (``tx`` is then None), which keeps wide segments
searchable.

A segment with more than `MAX_CUTS` cuts (n branches side by side have about 2**n) is not
enumerated so: its cuts along packet order are listed instead (``rx`` a prefix, ``tx`` a
suffix of the order `segment_order` gives, skipping only what a part cannot hold), at
most (m + 1)(m + 2) / 2 for m elements, and `CutSpace.along_order` says so.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import networkx as nx

from floem.ir import Part, ProgramIR, SegmentIR
from floem.passes.split_auto import boundary_problem, cut_problem, nic_problem

#: More cuts of one segment than this are not all enumerated: those along packet order are.
MAX_CUTS = 50000


@dataclass(frozen=True)
class Candidate:
    """One cut of a segment: its parts, and why it is not valid (None: it is)."""

    segment: str
    rx: frozenset[str]
    tx: frozenset[str] | None           # None: every sending part (rejected by rx alone)
    problem: str | None


@dataclass(frozen=True)
class CutSpace:
    """The cuts of a segment listed: every one, or (``along_order``: it has more than
    `MAX_CUTS`) those along packet order."""

    cuts: list[Candidate]
    along_order: bool


class _TooMany(Exception):
    """More than `MAX_CUTS` cuts found: the enumeration stops."""


def segment_order(ir: ProgramIR, seg: SegmentIR) -> list[str]:
    """The segment's elements in the order packets reach them (ties in program order)."""
    graph = _graph(ir, seg)
    rank = {n: i for i, n in enumerate(seg.elements)}
    return list(nx.lexicographical_topological_sort(graph, key=lambda n: rank[n]))


def candidates(ir: ProgramIR, seg: SegmentIR) -> CutSpace:
    """The cuts of ``seg`` (an unsplit ``target.AUTO`` segment of ``ir``, after
    ``parse_bodies``), the all-CPU one first: every one, or those along packet order when
    there are more than `MAX_CUTS` (more than `MAX_CUTS` of those too: an error)."""
    try:
        return CutSpace(_enumerate(ir, seg, along_order=False), False)
    except _TooMany:
        pass
    try:
        return CutSpace(_enumerate(ir, seg, along_order=True), True)
    except _TooMany:
        raise seg.loc.error(f"segment '{seg.name}' has more than {MAX_CUTS:,} cuts even along "
                            f"packet order ({len(seg.elements)} elements): too long to search "
                            "(state a cut with floem.cut, or split it into segments)") from None


def _enumerate(ir: ProgramIR, seg: SegmentIR, along_order: bool) -> list[Candidate]:
    """The cuts of ``seg`` (with ``along_order``, those along packet order), each checked
    once they are known to be at most `MAX_CUTS` (else `_TooMany`, before any is)."""
    graph = _graph(ir, seg)
    order = segment_order(ir, seg)
    listed: list[tuple[frozenset[str], frozenset[str] | None, str | None]] = []
    for rx in _closed(order, lambda n: graph.predecessors(n), along_order):
        problem = _receiving_problem(ir, seg, rx)
        if problem is not None:
            listed.append((rx, None, problem))
            continue
        rest = [n for n in reversed(order) if n not in rx]
        # Packet I/O is on one side: with a receiving part, every other I/O element sends.
        io = {n for n in rest if ir.node(n).uses_network}
        # (The inner loop ends before rx changes: its lambda sees the current rx.)
        for tx in _closed(rest, lambda n: (s for s in graph.successors(n) if s not in rx),  # noqa: B023
                          along_order, forced=io if rx else set(),
                          barred=set() if rx else io):
            listed.append((rx, tx, None))
            if len(listed) > MAX_CUTS:
                raise _TooMany
    found = [Candidate(seg.name, rx, tx, problem if tx is None else cut_problem(ir, seg, rx, tx))
             for rx, tx, problem in listed]
    return sorted(found, key=lambda c: (len(c.rx) + len(c.tx or ()), len(c.rx)))


def _receiving_problem(ir: ProgramIR, seg: SegmentIR, rx: frozenset[str]) -> str | None:
    """Why no cut with receiving part ``rx`` is valid, whatever its sending part, or None."""
    for name in sorted(rx):
        problem = nic_problem(ir, name)
        if problem is not None:
            return problem
    members = set(seg.elements)
    leaving = sorted((e for e in ir.edges() if e.src in rx and e.dst in members
                      and e.dst not in rx), key=lambda e: e.rank)
    return boundary_problem(ir, Part.RX, Part.CPU, leaving, rx) if leaving else None


def _graph(ir: ProgramIR, seg: SegmentIR) -> nx.DiGraph[str]:
    members = set(seg.elements)
    graph: nx.DiGraph[str] = nx.DiGraph()
    graph.add_nodes_from(seg.elements)
    graph.add_edges_from((u, v) for u, v in ir.graph.edges() if u in members and v in members)
    return graph


def _closed(order: list[str], before: Callable[[str], Iterable[str]], along_order: bool,
            forced: AbstractSet[str] = frozenset(),
            barred: AbstractSet[str] = frozenset()) -> list[frozenset[str]]:
    """Every subset of ``order`` (topologically sorted for ``before``) that holds, with each
    element, everything ``before(element)`` names; holding every ``forced`` element and no
    ``barred`` one; with ``along_order``, only those made by growing the largest so far
    by the next element it can hold (the prefixes of ``order``, skipping what they cannot
    hold). More than `MAX_CUTS` of them raise `_TooMany` as soon as they are found."""
    sets: list[frozenset[str]] = [frozenset()]
    for n in order:
        if n in barred:
            continue
        needs = set(before(n))
        grown = [s | {n} for s in (sets[-1:] if along_order else sets) if needs <= s]
        sets = grown if n in forced else sets + grown
        if len(sets) > MAX_CUTS:
            raise _TooMany
    return sets
