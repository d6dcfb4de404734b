"""IR data: element nodes, segments, processes, and a readable dump.

Nodes of ``ProgramIR.graph`` are element instance names, each with its `ElementNode` in
``ProgramIR.element_nodes`` (add them with `ProgramIR.add_node`, read them with ``node``
and ``nodes``). Each edge's attribute ``edge`` holds its `Edge` record (add them with
`ProgramIR.add_edge`, read them with `ProgramIR.edges`, ``out_edges`` and ``in_edges``).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import networkx as nx

from floem.csrc.model import BodyInfo
from floem.errors import Location
from floem.ir.options import BuildOptions, Cut, Part
from floem.ir.plan import ElementPlan
from floem.ir.results import (EntryLayouts, Homes, Liveness, Placement, Plan, ProcessIR,
                              QueueHome, Results, Windows)
from floem.ir.state import (CCode, CType, Device, MemoryRegionIR, PersistentState, Role,
                            SegmentKind, StateLayout)
from floem.paths import is_floem_source


#: The C types of the values a port sends or takes, in order.
PortTypes = tuple[CType, ...]


class EdgeKind(StrEnum):
    """Kinds of IR edges."""

    DATA = "data"
    ORDER = "order"


@dataclass(frozen=True)
class Edge:
    """One edge of the graph: the values of ``src``'s output ``out_port`` go to ``dst``'s
    input ``in_port`` (a ``DATA`` edge), or ``dst`` runs after ``src`` (an ``ORDER`` edge,
    no ports). ``types``: the C types of the values; ``loc``: the ``>>`` or ``run_order``
    that made it; ``rank``: its place in program order, which orders a fan-out."""

    src: str
    dst: str
    kind: EdgeKind
    out_port: str
    in_port: str
    types: PortTypes
    loc: Location
    rank: int


class CachePolicy(StrEnum):
    """When a cache's writes reach the store behind it (`floem.Cache`'s ``policy``)."""

    WRITE_THROUGH = "write_through"
    WRITE_BACK = "write_back"


class CachePoint(StrEnum):
    """The four points of a cache in the graph: where its get and set regions start and
    end."""

    GET_START = "get_start"
    GET_END = "get_end"
    SET_START = "set_start"
    SET_END = "set_end"


class WriteMiss(StrEnum):
    """Whether a write that misses a cache puts the entry in it (``write_miss``)."""

    WRITE_ALLOC = "write_alloc"
    NO_WRITE_ALLOC = "no_write_alloc"


@dataclass(frozen=True)
class ElementNode:
    """One element instance in the IR."""

    name: str
    cls_name: str
    loc: Location
    inputs: dict[str, PortTypes]
    outputs: dict[str, PortTypes]
    code: CCode | None = None
    nic_code: CCode | None = None
    persistent: dict[str, PersistentState] = field(default_factory=dict)
    segment: str = ""
    packet_state: StateLayout | None = None
    role: Role = Role.ELEMENT
    info: BodyInfo | None = None
    queue: str = ""
    channel: int = -1
    uses_network: bool = False
    host_only: bool = False
    cut_queue: str = ""             # split_auto: the queue a stash or unstash serves
    cache: str = ""

    @property
    def body_info(self) -> BodyInfo:
        """``info``, in a pass after parse_bodies, which analyses every body."""
        assert self.info is not None, f"{self.name}: body not analysed"
        return self.info

    @property
    def join(self) -> bool:
        """True for an element with several input ports: it runs once a packet has come in
        on each."""
        return len(self.inputs) > 1

    @property
    def is_source(self) -> bool:
        """True for an element with no input ports."""
        return not self.inputs

    @property
    def receives_packets(self) -> bool:
        """True for an element packets come in from the network by (a ``FromNet``)."""
        return self.uses_network and self.is_source

    @property
    def sends_packets(self) -> bool:
        """True for an element packets leave for the network by (a ``ToNet``)."""
        return self.uses_network and bool(self.inputs) and not self.outputs


@dataclass(frozen=True)
class SegmentIR:
    """A segment: its source, device, threads and the elements it runs."""

    name: str
    kind: SegmentKind
    device: Device
    cores: list[int]
    process: str
    loc: Location
    pinned: bool = False            # cores= given: host threads run on those CPUs
    parallel: bool = True           # False: its elements run on one thread at a time
    process_given: str | None = None    # the process= the user wrote
    packet_state: StateLayout | None = None
    default_return: str | None = None
    source: str = ""
    elements: tuple[str, ...] = ()
    auto: bool = False                  # declared target.AUTO: split_auto may cut it
    cut: Cut | None = None              # the cut asked for (floem.cut, floem place)


@dataclass(frozen=True)
class QueueIR:
    """A queue: its channels' ends and instances (what its entries carry: `Liveness`,
    `Windows`, `EntryLayouts`; where it lives: `Homes`)."""

    name: str
    channels: int
    instances: int
    size: int
    lossless: bool
    loc: Location
    enqueuers: tuple[tuple[str, ...], ...]     # per channel, its enqueue elements
    dequeuer: str
    enq_atomic: bool | None = None
    deq_atomic: bool | None = None
    entry_size: int | None = None
    boundary: Part | None = None    # split_auto: Part.RX (NIC to CPU) or Part.TX (CPU to NIC)


@dataclass(frozen=True)
class CacheIR:
    """A cache: its configuration, its points in the graph and (after expansion) its regions."""

    name: str
    key: str
    keylen: str | None
    val: str
    vallen: str | None
    buckets: int
    entries: int | None
    policy: CachePolicy
    write_miss: WriteMiss
    loc: Location
    points: dict[CachePoint, str] = field(default_factory=dict)     # point -> its node
    get_region: tuple[str, ...] = ()
    set_region: tuple[str, ...] = ()
    steer_instances: int = 0
    state: StateLayout | None = None        # expand_caches: the per-packet state, extended
    defer_fill_evictions: bool = False

    @property
    def version_field(self) -> str:
        """Hidden per-packet field: the bucket version a miss saw."""
        return f"_{self.name}_version"

    @property
    def evict_field(self) -> str:
        """Hidden per-packet field: set on the fresh state of a write-back eviction."""
        return f"_{self.name}_evict"


@dataclass(frozen=True)
class MainIR:
    """What the program asked of ``main``: its C code, its process, or a user's own program."""

    code: CCode | None = None
    process: str | None = None          # process= given to floem.main / external_main
    loc: Location | None = None         # where floem.main / external_main was called
    external: list[str] | None = None   # external_main: C sources with their own main()


@dataclass(frozen=True)
class TraceFilter:
    """The ``--trace-filter`` expression as the front end read it (``trace_packets``)."""

    info: BodyInfo                      # its analysis; its body's code is the expression alone
    values: int                         # port values it names (v0, v1, ...): highest index + 1


def unused_name(wanted: str, taken: set[str]) -> str:
    """``wanted``, or the first of ``wanted_2``, ``wanted_3``... not in ``taken``."""
    name, n = wanted, 2
    while name in taken:
        name, n = f"{wanted}_{n}", n + 1
    return name


@dataclass
class ProgramIR:
    """Everything the passes share: the graph plus program-level tables of frozen records,
    and the analyses' results (`floem.ir.results`).

    ``build_graph`` fills it from the user's program; no later stage reads that program.
    A pass is given an IR of its own (`floem.passes.run_pipeline`): a transformation a
    `copy`, into whose tables it puts new records (``replace_node``, ``segments[name] =
    ...``); a check or an analysis one `sharing_structure`, to which it adds its result or
    its warnings. The IR the pass was given stays as it was.
    """

    name: str = "program"
    app_file: str | None = None
    graph: nx.MultiDiGraph[str] = field(default_factory=nx.MultiDiGraph)
    element_nodes: dict[str, ElementNode] = field(default_factory=dict)    # graph order
    segments: dict[str, SegmentIR] = field(default_factory=dict)
    queues: dict[str, QueueIR] = field(default_factory=dict)
    caches: dict[str, CacheIR] = field(default_factory=dict)
    layouts: list[StateLayout] = field(default_factory=list)    # nested states first
    states: dict[str, PersistentState] = field(default_factory=dict)
    regions: list[MemoryRegionIR] = field(default_factory=list)
    main: MainIR = field(default_factory=MainIR)
    size_uses: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict)
    includes: list[CCode] = field(default_factory=list)
    depends: list[str] = field(default_factory=list)
    options: BuildOptions = field(default_factory=BuildOptions)
    warnings: list[str] = field(default_factory=list)
    user_names: frozenset[str] = frozenset()    # every name the user's program claimed
    main_info: BodyInfo | None = None       # parse_bodies: the analysed floem.main code
    include_definitions: tuple[str, ...] = ()   # parse_bodies: what floem.include's C
    #   defines that a program holds once (data written or with external linkage, functions
    #   with external linkage)
    trace_filter: TraceFilter | None = None     # trace_packets: the --trace-filter expression
    results: Results = field(default_factory=Results)
    owns_graph: bool = field(default=True, repr=False)  # False: shared with the IR copied

    @property
    def liveness(self) -> Liveness:
        """What each queue channel carries, and what each segment reads (``liveness``)."""
        return self.results.get(Liveness)

    @property
    def placement(self) -> Placement:
        """The processes and the one holding ``main`` (``placement``)."""
        return self.results.get(Placement)

    @property
    def processes(self) -> Mapping[str, ProcessIR]:
        """The processes segments run in (``placement``)."""
        return self.placement.processes

    @property
    def homes(self) -> Homes:
        """Whose memory holds each state and queue (``place_memory``)."""
        return self.results.get(Homes)

    def queue_home(self, queue: str) -> QueueHome:
        """Where queue ``queue``'s ends run and whose memory holds it (``place_memory``)."""
        return self.homes.queues[queue]

    @property
    def windows(self) -> Windows:
        """What of each typed packet crosses each queue channel (``slice_packets``)."""
        return self.results.get(Windows)

    @property
    def entry_layouts(self) -> EntryLayouts:
        """The entry layout of every queue channel (``plan_entries``)."""
        return self.results.get(EntryLayouts)

    @property
    def plan(self) -> Plan:
        """Every choice code generation prints (``plan_code``)."""
        return self.results.get(Plan)

    def element_plan(self, name: str) -> ElementPlan:
        """The plan of element ``name`` (``plan_code``)."""
        return self.plan.elements[name]

    def include_dirs(self) -> list[str]:
        """Where the program's C finds the headers it includes by name (``#include "x.h"``,
        for gcc and for the front end's preprocessor): the app file's directory, then that
        of every other file of the user's holding C of the program (an element's body, an
        include, ``main``), so that a header beside the Python file that names it is found.
        Floem's own packages are left out: their C is in the build's copy of the runtime."""
        texts = [c for n in self.element_nodes.values() for c in (n.code, n.nic_code)]
        texts += [*self.includes, self.main.code]
        files = dict.fromkeys(([self.app_file] if self.app_file else []) +
                              [c.loc.file for c in texts if c])
        dirs = (os.path.dirname(os.path.abspath(f)) for f in files
                if os.path.isfile(f) and not is_floem_source(f))
        return list(dict.fromkeys(dirs))

    def node(self, name: str) -> ElementNode:
        """The `ElementNode` named ``name``."""
        return self.element_nodes[name]

    def copy(self) -> ProgramIR:
        """A copy of the tables (element nodes, segments, queues, ...), results and warnings,
        sharing their records (frozen): what a pass that changes the structure is given. The
        graph is copied when the copy first changes it (`add_node`, `add_edge`,
        `remove_edge`)."""
        return dataclasses.replace(
            self, element_nodes=dict(self.element_nodes), segments=dict(self.segments),
            queues=dict(self.queues), caches=dict(self.caches), layouts=list(self.layouts),
            states=dict(self.states), regions=list(self.regions),
            size_uses={state: dict(fields) for state, fields in self.size_uses.items()},
            includes=list(self.includes), depends=list(self.depends),
            warnings=list(self.warnings), results=self.results.copy(), owns_graph=False)

    def sharing_structure(self) -> ProgramIR:
        """The same structural IR, tables and all, with results and warnings of its own:
        what a check or an analysis is given (it adds a result or a warning, nothing else)."""
        return dataclasses.replace(self, warnings=list(self.warnings),
                                   results=self.results.copy(), owns_graph=False)

    def add_node(self, node: ElementNode) -> None:
        """Add element ``node`` to the graph."""
        self._own_graph()
        self.graph.add_node(node.name)
        self.element_nodes[node.name] = node

    def replace_node(self, node: ElementNode) -> None:
        """Put ``node`` in place of the element node of its name."""
        self.element_nodes[node.name] = node

    def add_to_segment(self, segment: str, element: str, at: int | None = None) -> None:
        """Make ``element`` one of ``segment``'s elements: at index ``at`` (None: last)."""
        seg = self.segments[segment]
        at = len(seg.elements) if at is None else at
        self.segments[segment] = dataclasses.replace(
            seg, elements=seg.elements[:at] + (element,) + seg.elements[at:])

    def add_enqueuer(self, queue: str, channel: int, element: str) -> None:
        """Make ``element`` one more enqueue element of ``queue``'s channel ``channel``."""
        q = self.queues[queue]
        self.queues[queue] = dataclasses.replace(q, enqueuers=tuple(
            names + (element,) if c == channel else names for c, names in enumerate(q.enqueuers)))

    def replace_layout(self, old: StateLayout, new: StateLayout) -> None:
        """Use per-packet state layout ``new`` wherever ``old`` is used: by elements,
        segments, caches and in ``layouts`` (a pass extending a flow's state with fields of
        its own)."""
        for n in self.nodes():
            if n.packet_state is old:
                self.replace_node(dataclasses.replace(n, packet_state=new))
        for seg in self.segments.values():
            if seg.packet_state is old:
                self.segments[seg.name] = dataclasses.replace(seg, packet_state=new)
        for c in self.caches.values():
            if c.state is old:
                self.caches[c.name] = dataclasses.replace(c, state=new)
        self.layouts = [new if s is old else s for s in self.layouts]

    def fresh_name(self, wanted: str) -> str:
        """A name for something the compiler adds (an element, a segment) that `names`
        does not have (they are C identifiers in one namespace): see `unused_name`."""
        return unused_name(wanted, self.names())

    def names(self) -> set[str]:
        """The names of the user's program and of the IR's elements, segments, queues,
        caches and persistent states."""
        return set(self.user_names) | set(self.graph.nodes) | set(self.segments) \
            | set(self.queues) | set(self.caches) | set(self.states)

    def nodes(self) -> list[ElementNode]:
        """All element nodes in insertion order."""
        return list(self.element_nodes.values())

    def add_edge(self, edge: Edge) -> None:
        """Add ``edge`` to the graph."""
        self._own_graph()
        self.graph.add_edge(edge.src, edge.dst, edge=edge)

    def remove_edge(self, edge: Edge) -> None:
        """Remove ``edge`` from the graph."""
        self._own_graph()
        key = next(k for _, _, k, d in self.graph.out_edges(edge.src, keys=True, data=True)
                   if d["edge"] is edge)
        self.graph.remove_edge(edge.src, edge.dst, key)

    def _own_graph(self) -> None:
        """Copy the graph shared with the IR this one was copied from, before changing it."""
        if not self.owns_graph:
            self.graph, self.owns_graph = self.graph.copy(), True

    def edges(self, kind: EdgeKind | None = None) -> list[Edge]:
        """Every edge (of ``kind`` if given), in the graph's order."""
        edges: list[Edge] = [d["edge"] for _, _, d in self.graph.edges(data=True)]
        return [e for e in edges if kind is None or e.kind == kind]

    def out_edges(self, name: str, port: str | None = None,
                  kind: EdgeKind | None = EdgeKind.DATA) -> list[Edge]:
        """Edges leaving ``name`` (from ``port`` if given; of ``kind``, None: either), in
        fan-out program order."""
        edges: list[Edge] = [d["edge"] for _, _, d in self.graph.out_edges(name, data=True)]
        return sorted((e for e in edges if (kind is None or e.kind == kind)
                       and (port is None or e.out_port == port)), key=lambda e: e.rank)

    def in_edges(self, name: str, kind: EdgeKind | None = EdgeKind.DATA) -> list[Edge]:
        """Edges entering ``name`` (of ``kind``, None: either), in program order."""
        edges: list[Edge] = [d["edge"] for _, _, d in self.graph.in_edges(name, data=True)]
        return sorted((e for e in edges if kind is None or e.kind == kind), key=lambda e: e.rank)

    def dump(self) -> str:
        """A readable text form of the IR, stable for golden comparisons: the structural IR
        with the results made so far."""
        made = self.results
        lines = []
        for seg in self.segments.values():
            state = seg.packet_state.name if seg.packet_state else "-"
            lines.append(f"segment {seg.name} ({seg.kind}) device={seg.device} cores={seg.cores} "
                         f"process={seg.process} source={seg.source or '-'} state={state}")
            if Liveness in made and self.liveness.uses[seg.name]:
                lines.append(f"  uses {', '.join(sorted(self.liveness.uses[seg.name]))}")
            if Liveness in made and self.liveness.read_first[seg.name]:
                lines.append("  reads first (zeroed per packet) "
                             f"{', '.join(sorted(self.liveness.read_first[seg.name]))}")
            for name in seg.elements:
                lines.extend("  " + line for line in self._dump_node(self.node(name)))
        loose = [n for n in self.nodes() if n.segment not in self.segments]
        for n in loose:
            lines.extend(self._dump_node(n))
        for q in self.queues.values():
            lines.append(f"queue {q.name}: channels={q.channels} inst={q.instances} size={q.size} "
                         f"lossless={q.lossless}" + self._dump_queue_home(q.name))
            carried = self.liveness.carried[q.name] if Liveness in made else ()
            packets = (self.windows if Windows in made else
                       self.liveness if Liveness in made else None)
            for c, fields in enumerate(carried):
                lines.append(f"  channel {c} carries {', '.join(fields) or '(nothing)'}")
                if packets is not None:
                    lines += [f"    {name}: {b.describe()}"
                              for name, b in packets.packets[q.name][c].items()]
                if EntryLayouts in made:
                    lines.append(f"    {self.entry_layouts.entries[q.name][c].describe()}")
        for cache in self.caches.values():
            steering = f"steers over {cache.steer_instances} instances" \
                if cache.steer_instances else "no steering"
            deferred = ", fills defer their write-backs to set_start's segment" \
                if cache.defer_fill_evictions else ""
            lines.append(f"cache {cache.name}: {cache.policy}, {cache.write_miss}, "
                         f"{cache.buckets} buckets of {cache.entries or 'unbounded'} entries, "
                         f"{steering}{deferred}")
        for proc in self.processes.values() if Placement in made else ():
            main = "external" if proc.external_main else "yes" if proc.has_main else "no"
            lines.append(f"process {proc.name} ({proc.device}): segments={list(proc.segments)} "
                         f"callables={list(proc.callables)} main={main}")
            if Plan in made:
                lines.extend(self.plan.processes[proc.name].describe())
        for state, home in self.homes.states.items() if Homes in made else ():
            lines.append(f"state {state} in {home} memory")
        return "\n".join(lines) + "\n"

    def _dump_queue_home(self, queue: str) -> str:
        """The queue line's end: its variants, devices, home, layout and sync batches, once
        known."""
        if Homes not in self.results:
            return ""
        h = self.queue_home(queue)
        batches = (f", {self.plan.layouts[queue]} layout, sync batches of "
                   f"{self.plan.sync_batches[queue]}" if Plan in self.results else "")
        return (f" mp={h.multi_producer} mc={h.multi_consumer} {h.enq_device}->{h.deq_device} "
                f"in {h.home} memory{batches}")

    def _dump_node(self, n: ElementNode) -> list[str]:
        def ports(ps: dict[str, PortTypes]) -> str:
            return ", ".join(f"{p}({', '.join(t.c for t in types)})" for p, types in ps.items())

        flags = [str(n.role)] if n.role != Role.ELEMENT else []
        if n.join:
            flags.append("join")
        head = f"{n.name}: {n.cls_name}" + (f" [{' '.join(flags)}]" if flags else "")
        out = [head + f"  in: {ports(n.inputs) or '-'}  out: {ports(n.outputs) or '-'}"]
        if n.info is not None:
            f = n.info.fields
            out.append(f"    form={n.info.form or '-'} uses={sorted(f.uses)} writes={sorted(f.writes)}")
        if Plan in self.results and self.element_plan(n.name).describe():
            out.append(f"    plan: {self.element_plan(n.name).describe()}")
        for e in self.out_edges(n.name) + self.out_edges(n.name, kind=EdgeKind.ORDER):
            if e.kind == EdgeKind.DATA:
                out.append(f"    {e.out_port} -> {e.dst}.{e.in_port}")
            else:
                out.append(f"    then -> {e.dst}")
        return out
