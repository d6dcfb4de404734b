"""Backend planning: every choice the generated C depends on, made here so the dump shows it.

Before: processes placed, queues and states homed, bodies analysed.

After: each process has a `ProcessPlan` (manager cores, network queues, and
per queue how the process reaches it: directly or through the sync layer,
which side prints the counters, whether NIC threads share a sync shadow) and
each element an `ElementPlan` (its body lowered to plain C, the persistent
states it points at, an enqueue's instance choice and full port, a thread
source's packet boundaries, whether it is kept out of line). Code generation prints these and decides nothing::

    process nic (NIC) ...                 plan: 1 manager core(s), no network
                                          queue q: dequeues through the sync layer
    rx: Parse [...]                       plan: body 4 lines; uses counts
"""
from __future__ import annotations

from collections import deque

from floem import csrc
from floem.ir import (Device, ElementNode, FrameCrossing, Home, ProcessIR, ProgramIR, QueueIR, Role,
                      SegmentIR, SegmentKind)
from floem.ir.plan import (ElementCounters, ElementPlan, ProcessPlan, QueueSide, join_slot,
                           port_function)

NAME = "plan_code"
#: In a segment of more elements than this, every INLINE_DEPTH-th element (in program
#: order) is a function the C compiler does not inline into its caller: each element calls
#: the next through its port function, so a long chain inlined whole is one function nested
#: as deep as the chain, and gcc's time and memory grow with the square of that depth
#: (with -g: 28 s and 1.3 GB for 1,000 elements; 0.2 s for 100).
INLINE_DEPTH = 64
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES = frozenset({"processes", "state_homes", "queue_sides", "queues_lowered", "bodies",
                      "packet_windows"})
PROVIDES = frozenset({"code_plan"})


def run(ir: ProgramIR) -> ProgramIR:
    """Plan every process and element."""
    for proc in ir.processes.values():
        proc.plan = _process_plan(ir, proc)
    positions = {e: i for seg in ir.segments.values() for i, e in enumerate(seg.elements)}
    for n in ir.nodes():
        n.plan = _element_plan(ir, n, positions[n.name])
    if ir.options.counters:
        for proc in ir.processes.values():
            _plan_counters(ir, proc)
    for q in ir.queues.values():
        q.sync_batch = max(1, min(32, q.size // 4))
    if ir.main_info is not None and ir.main.code is not None:
        ir.main_body = csrc.lower(ir.main_info, {}, {})
    ir.planned = True
    return ir


def _process_plan(ir: ProgramIR, proc: ProcessIR) -> ProcessPlan:
    nodes = [ir.node(e) for s in proc.segments for e in ir.segments[s].elements]
    mine = {n.name for n in nodes}
    nic = proc.device == Device.NIC
    configured = ir.options.nic_managers if nic else 0
    touched = [q for q in ir.queues.values() if _enqueues(q, mine) or q.dequeuer in mine]
    syncs = ir.options.sync_layer and any(nic and q.home == Home.HOST for q in touched)
    networked = [s for s in proc.segments
                 if any(ir.node(e).uses_network for e in ir.segments[s].elements)]
    keeps = any(b.sliced and b.crossing == FrameCrossing.LEAVES and _enqueues(q, mine)
                for q in touched for carried in q.packets for b in carried.values())
    return ProcessPlan(
        managers=configured if syncs else 0,        # else the managers have nothing to do
        threads_manage=nic and configured == 0,
        network=any(n.uses_network for n in nodes),
        net_queues=max([len(ir.segments[s].cores) for s in networked] or [1]),
        queues={q.name: _side(q, mine, nic, configured) for q in touched},
        kept_frames=ir.options.slice_pool if keeps else 0,
        kept_frame_timeout_ms=ir.options.slice_timeout_ms if keeps else 0)


def _enqueues(q: QueueIR, mine: set[str]) -> bool:
    return any(e in mine for names in q.enqueuers for e in names)


def _side(q: QueueIR, mine: set[str], nic: bool, managers: int) -> QueueSide:
    synced = nic and q.home == Home.HOST
    enqueues, dequeues = _enqueues(q, mine), q.dequeuer in mine
    host_dequeues = q.deq_device == Device.CPU
    counting_end = dequeues if host_dequeues or q.home == Home.NIC else enqueues
    to_host = q.enq_device == Device.NIC
    return QueueSide(synced=synced, manage_inline=synced and managers == 0,
                     enqueues=enqueues, dequeues=dequeues,
                     counts=not synced and counting_end,
                     shared_shadow=managers == 0 or (q.multi_producer if to_host
                                                     else q.multi_consumer))


def _element_plan(ir: ProgramIR, n: ElementNode, position: int) -> ElementPlan:
    """The plan of ``n``, at ``position`` in its segment's program order."""
    seg = ir.segments[n.segment]
    source = seg.kind == SegmentKind.THREAD and seg.source == n.name
    body = ""
    if n.role in (Role.ELEMENT, Role.CORE_ID) and n.code and n.info is not None:
        reads = {p: [join_slot(n.name, p, i) if n.join else f"{p}_{i}" for i in range(len(t))]
                 for p, t in n.inputs.items()}
        body = csrc.lower(n.info, reads, {p: port_function(n.name, p) for p in n.outputs})
    used = n.info.persistent_used if n.info else set()
    return ElementPlan(
        body=body,
        pointers=[attr for attr in n.persistent if attr in used],
        steers_by_qid=n.role == Role.ENQUEUE and n.packet_state is not None
        and n.packet_state.field("qid") is not None,
        full_port=n.role == Role.ENQUEUE and bool(ir.out_edges(n.name, "full")),
        thread_source=source,
        emits_packets=source and n.info is not None and n.info.form == "multiple",
        out_of_line=len(seg.elements) > INLINE_DEPTH and position > 0
        and position % INLINE_DEPTH == 0)


def _plan_counters(ir: ProgramIR, proc: ProcessIR) -> None:
    """Lay out the packet counters of ``proc``'s elements, those the user's program names
    (not the queue and cache plumbing the compiler adds): a counter per output port; runs
    where the ports feeding an element are not all counted (after a queue, in a callable)
    or it is a join; runs that sent nothing on where a run may send more than one packet
    (runtime/include/floem/counters.h). Atomic where several threads may run the element."""
    counted = [(ir.node(name), seg) for s in proc.segments
               for seg in [ir.segments[s]] for name in _flow_order(ir, seg)
               if ir.node(name).role in (Role.ELEMENT, Role.CORE_ID)]
    outs: dict[tuple[str, str], int] = {}
    for n, _ in counted:
        for port in n.outputs:
            outs[(n.name, port)] = len(outs)
    total, layout = len(outs), []
    for n, seg in counted:
        feeds = [outs.get((u, d["out_port"])) for u, _, d in ir.in_edges(n.name)]
        own_runs = bool(n.inputs) and (n.join or not feeds or None in feeds)
        own_ended = bool(n.inputs) and not _sends_at_most_once(n)
        runs = total if own_runs or own_ended else None
        total += (runs is not None) + own_ended
        c = ElementCounters(
            has_inputs=bool(n.inputs), runs=runs, ended=runs + 1 if own_ended else None,
            fed_by=() if runs is not None else tuple(i for i in feeds if i is not None),
            outs=tuple((p, outs[(n.name, p)]) for p in n.outputs),
            shared=seg.kind == SegmentKind.CALLABLE or len(seg.cores) > 1)
        if c.has_inputs or c.outs:
            n.plan.counters = c
            layout.append(c.layout_line(n.name, seg.name))
    proc.plan.counters, proc.plan.counter_layout = total, "".join(layout)


def _sends_at_most_once(n: ElementNode) -> bool:
    """Whether a run of ``n`` sends at most one packet on (on one port, once): no output
    ports, an ``output switch``, or an output block with a single port call."""
    if not n.outputs:
        return True
    info = n.info
    if info is None:
        return False
    return info.form == "switch" or (info.form == "block" and
                                     sum(len(lines) for lines in info.calls.values()) == 1)


def _flow_order(ir: ProgramIR, seg: SegmentIR) -> list[str]:
    """``seg``'s elements in the order packets reach them from its source (breadth first),
    then the others in program order."""
    order, seen = [], set()
    frontier = deque([seg.source] if seg.source else [])
    while frontier:
        name = frontier.popleft()
        if name in seen or name not in seg.elements:
            continue
        seen.add(name)
        order.append(name)
        frontier.extend(v for _, v, _ in ir.out_edges(name))
    return order + [e for e in seg.elements if e not in seen]
