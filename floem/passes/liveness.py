"""Liveness of per-packet state fields, across elements, segments and queue channels.

Each element uses and kills fields (from its pycparser AST). A field is live
after an element when some path from there reads it before overwriting it:

    live_in(e)  = uses(e) | (live_out(e) - kills(e))
    live_out(e) = union of live_in(s) for every successor s

where the successors of a queue channel's enqueue are the elements its
dequeue feeds on that channel (and, for a lossy queue, those its ``full``
port feeds). The fields live where a channel is dequeued are exactly what its
entries must carry.

Before: bodies analysed; queues as enqueue/dequeue elements.

After: a `Liveness` result. ``carried[q][c]`` lists the fields channel ``c`` of queue ``q``
carries (in state layout order; every field with the ``send_all_fields`` option, for
comparison); ``packets[q][c]`` says, for each typed packet field it carries (and each frame
whose buffer it carries), the byte ranges that elements after it read or write (a range to
the packet's end where an access cannot be bounded, with the elements and lines that made
it so); ``uses[s]`` is the set of fields segment ``s``'s elements read; ``read_first[s]``
the fields some path from its source reads before writing (the per-packet state is zeroed
for each packet only when there are such fields); warnings name a field written but never
read afterwards, and a field read on some path where it was never written::

    A (writes key, len) -> q.enq[0] ... q.deq[0] -> B (reads key)
        q channel 0 carries key          warning: len written by A, never read

Bytes of a typed packet (``state->pkt->ip.ttl``) are followed the same way, as byte ranges
in use (read or written: the receiving side needs memory for what it writes too) after
each element; assigning the pointer itself (``state->pkt = ...;``) ends them::

    A (state->pkt = data) -> q -> B (reads pkt->ip.ttl) -> C (writes pkt->eth.dst)
        q channel 0 carries pkt: bytes 0-6, 22-23
"""
from __future__ import annotations

from floem.csrc.model import Range, merge_ranges
from floem.ir import (EdgeKind, ElementNode, Liveness, PacketBytes, Part, ProgramIR, QueueIR, Role,
                      TO_THE_END)
from floem.ir.results import frozen_map

NAME = "liveness"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({"bodies", "sources", "queues", "cache_regions",
                                             "trace_field"})
PROVIDES: frozenset[str | type] = frozenset({Liveness})


def run(ir: ProgramIR) -> ProgramIR:
    """Solve liveness and must-definedness; record queue payloads, uses and warnings."""
    succ = _successors(ir)
    live_in, live_out = _live(ir, succ)
    defined = _must_defined(ir, succ)
    send_all = ir.options.send_all_fields
    carried: dict[str, tuple[tuple[str, ...], ...]] = {}
    packets: dict[str, tuple[dict[str, PacketBytes], ...]] = {}
    for q in ir.queues.values():
        order = _field_order(ir.node(q.dequeuer))
        live = [set().union(*(live_in[e.dst] for e in ir.out_edges(q.dequeuer, f"out{c}")))
                for c in range(q.channels)]
        carried[q.name] = tuple(tuple(f for f in order if send_all or f in live[c])
                                for c in range(q.channels))
        packets[q.name] = tuple(_packet_bytes(ir, succ, q, carried[q.name][c], c)
                                for c in range(q.channels))
        if q.boundary:
            _check_cut_fields(ir, q, carried[q.name])
    segment_uses: dict[str, frozenset[str]] = {}
    for seg in ir.segments.values():
        segment_uses[seg.name] = frozenset().union(*(
            _uses(ir, n, live_out[n.name]) | (live_out[n.name] if n.role == Role.ENQUEUE
                                              else set())
            for n in map(ir.node, seg.elements)))
    read_first = {seg.name: frozenset(live_in.get(seg.source, ())) for seg in ir.segments.values()}
    frozen_packets = {q: tuple(map(frozen_map, ps)) for q, ps in packets.items()}
    ir.results.add(Liveness(frozen_map(carried), frozen_map(frozen_packets),
                            frozen_map(segment_uses), frozen_map(read_first)))
    for n in ir.nodes():
        if n.info is None or n.packet_state is None:
            continue
        f = n.info.fields
        uses = _uses(ir, n, live_out[n.name])
        for field in sorted((f.writes | f.kills) - uses - live_out[n.name]):
            ir.warnings.append(f"{n.loc}: per-packet field {n.packet_state.name}.{field} is "
                               f"written by '{n.name}' but never read afterwards")
        unwritten = uses - f.kills - f.writes - defined[n.name]
        if n.role == Role.ENQUEUE:
            unwritten.discard("qid")          # an unwritten qid is instance 0, by design
        for field in sorted(unwritten):
            ir.warnings.append(f"{n.loc}: per-packet field {n.packet_state.name}.{field} is "
                               f"read by '{n.name}' on a path where it was never written")
    return ir


def _successors(ir: ProgramIR) -> dict[str, list[str]]:
    """Execution successors; an enqueue's are the elements its channel is dequeued into,
    and those its ``full`` port feeds."""
    succ = {n.name: [e.dst for e in ir.out_edges(n.name)]
            + [e.dst for e in ir.out_edges(n.name, kind=EdgeKind.ORDER)] for n in ir.nodes()}
    for q in ir.queues.values():
        for c, names in enumerate(q.enqueuers):
            for enq in names:
                if enq in succ:
                    succ[enq] = [e.dst for e in ir.out_edges(q.dequeuer, f"out{c}")] + succ[enq]
    return succ


def _uses(ir: ProgramIR, n: ElementNode, live_out: set[str]) -> set[str]:
    """Fields ``n`` reads; an enqueue also reads the size expressions of the variable-size
    fields it sends, i.e. of those live after it."""
    uses = set(n.info.fields.uses) if n.info is not None else set()
    if n.role != Role.ENQUEUE or n.packet_state is None:
        return uses
    send_all = ir.options.send_all_fields
    for field, size_uses in ir.size_uses.get(n.packet_state.name, {}).items():
        if send_all or field in live_out:
            uses |= size_uses
    return uses


def _kills(n: ElementNode) -> set[str]:
    return set(n.info.fields.kills) if n.info is not None else set()


def _live(ir: ProgramIR, succ: dict[str, list[str]]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    live_in: dict[str, set[str]] = {n: set() for n in succ}
    live_out: dict[str, set[str]] = {n: set() for n in succ}
    changed = True
    while changed:
        changed = False
        for name in reversed(list(succ)):
            n = ir.node(name)
            out = set().union(*(live_in[s] for s in succ[name]))
            new_in = _uses(ir, n, out) | (out - _kills(n))
            if n.role == Role.DEQUEUE:
                new_in = set()
            if out != live_out[name] or new_in != live_in[name]:
                live_out[name], live_in[name], changed = out, new_in, True
    return live_in, live_out


def _must_defined(ir: ProgramIR, succ: dict[str, list[str]]) -> dict[str, set[str]]:
    """Fields written on every path reaching each element (forward, intersection)."""
    preds: dict[str, list[tuple[str, str]]] = {n: [] for n in succ}
    for name, targets in succ.items():
        if ir.node(name).role == Role.DEQUEUE:
            continue                      # its channels' enqueuers stand in for it
        ports: dict[str, set[str]] = {}
        for e in ir.out_edges(name, kind=None):
            ports.setdefault(e.dst, set()).add(e.in_port)
        for t in targets:
            preds[t].append((name, next(iter(sorted(ports.get(t, ()))), "")))
    everything = {f.name for n in ir.nodes() if n.packet_state for f in n.packet_state.fields}
    defined_in = {n: (set() if not preds[n] else set(everything)) for n in succ}
    changed = True
    while changed:
        changed = False
        for name in succ:
            if not preds[name]:
                continue
            by_port: dict[str, set[str]] = {}
            for p, port in preds[name]:
                node = ir.node(p)
                written = node.info.fields.writes | node.info.fields.kills if node.info else set()
                reached = defined_in[p] | written
                by_port[port] = by_port[port] & reached if port in by_port else reached
            # A join runs once all its inputs arrived: what any input defines is defined.
            new = set().union(*by_port.values()) if ir.node(name).join \
                else set.intersection(*by_port.values())
            if new != defined_in[name]:
                defined_in[name], changed = new, True
    return defined_in


def _byte_uses(n: ElementNode, field: str) -> list[Range]:
    """The bytes of typed packet ``field`` that ``n`` reads or writes."""
    use = n.info.fields.bytes.get(field) if n.info is not None else None
    if use is None:
        return []
    if use.unbounded is not None:
        return [(0, TO_THE_END)]
    return merge_ranges(use.reads | use.writes)


def _packet_bytes(ir: ProgramIR, succ: dict[str, list[str]], q: QueueIR,
                  carried: tuple[str, ...], c: int) -> dict[str, PacketBytes]:
    """The bytes of each typed packet field channel ``c`` of ``q`` carries (with the fields
    ``carried``) that the elements after it use: found forward from the dequeue, up to where
    the field's pointer is set again."""
    state = ir.node(q.dequeuer).packet_state
    if state is None:
        return {}
    result = {}
    for f in state.fields:
        buffer = f.frame.buffer if f.frame is not None else None
        if not f.typed_packet or (f.name not in carried and buffer not in carried):
            continue
        ranges: list[Range] = []
        causes: list[str] = []
        start = [e.dst for e in ir.out_edges(q.dequeuer, f"out{c}")]
        seen = set(start)
        while start:
            name = start.pop()
            n = ir.node(name)
            ranges += _byte_uses(n, f.name)
            use = n.info.fields.bytes.get(f.name) if n.info is not None else None
            if use is not None and use.unbounded is not None:
                body = n.body_info.body
                line = body.app_line + use.unbounded[0] - 1
                causes.append(f"'{n.name}' (made at {n.loc}), {body.app_file}:{line}: "
                              f"{use.unbounded[1]}")
            if f.name in _kills(n):
                continue
            for s in succ[name]:
                if s not in seen:
                    seen.add(s)
                    start.append(s)
        result[f.name] = PacketBytes(tuple(merge_ranges(ranges)), tuple(sorted(set(causes))))
    return result


def _check_cut_fields(ir: ProgramIR, q: QueueIR, carried: tuple[tuple[str, ...], ...]) -> None:
    """A queue a cut made (``split_auto``) carries a plain pointer field only past elements
    that do not read it: a pointer into the memory of one side may cross the other and come
    back (a handle the NIC gets again), but never be read there. A frame or typed packet
    crosses as its bytes."""
    state = ir.node(q.dequeuer).packet_state
    if state is None:
        return
    framed = {name for f in state.fields if f.frame is not None
              for name in (f.frame.length, f.frame.buffer)}
    sender = ir.segments[ir.node(q.enqueuers[0][0]).segment].elements
    receiver = ir.segments[ir.node(q.dequeuer).segment].elements
    for names in carried:
        for name in names:
            f = state.field(name)
            if f is None or not f.type.pointer or f.size is not None or name in framed:
                continue
            made_here = q.boundary == Part.RX or any(_writes(ir.node(n), name) for n in sender)
            reader = next((n for n in receiver if (info := ir.node(n).info) is not None
                           and name in info.fields.uses), None)
            if made_here and reader is not None:
                raise q.loc.error(f"the cut's queue '{q.name}' would carry per-packet field "
                                  f"{state.name}.{name}, a pointer into the memory of the side "
                                  f"it leaves, to '{reader}', which reads it (a Frame field "
                                  "crosses as its bytes)")


def _writes(n: ElementNode, field: str) -> bool:
    return n.info is not None and field in (n.info.fields.writes | n.info.fields.kills)


def _field_order(n: ElementNode) -> list[str]:
    return [f.name for f in n.packet_state.fields] if n.packet_state else []
