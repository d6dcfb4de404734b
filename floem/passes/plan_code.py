"""Backend planning: every choice the generated C depends on, made here so the dump shows it.

Before: processes placed (`Placement`), queues and states homed (`Homes`), windows of
typed packets decided (`Windows`), bodies analysed.

After: a `Plan` result, where each process has a `ProcessPlan` (manager cores, network queues, and
per queue how the process reaches it: directly or through the sync layer,
which side prints the counters, whether NIC threads share a sync shadow) and
each element an `ElementPlan` (its body lowered to plain C, the persistent
states it points at, an enqueue's instance choice and full port, a thread
source's packet boundaries, whether it is kept out of line, its packet counters and, in a
build with the ``trace`` option, what it records of traced packets: its trace sites, each a
line of the process's site table that the runtime writes out with the events). Code
generation prints these and decides nothing::

    process nic (NIC) ...                 plan: 1 manager core(s), no network
                                          queue q: dequeues through the sync layer
    rx: Parse [...]                       plan: body 4 lines; uses counts
                                          plan: ...; trace: enter 3, out send 4 (op)
"""
from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Mapping

import networkx as nx

from floem import csrc
from floem.csrc import BodyForm
from floem.csrc.tokens import identifiers, mentions
from floem.ir import (Device, EdgeKind, ElementNode, EntryLayouts, FrameCrossing, Home, Homes,
                      Liveness, Placement, Plan, ProcessIR, ProgramIR, QueueIR, Role, SegmentIR,
                      SegmentKind, Windows)
from floem.ir.cnames import GENERATED_GLOBALS, c_global
from floem.ir.graph import unused_name
from floem.ir.results import frozen_map
from floem.ir.plan import (TRACE_FIELD, TRACE_VALUES, ElementCounters, ElementPlan, ElementTrace,
                           ProcessPlan, QueueLayout, QueueSide, TraceKind, TracedPort, join_slot)

NAME = "plan_code"
#: In a segment of more elements than LONG_SEGMENT, every INLINE_DEPTH-th element (in
#: program order) is a function the C compiler does not inline into its caller: each element
#: calls the next through its port function, so a long chain inlined whole is one function
#: nested as deep as the chain, and gcc's time and memory grow with the square of that depth
#: (with -g: 28 s and 1.3 GB for 1,000 elements; 0.2 s for 100; 1.8 s inlined 64 deep,
#: 1.1 s 16 deep: docs/benchmarks.md).
LONG_SEGMENT = 64
INLINE_DEPTH = 16
#: A process of more elements than this is compiled as several translation units of at most
#: this many elements each (its segments in order, a longer one in parts), which make -j
#: compiles in parallel; unless the program's floem.include C defines what a program must
#: hold once (data it writes, a function with external linkage), which one unit keeps so.
UNIT_ELEMENTS = 256
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({Placement, Homes, Liveness, Windows, EntryLayouts,
                                             "queues_lowered", "bodies", "trace_field"})
PROVIDES: frozenset[str | type] = frozenset({Plan})


def run(ir: ProgramIR) -> ProgramIR:
    """Plan every process and element."""
    layouts = {q.name: _layout(ir, q) for q in ir.queues.values()}
    processes = {proc.name: _process_plan(ir, proc, layouts) for proc in ir.processes.values()}
    positions = {e: i for seg in ir.segments.values() for i, e in enumerate(seg.elements)}
    taken = ir.names() | _checked_globals(ir)
    made = {n.name: _element_plan(ir, n, positions[n.name], taken) for n in ir.nodes()}
    plans = {name: plan for name, (plan, _) in made.items()}
    named = {name: names for name, (_, names) in made.items()}
    writers = _state_writers(ir, plans)
    if ir.options.counters:
        for proc in ir.processes.values():
            counters, total, layout, notes = _plan_counters(ir, proc, plans)
            plans |= {name: dataclasses.replace(plans[name], counters=c)
                      for name, c in counters.items()}
            processes[proc.name] = dataclasses.replace(
                processes[proc.name], counters=total, counter_layout=layout, counter_notes=notes)
    if ir.options.trace:
        for number, proc in enumerate(ir.processes.values(), 1):
            traces, sites = _plan_trace(ir, proc, plans)
            plans |= {name: dataclasses.replace(plans[name], trace=t) for name, t in traces.items()}
            processes[proc.name] = dataclasses.replace(processes[proc.name], trace_number=number,
                                                       trace_sites=sites)
    shared = {name for proc in processes.values() for names in proc.imports for name in names}
    plans = {name: dataclasses.replace(
        plan, alone=_alone(ir, ir.node(name), plan, writers, named[name]),
        state_unused=not _names_state(ir, ir.node(name), plan, named[name]),
        shared=name in shared) for name, plan in plans.items()}
    batches = {q.name: max(1, min(32, q.size // 4)) for q in ir.queues.values()}
    main_body = csrc.lower(ir.main_info, {}, {}) \
        if ir.main_info is not None and ir.main.code is not None else None
    ir.results.add(Plan(frozen_map(plans), frozen_map(processes), frozen_map(batches),
                        frozen_map(layouts), main_body))
    return ir


def _process_plan(ir: ProgramIR, proc: ProcessIR,
                  layouts: dict[str, QueueLayout]) -> ProcessPlan:
    nodes = [ir.node(e) for s in proc.segments for e in ir.segments[s].elements]
    mine = {n.name for n in nodes}
    nic = proc.device == Device.NIC
    configured = ir.options.nic_managers if nic else 0
    touched = [q for q in ir.queues.values() if _enqueues(q, mine) or q.dequeuer in mine]
    syncs = ir.options.sync_layer and any(nic and ir.queue_home(q.name).home == Home.HOST
                                          for q in touched)
    networked = [s for s in proc.segments
                 if any(ir.node(e).uses_network for e in ir.segments[s].elements)]
    keeps = any(b.sliced and b.crossing == FrameCrossing.LEAVES and _enqueues(q, mine)
                for q in touched for carried in ir.windows.packets[q.name]
                for b in carried.values())
    units = _units(ir, proc)
    return ProcessPlan(
        units=units,
        imports=_imports(ir, units),
        one_unit_for=ir.include_definitions if sum(len(ir.segments[s].elements)
                                                   for s in proc.segments) > UNIT_ELEMENTS
        else (),
        managers=configured if syncs else 0,        # else the managers have nothing to do
        threads_manage=nic and configured == 0,
        network=any(n.uses_network for n in nodes),
        net_queues=max([len(ir.segments[s].cores) for s in networked] or [1]),
        own_orders=bool(networked) and not touched
        and all(ir.segments[s].kind == SegmentKind.THREAD for s in networked),
        queues=frozen_map({q.name: _side(ir, q, mine, nic, configured) for q in touched}),
        publishing=tuple(s for s in proc.segments
                         if any(ir.node(e).role == Role.ENQUEUE
                                and layouts[ir.node(e).queue] == QueueLayout.RING
                                for e in ir.segments[s].elements)),
        kept_frames=ir.options.slice_pool if keeps else 0,
        kept_frame_timeout_ms=ir.options.slice_timeout_ms if keeps else 0)


def _units(ir: ProgramIR, proc: ProcessIR) -> tuple[tuple[str, ...], ...]:
    """The elements of each translation unit of ``proc`` (`UNIT_ELEMENTS`): its segments in
    order, a segment longer than a unit in parts of UNIT_ELEMENTS elements (a multiple of
    INLINE_DEPTH: each part begins with an element kept out of line)."""
    segments = [ir.segments[s].elements for s in proc.segments]
    if sum(map(len, segments)) <= UNIT_ELEMENTS or ir.include_definitions:
        return (tuple(e for elements in segments for e in elements),)
    units: list[tuple[str, ...]] = []
    current: tuple[str, ...] = ()
    for elements in segments:
        for at in range(0, len(elements), UNIT_ELEMENTS):
            part = elements[at:at + UNIT_ELEMENTS]
            if current and len(current) + len(part) > UNIT_ELEMENTS:
                units.append(current)
                current = ()
            current += part
    return tuple(units + [current])


def _imports(ir: ProgramIR, units: tuple[tuple[str, ...], ...]) -> tuple[tuple[str, ...], ...]:
    """For each of a process's ``units``, the elements of its other units it calls: through
    an edge (a port's dispatcher, an element ordered after another), or a callable segment's
    function, which is in the unit of the segment's return element (its result's slot is
    there), calling its source."""
    unit = {e: i for i, elements in enumerate(units) for e in elements}
    called: list[set[str]] = [set() for _ in units]
    for name, k in unit.items():
        called[k] |= {e.dst for e in ir.out_edges(name, kind=None) if unit.get(e.dst, k) != k}
    for seg in {ir.node(e).segment for e in unit}:
        segment = ir.segments[seg]
        if segment.kind == SegmentKind.CALLABLE:
            ret = next((e for e in segment.elements if ir.node(e).role == Role.RETURN),
                       segment.source)
            if unit[ret] != unit[segment.source]:
                called[unit[ret]].add(segment.source)
    position = {e: i for i, e in enumerate(unit)}
    return tuple(tuple(sorted(names, key=position.__getitem__)) for names in called)


def _layout(ir: ProgramIR, q: QueueIR) -> QueueLayout:
    """The ring layout for a queue between host threads with one producer and one consumer
    per instance; else each entry's turn in its header: the NIC's sync layer moves entries
    with their turns by DMA, and several producers or consumers claim entries by their turns
    without waiting for one another (runtime/include/floem/queue.h)."""
    home = ir.queue_home(q.name)
    between_host_threads = home.enq_device == Device.CPU and home.deq_device == Device.CPU
    return QueueLayout.RING if between_host_threads and not home.multi_producer \
        and not home.multi_consumer else QueueLayout.TURNS


def _enqueues(q: QueueIR, mine: set[str]) -> bool:
    return any(e in mine for names in q.enqueuers for e in names)


def _side(ir: ProgramIR, q: QueueIR, mine: set[str], nic: bool, managers: int) -> QueueSide:
    home = ir.queue_home(q.name)
    synced = nic and home.home == Home.HOST
    enqueues, dequeues = _enqueues(q, mine), q.dequeuer in mine
    host_dequeues = home.deq_device == Device.CPU
    counting_end = dequeues if host_dequeues or home.home == Home.NIC else enqueues
    to_host = home.enq_device == Device.NIC
    return QueueSide(synced=synced, manage_inline=synced and managers == 0,
                     enqueues=enqueues, dequeues=dequeues,
                     counts=not synced and counting_end,
                     shared_shadow=managers == 0 or (home.multi_producer if to_host
                                                     else home.multi_consumer))


def _checked_globals(ir: ProgramIR) -> set[str]:
    """The global C names the generated code derives from queue, cache, segment and state
    names (`GENERATED_GLOBALS`: ``<queue>_inst``, ``<cache>_evict``, ``<segment>_thread``...)
    and the C types of states; an element may not have one of them (FloemError at the
    element)."""
    owners: dict[str, Mapping[str, object]] = {"queue": ir.queues, "cache": ir.caches,
                                               "segment": ir.segments, "state": ir.states}
    made = {c_global(kind, name, suffix): f"{kind} {name}'s {suffix}"
            for kind, suffixes in GENERATED_GLOBALS.items() for name in owners[kind]
            for suffix in suffixes}
    made |= {layout.name: f"the C type of state {layout.name}" for layout in ir.layouts}
    for n in ir.nodes():
        if n.name in made:
            raise n.loc.error(f"element name '{n.name}' is also the generated C's name for "
                              f"{made[n.name]}: rename the element")
    return set(made)


def _element_plan(ir: ProgramIR, n: ElementNode, position: int,
                  taken: set[str]) -> tuple[ElementPlan, frozenset[str]]:
    """The plan of ``n``, at ``position`` in its segment's program order, and the
    identifiers its lowered body names; the C names of its port and join functions are not
    in ``taken`` (and are added to it)."""
    seg = ir.segments[n.segment]
    source = seg.kind == SegmentKind.THREAD and seg.source == n.name
    if seg.kind == SegmentKind.CALLABLE:    # a callable taking packets from a queue starts
        takes = any(ir.node(e).role == Role.DEQUEUE for e in seg.elements)  # them there
        begins = n.role == Role.DEQUEUE if takes else seg.source == n.name
    else:
        begins = source

    def fresh(wanted: str) -> str:
        name = unused_name(wanted, taken)
        taken.add(name)
        return name

    ports = {p: fresh(f"{n.name}_{p}") for p in n.outputs}
    record = fresh(f"{n.name}_in") if n.join else ""
    entries = {p: fresh(f"{n.name}_in_{p}") for p in n.inputs} if n.join else {}
    body = ""
    unused: tuple[str, ...] = ()
    named: frozenset[str] = frozenset()
    if n.role in (Role.ELEMENT, Role.CORE_ID):
        reads = {p: [join_slot(record, p, i) if n.join else f"{p}_{i}" for i in range(len(t))]
                 for p, t in n.inputs.items()}
        if n.code and n.info is not None:
            body, named = csrc.lower_named(n.info, reads, ports)
        if not n.join:
            unused = tuple(v for values in reads.values() for v in values if v not in named)
    used = n.info.persistent_used if n.info else set()
    emits = source and n.info is not None and n.info.form == BodyForm.MULTIPLE
    return ElementPlan(
        ports=frozen_map(ports), entries=frozen_map(entries), inputs_record=record,
        body=body, unused=unused,
        pointers=tuple(attr for attr in n.persistent if attr in used),
        steers_by_qid=n.role == Role.ENQUEUE and n.packet_state is not None
        and n.packet_state.field("qid") is not None and not ir.queues[n.queue].boundary,
        spreads_over=len(seg.cores) if n.role == Role.ENQUEUE and ir.queues[n.queue].boundary
        and ir.queues[n.queue].instances > 1 else 0,
        full_port=n.role == Role.ENQUEUE and bool(ir.out_edges(n.name, "full")),
        thread_source=source,
        begins_packets=begins,
        emits_packets=emits,
        fresh_state=emits and _fresh_state(ir, n, seg),
        out_of_line=ir.options.count_elements or (len(seg.elements) > LONG_SEGMENT
                                                  and position > 0
                                                  and position % INLINE_DEPTH == 0)), named


def _names_state(ir: ProgramIR, n: ElementNode, plan: ElementPlan,
                 named: frozenset[str]) -> bool:
    """Whether the function of ``n`` names the packet's state: its body does, it passes the
    state on (an argument element's call of its port, the elements ordered after it), its
    trace records fields or an id, or the C the compiler writes for it reads or passes the
    state (every queue and cache element's, but a release's, and an enqueue's that copies
    nothing, steers by nothing, sends nothing to a full port and drops no frame); ``named``:
    the identifiers its body names."""
    if n.role == Role.ARGS or "state" in named or ir.out_edges(n.name, kind=EdgeKind.ORDER) \
            or (plan.trace and (plan.trace.carries or plan.trace.enter_fields)):
        return True
    if n.role == Role.ENQUEUE:
        channel = ir.entry_layouts.entries[n.queue][n.channel]
        return plan.steers_by_qid or plan.full_port or not channel.empty \
            or bool(channel.leaving)
    return n.role not in (Role.ELEMENT, Role.CORE_ID, Role.RETURN, Role.RELEASE)


def _state_writers(ir: ProgramIR, plans: Mapping[str, ElementPlan]) -> dict[str, set[str]]:
    """The segments whose elements' bodies name each persistent state (their plans'
    pointers), by state instance; "main" stands for ``floem.main``'s code where it may
    write the state (reading a counter there leaves its element the only writer)."""
    writers: dict[str, set[str]] = {}
    for n in ir.nodes():
        for attr in plans[n.name].pointers:
            writers.setdefault(n.persistent[attr].name, set()).add(n.segment)
    for name in ir.main_info.persistent_written if ir.main_info else ():
        writers.setdefault(name, set()).add("main")
    return writers


def _alone(ir: ProgramIR, n: ElementNode, plan: ElementPlan, writers: dict[str, set[str]],
           named: frozenset[str]) -> bool:
    """Whether ``n``'s body adds to its states (``floem_add``) as the only writer of the
    persistent states it uses: one thread runs its segment (not a callable, which its
    callers' threads run), no other segment or external main names them and ``floem.main``
    code does not write them. Its statistics counters then need no atomic add; an atomic
    add costs a locked instruction per packet. ``named``: the identifiers its body names."""
    seg = ir.segments[n.segment]
    return bool(plan.pointers) and "floem_add" in named \
        and seg.kind == SegmentKind.THREAD and len(seg.cores) == 1 and not ir.main.external \
        and all(writers.get(n.persistent[attr].name) == {n.segment} for attr in plan.pointers)


def _fresh_state(ir: ProgramIR, n: ElementNode, seg: SegmentIR) -> bool:
    """Whether each packet source ``n`` emits can have a per-packet state of its own, a
    local of the output port's function: the body the user wrote never names the state (so
    it holds nothing from one packet to the next), no path reads a field before writing it
    (nothing to zero) and queues carry only the fields written (not ``send_all_fields``). A
    local the C compiler sees whole is kept in registers, where the thread's state, reached
    through a pointer, is stored and reloaded around every call."""
    if n.packet_state is None or n.info is None or ir.liveness.read_first[seg.name] \
            or ir.options.send_all_fields:
        return False
    f = n.info.fields
    texts = [c.text for c in (n.code, n.nic_code) if c is not None]
    return not (f.uses or f.writes or f.kills) and not mentions("state", texts)


def _plan_counters(ir: ProgramIR, proc: ProcessIR, plans: Mapping[str, ElementPlan]
                   ) -> tuple[dict[str, ElementCounters], int, str, tuple[tuple[int, str], ...]]:
    """The packet counters of ``proc``'s elements (by element), how many there are, their
    layout and the notes under it. Lays out the packet counters of ``proc``'s elements,
    those the user's program names (not the queue and cache plumbing the compiler adds): a
    counter per output port, except the port of an element whose every run sends exactly one
    packet on it (it counts what the element's input counts); runs where the ports feeding
    an element are not all counted (after a queue, in a callable) or it is a join; runs that
    sent nothing on where a run may send more than one packet
    (runtime/include/floem/counters.h). Atomic where several threads may run the element.
    The ``report = True`` states an element uses (its drops by reason, say) are printed
    under its row of the table, where the process can read them."""
    counted = [(ir.node(name), seg) for s in proc.segments
               for seg in [ir.segments[s]] for name in _flow_order(ir, seg)
               if ir.node(name).role in (Role.ELEMENT, Role.CORE_ID)]
    home = Home.NIC if proc.device == Device.NIC else Home.HOST
    notes = []
    counters = {}
    once = {n.name for n, _ in counted if n.inputs and _sends_exactly_once(n)}
    outs: dict[tuple[str, str], int] = {}
    for n, _ in counted:
        for port in n.outputs:
            if n.name not in once:
                outs[(n.name, port)] = len(outs)
    # The counters whose sum is what each port sent (a port of `once`: its element's input).
    sums: dict[tuple[str, str], tuple[int, ...]] = {k: (i,) for k, i in outs.items()}
    total, layout = len(outs), []
    for n, seg in counted:
        feeds = [sums.get((e.src, e.out_port)) for e in ir.in_edges(n.name)]
        own_runs = bool(n.inputs) and (n.join or not feeds or None in feeds)
        own_ended = bool(n.inputs) and not _sends_at_most_once(n)
        runs = total if own_runs or own_ended else None
        total += (runs is not None) + own_ended
        fed_by = () if runs is not None else tuple(i for f in feeds if f for i in f)
        for port in n.outputs if n.name in once else ():
            sums[(n.name, port)] = (runs,) if runs is not None else fed_by
        c = ElementCounters(
            has_inputs=bool(n.inputs), runs=runs,
            ended=runs + 1 if own_ended and runs is not None else None,
            fed_by=fed_by, outs=tuple((p, outs.get((n.name, p))) for p in n.outputs),
            shared=seg.kind == SegmentKind.CALLABLE or len(seg.cores) > 1,
            never_ends=bool(n.inputs) and _always_switches(n))
        if c.has_inputs or c.outs:
            counters[n.name] = c
            layout.append(c.layout_line(n.name, seg.name))
            notes += [(len(layout) - 1, s.name) for attr, s in n.persistent.items()
                      if s.layout.report and attr in plans[n.name].pointers
                      and ir.homes.states[s.name] == home]
    return counters, total, "".join(layout), tuple(notes)


def _sends_exactly_once(n: ElementNode) -> bool:
    """Whether every run of ``n`` sends exactly one packet on, on its one output port: an
    output block calling it once, as a whole statement of the block, in a body with no
    ``return`` or ``goto`` (which could leave or jump past the block)."""
    info = n.info
    if len(n.outputs) != 1 or info is None or info.form != BodyForm.BLOCK or n.join:
        return False
    return (set(info.always_fires) == set(n.outputs)
            and sum(len(lines) for lines in info.calls.values()) == 1 and not _leaves_early(n))


def _always_switches(n: ElementNode) -> bool:
    """Whether every run of ``n`` sends exactly one packet on, on one of its ports: an
    ``output switch`` with an ``else`` case, in a body with no ``return`` or ``goto``."""
    info = n.info
    return info is not None and info.form == BodyForm.SWITCH and info.switch_has_else \
        and not _leaves_early(n)


def _leaves_early(n: ElementNode) -> bool:
    """Whether ``n``'s body has a ``return`` or ``goto``, which could leave or jump past its
    output block or switch."""
    named = frozenset().union(*(identifiers(c.text) for c in (n.code, n.nic_code)
                                if c is not None))
    return "return" in named or "goto" in named


def _sends_at_most_once(n: ElementNode) -> bool:
    """Whether a run of ``n`` sends at most one packet on (on one port, once): no output
    ports, an ``output switch``, or an output block with a single port call."""
    if not n.outputs:
        return True
    info = n.info
    if info is None:
        return False
    return info.form == BodyForm.SWITCH or (info.form == BodyForm.BLOCK and
                                     sum(len(lines) for lines in info.calls.values()) == 1)


def _flow_order(ir: ProgramIR, seg: SegmentIR) -> list[str]:
    """``seg``'s elements in the order packets reach them from its source (breadth first),
    then the others in program order."""
    order, seen, members = [], set(), set(seg.elements)
    frontier = deque([seg.source] if seg.source else [])
    while frontier:
        name = frontier.popleft()
        if name in seen or name not in members:
            continue
        seen.add(name)
        order.append(name)
        frontier.extend(e.dst for e in ir.out_edges(name))
    return order + [e for e in seg.elements if e not in seen]


def _plan_trace(ir: ProgramIR, proc: ProcessIR, plans: Mapping[str, ElementPlan]
                ) -> tuple[dict[str, ElementTrace], tuple[str, ...]]:
    """What ``proc``'s elements record (by element), and its site table: what they record of
    traced packets (runtime/include/floem/trace.h): each record is a site, a line of the
    process's site table saying what it is (``KIND ELEMENT key=value ...``, read by
    floem/trace.py). Queue plumbing (dequeue, release) records nothing; a save's output
    restores the id the entry carried. Where the ``--trace-filter`` reads fields a packet
    entering has not been given yet, it is decided at the ports after which the segment has
    written them (`_decisions`)."""
    sites: list[str] = []
    traces = {}

    def site(line: str) -> int:
        sites.append(line)
        return len(sites) - 1

    for s in proc.segments:
        seg = ir.segments[s]
        entries = {name: _admissions(ir, ir.node(name), seg) for name in seg.elements
                   if _is_entry(ir, ir.node(name), seg)}
        decides = {key: condition for admissions in entries.values()
                   for _, (_, decisions) in admissions.items() for key, condition in decisions}
        for name in _flow_order(ir, seg):
            n = ir.node(name)
            if n.role not in (Role.DEQUEUE, Role.RELEASE):
                traces[name] = _element_trace(ir, n, plans[name], entries.get(name, {}),
                                              decides, site)
    return traces, tuple(sites)


#: How packets entering at a port are admitted: (the filter evaluated there, "" for none;
#: or None when it is decided later, at the ports listed with the filter evaluated there).
_Admission = tuple[str | None, list[tuple[tuple[str, str], str]]]


def _element_trace(ir: ProgramIR, n: ElementNode, plan: ElementPlan,
                   admissions: dict[str, _Admission],
                   decides: dict[tuple[str, str], str],
                   site: Callable[[str], int]) -> ElementTrace:
    """The trace sites of ``n`` (planned as ``plan``; ``site(line)`` adds one and returns its
    index), given how
    its ports admit packets (``admissions``: for an entry) and the ports of the segment that
    decide the filter."""
    enter, end, carries = None, None, False
    enter_fields: tuple[tuple[str, str], ...] = ()
    if n.role == Role.ENQUEUE:
        q = ir.queues[n.queue]
        carries = TRACE_FIELD in ir.liveness.carried[q.name][n.channel]
        enter_fields = _numbers(ir, n, ["qid"] if plan.steers_by_qid else [])
        enter = site(f"{TraceKind.ENQ} {n.name} queue={q.name} channel={n.channel} "
                     f"route={_route(ir, q)} {_fields_text(enter_fields)}")
    elif n.inputs and n.role != Role.SAVE:
        enter = site(f"{TraceKind.ENTER} {n.name}")
        end = site(f"{TraceKind.END} {n.name}") if _may_send_nothing(n) else None
    written = _numbers(ir, n, sorted(n.info.fields.writes) if n.info else [])
    ports, untraced = [], False
    for port in n.outputs:
        targets = [e.dst for e in ir.out_edges(n.name, port)]
        common = f"{n.name} port={port} ports={len(n.outputs)} to={','.join(targets) or '-'}"
        if n.role == Role.SAVE:
            q = ir.queues[n.queue]
            common += f" queue={q.name} channel={n.channel} route={_route(ir, q)}"
            if TRACE_FIELD in ir.liveness.carried[q.name][n.channel]:
                restore = site(f"{TraceKind.RESTORE} {common}")
                ports.append((port, TracedPort(TraceKind.RESTORE, restore)))
                continue
        if port not in admissions:
            send = site(f"{TraceKind.SEND} {common} {_fields_text(written)}")
            ports.append((port, TracedPort(TraceKind.SEND, send, written,
                                           decides=decides.get((n.name, port), ""))))
            continue
        now, decisions = admissions[port]
        if now is None and not decisions:
            untraced = True
            continue
        ports.append((port, TracedPort(
            TraceKind.ADMIT, site(f"{TraceKind.ADMIT} {common} {_fields_text(written)}"), written,
            once=not plan.emits_packets, filter=now or "", pending=now is None)))
    return ElementTrace(enter=enter, enter_fields=enter_fields, end=end, carries=carries,
                        ports=tuple(ports), untraced=untraced)


def _route(ir: ProgramIR, q: QueueIR) -> str:
    """``CPU->NIC``: the devices of ``q``'s two ends, as a site line gives them."""
    home = ir.queue_home(q.name)
    return f"{home.enq_device}->{home.deq_device}"


def _is_entry(ir: ProgramIR, n: ElementNode, seg: SegmentIR) -> bool:
    """Whether packets enter the program at ``n``'s outputs: a thread segment's source
    (not a dequeue), a callable's arguments, a save whose queue cannot carry their ids."""
    if n.role == Role.SAVE:
        return TRACE_FIELD not in ir.liveness.carried[n.queue][n.channel]
    return n.role == Role.ARGS or (seg.kind == SegmentKind.THREAD and seg.source == n.name
                                   and n.role != Role.DEQUEUE)


def _admissions(ir: ProgramIR, n: ElementNode, seg: SegmentIR) -> dict[str, _Admission]:
    """How each output port of entry ``n`` admits packets (a port feeding only dequeues,
    e.g. a qid, admits none: the packet comes out of the queue)."""
    result = {}
    for port in n.outputs:
        targets = [e.dst for e in ir.out_edges(n.name, port)]
        if targets and all(ir.node(v).role == Role.DEQUEUE for v in targets):
            continue
        result[port] = _admission(ir, n, port, seg)
    return result


def _admission(ir: ProgramIR, n: ElementNode, port: str, seg: SegmentIR) -> _Admission:
    """How packets entering at ``n``'s ``port`` are selected: every one (no filter); by
    the ``--trace-filter`` there, when it reads port values or fields ``n`` writes; or
    later, at the first ports of the segment after which every field it reads has been
    written on every path (none of the packet's events is kept until then). A filter that
    can be decided nowhere warns that none of these packets is traced."""
    f = ir.trace_filter
    if f is None:
        return "", []
    fields = {x.name for x in n.packet_state.fields} if n.packet_state else set()
    missing = sorted(f.info.fields.uses - fields)
    if missing or f.values > len(n.outputs[port]):
        lacks = (f"fields {', '.join(missing)} of the per-packet state" if missing
                 else f"v{f.values - 1} (port {port} sends {len(n.outputs[port])} values)")
        return _untraced(ir, n, f"--trace-filter reads {lacks}, which packets entering at "
                                f"'{n.name}' do not have")
    condition = csrc.lower(f.info, {}, {})
    written = set(n.info.fields.writes) if n.info else set()
    if f.info.fields.uses <= written:
        return condition, []
    if f.values:
        return _untraced(ir, n, f"--trace-filter reads port values, which only '{n.name}' "
                                f"sees, and fields it does not write")
    decisions = [(key, condition) for key in _decisions(ir, n, port, seg, f.info.fields.uses)]
    if not decisions:
        return _untraced(ir, n, f"--trace-filter reads fields that segment '{seg.name}' does "
                                f"not surely write after '{n.name}'")
    return None, decisions


def _untraced(ir: ProgramIR, n: ElementNode, why: str) -> _Admission:
    ir.warnings.append(f"{n.loc}: {why}: none of the packets entering there is traced")
    return None, []


def _decisions(ir: ProgramIR, entry: ElementNode, port: str, seg: SegmentIR,
               needed: set[str]) -> list[tuple[str, str]]:
    """The output ports of ``seg``'s elements, reached from ``entry``'s ``port``, after
    which every field of ``needed`` has been written on every path from there (and before
    which not): where a filter reading them is decided."""
    written = set(entry.info.fields.writes) if entry.info else set()
    reached = {e.dst for e in ir.out_edges(entry.name, port)}
    frontier = deque(sorted(reached))
    while frontier:
        name = frontier.popleft()
        for e in ir.out_edges(name):
            if e.dst in seg.elements and e.dst not in reached:
                reached.add(e.dst)
                frontier.append(e.dst)
    region = ir.graph.subgraph(reached)
    if not nx.is_directed_acyclic_graph(region):
        return []                       # a loop in the segment: no place surely decides
    defined_in: dict[str, set[str]] = {}
    result = []
    for name in nx.lexicographical_topological_sort(region):
        n = ir.node(name)
        feeds = []
        for e in ir.in_edges(name):
            if e.src == entry.name and e.out_port == port:
                feeds.append(written)
            elif e.src in defined_in:
                feeds.append(defined_in[e.src] | _writes(ir.node(e.src)))
        merged = set().union(*feeds) if n.join else set.intersection(*feeds) if feeds else set()
        defined_in[name] = merged
        out = merged | _writes(n)
        if needed <= out and not needed <= merged:
            result += [(name, p) for p in n.outputs]
    return result


def _writes(n: ElementNode) -> set[str]:
    return set(n.info.fields.writes) if n.info else set()


def _numbers(ir: ProgramIR, n: ElementNode, names: list[str]) -> tuple[tuple[str, str], ...]:
    """Those of per-packet fields ``names`` that are numbers (not the hidden fields), in
    the state's order, with their kind (signed, unsigned, real); the first `TRACE_VALUES`."""
    if n.packet_state is None:
        return ()
    hidden = {TRACE_FIELD} | {f for c in ir.caches.values()
                              for f in (c.version_field, c.evict_field)}
    return tuple((f.name, f.type.number) for f in n.packet_state.fields
                 if f.name in names and f.name not in hidden
                 and f.type.number is not None)[:TRACE_VALUES]


def _fields_text(fields: tuple[tuple[str, str], ...]) -> str:
    """``fields=a:signed,b:real`` (``fields=-`` for none), as a site line lists them."""
    return "fields=" + (",".join(f"{name}:{kind}" for name, kind in fields) or "-")


def _may_send_nothing(n: ElementNode) -> bool:
    """Whether a run of ``n`` may end without sending the packet on (an output block whose
    ports may all stay silent, a switch without else, ``output multiple``)."""
    if not n.outputs:
        return False
    info = n.info
    if info is None:
        return True
    always = (info.form == BodyForm.BLOCK and bool(info.always_fires)) or \
        (info.form == BodyForm.SWITCH and info.switch_has_else)
    return not always
