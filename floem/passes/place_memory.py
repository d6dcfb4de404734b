"""Memory placement: where each persistent state and queue lives, and its variants.

Before: segments placed on devices; queues with enqueue and dequeue ends.

After: a `Homes` result. ``states`` says whether each persistent state lives in host
memory (shared by every host process; the NIC reaches it only by DMA) or in
NIC memory (used by NIC elements only). ``queues`` gives each queue's two devices and
its home: host memory unless both ends are on the NIC; a NIC end of a
host-resident queue goes through the synchronization layer. Producer and
consumer variants (atomic or not) follow from the threads that use an
instance::

    A (CPU) >> q >> B (NIC)       q: CPU->NIC in host memory, NIC side synced
    t used by NIC elements only   t in nic memory
"""
from __future__ import annotations

from floem.csrc.tokens import TokenKind, tokenize
from floem.ir import (Device, ElementNode, Home, Homes, Placement, ProgramIR, QueueHome,
                      QueueIR, SegmentKind)
from floem.ir.results import frozen_map

NAME = "place_memory"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({Placement, "queues_lowered", "main_info"})
PROVIDES: frozenset[str | type] = frozenset({Homes})


def run(ir: ProgramIR) -> ProgramIR:
    """Decide the home of every state and queue."""
    devices: dict[str, set[Device]] = {name: set() for name in ir.states}
    for n in ir.nodes():
        for state in n.persistent.values():
            devices.setdefault(state.name, set()).add(ir.segments[n.segment].device)
    main_info = ir.main_info
    homes: dict[str, Home] = {}
    for name in ir.states:
        used_by_main = main_info is not None and name in main_info.persistent_used
        only_nic = devices[name] == {Device.NIC} and not used_by_main
        homes[name] = Home.NIC if only_nic else Home.HOST
    for n in ir.nodes():
        if ir.segments[n.segment].device != Device.NIC:
            continue
        for attr, state in n.persistent.items():
            if homes[state.name] == Home.HOST and n.info and _dereferences(n, attr):
                ir.warnings.append(
                    f"{n.loc}: NIC element '{n.name}' uses '{state.name}', which lives in host "
                    f"memory (the host uses it too): on the NIC '{attr}' is a host address, "
                    "reachable only with dma_read/dma_write")
    queues = {q.name: _place_queue(ir, q) for q in ir.queues.values()}
    ir.results.add(Homes(frozen_map(homes), frozen_map(queues)))
    return ir


def _dereferences(n: ElementNode, name: str) -> bool:
    """True when the body follows pointer ``name`` itself (``name->f`` or ``name[i]``)."""
    tokens = [t for t in tokenize(n.body_info.body.code)
              if t.kind not in (TokenKind.WS, TokenKind.COMMENT)]
    return any(t.kind == TokenKind.IDENT and t.text == name and after.text in ("->", "[")
               for t, after in zip(tokens, tokens[1:]))


def _place_queue(ir: ProgramIR, q: QueueIR) -> QueueHome:
    enq_devices = {ir.segments[ir.node(e).segment].device
                   for names in q.enqueuers for e in names if e in ir.graph}
    if len(enq_devices) > 1:
        raise q.loc.error(f"queue '{q.name}' is enqueued into from both the CPU and the NIC; "
                          "give each side its own queue")
    enq_device = enq_devices.pop() if enq_devices else Device.CPU
    states = {ir.node(e).packet_state for names in q.enqueuers for e in names if e in ir.graph}
    states.add(ir.node(q.dequeuer).packet_state)
    if len(states) > 1:
        names = ", ".join(sorted(s.name if s else "none" for s in states))
        raise q.loc.error(f"queue '{q.name}' connects flows with different per-packet states "
                          f"({names}); both sides must share one Flow's state")
    deq_device = ir.segments[ir.node(q.dequeuer).segment].device
    home = Home.NIC if enq_device == deq_device == Device.NIC else Home.HOST
    return QueueHome(enq_device, deq_device, home, *_queue_threads(ir, q))


def _queue_threads(ir: ProgramIR, q: QueueIR) -> tuple[bool, bool]:
    """The producer and consumer variants of a queue (multi-producer, multi-consumer), from
    the threads that use it.

    A thread segment with ``n`` threads dequeuing from ``m`` instances gives
    thread ``t`` the instances ``t, t+n, ...``: one consumer per instance. The producers of
    a cut queue spread the same way (`split_auto.queue_shape`): one producer per instance.
    Callable segments may be called from any number of threads.
    """
    segments = {ir.node(e).segment for names in q.enqueuers for e in names if e in ir.graph}
    producers = sum(2 if ir.segments[s].kind == SegmentKind.CALLABLE else len(ir.segments[s].cores)
                    for s in segments)
    consumer = ir.segments[ir.node(q.dequeuer).segment]
    # A cut queue spreads each producer thread over instances of its own (split_auto).
    shared = producers > 1 and not (q.boundary and q.instances % producers == 0)
    if consumer.kind == SegmentKind.THREAD and len(consumer.cores) > q.instances:
        ir.warnings.append(f"{consumer.loc}: segment '{consumer.name}' has {len(consumer.cores)} "
                           f"threads but queue '{q.name}' only {q.instances} instances; "
                           "the extra threads stay idle")
    return (q.enq_atomic if q.enq_atomic is not None else shared,
            q.deq_atomic if q.deq_atomic is not None else consumer.kind == SegmentKind.CALLABLE)
