"""Which bytes of each typed packet cross each queue, and which frames keep their payload
where they arrived (payload slicing, after NFSlicer; docs/slicing.md).

Before: liveness found the byte ranges each queue channel's typed packets need
(`Liveness` ``packets``); queues know their two devices (`Homes`).

After: a `Windows` result: every ``PacketBytes`` of `Liveness` with its ``window``, the
bytes ``[0, window)`` that cross (None: the whole packet, its size expression), and a frame
its ``crossing``, relative to the device whose process owns the network port (where the
frame's buffer is):

* ``stays``: both ends by the port. The frame stays in its buffer; its pointer, length
  and buffer cross as plain fields (no byte is copied).
* ``leaves``: from the port's device to the other. The window crosses; the frame's
  buffer is kept in the pool of kept frames (``sliced``) or freed.
* ``away``: both ends on the other device: the window and the kept frame's reference.
* ``returns``: back to the port's device: the window is written onto the kept frame
  (spliced), or into a new buffer when the frame crossed whole.

With ``--send-all-fields`` every packet crosses whole and nothing is sliced. Otherwise a
frame is sliced when ``--no-slicing`` is not given, it leaves its port's device and comes
back (some channel returns it), and every element on the other device reaches its
bytes through members only (``state->pkt->ip.ttl``): the window is then the bytes up to
the last one any of them reads or writes, the same for every channel of that frame away
from the port, and on the way back the bytes up to the last one they write (a firewall,
which writes nothing, sends back only the reference); the payload never crosses. At run
time a frame shorter than
``--slice-threshold``, or one that finds the pool full, crosses whole instead, and the
channels that follow carry it whole::

    rx (NIC): StoreFrame -> CheckFrame -> q1      q1 leaves: window 38 (sliced)
    nf (CPU): q1 -> Firewall -> q2                q2 returns: window 0 (sliced)
    tx (NIC): q2 -> LoadFrame -> ToNet
"""
from __future__ import annotations

import dataclasses

from floem.errors import FloemError
from floem.ir import (TO_THE_END, Device, FieldLayout, FrameCrossing, Homes, Liveness,
                      PacketBytes, ProgramIR, QueueIR, Windows)
from floem.ir.results import frozen_map

NAME = "slice_packets"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({Liveness, Homes})
PROVIDES: frozenset[str | type] = frozenset({Windows})


def run(ir: ProgramIR) -> ProgramIR:
    """Set the window of every typed packet a queue carries, and how each frame crosses."""
    ports = {ir.segments[n.segment].device for n in ir.nodes() if n.uses_network}
    every_byte = ir.options.send_all_fields
    crossings = []
    for q in ir.queues.values():
        for c, carried in enumerate(ir.liveness.packets[q.name]):
            for name, bytes_ in carried.items():
                f = _field(ir, q, name)
                crossing = _crossing(ir, q, f, ports) if f.frame is not None else None
                window = None if every_byte else _window(bytes_.ranges)
                crossings.append((q, c, (_state(ir, q), name),
                                  dataclasses.replace(bytes_, window=window, crossing=crossing)))
    sliced = _sliced(ir, crossings, ports)
    packets: dict[str, list[dict[str, PacketBytes]]] = {
        q.name: [{} for _ in range(q.channels)] for q in ir.queues.values()}
    for q, c, key, bytes_ in crossings:
        if key in sliced and bytes_.crossing != FrameCrossing.STAYS:
            used, written = sliced[key]
            window = written if bytes_.crossing == FrameCrossing.RETURNS else used
            bytes_ = dataclasses.replace(bytes_, window=window, sliced=True)
        packets[q.name][c][key[1]] = bytes_
    ir.results.add(Windows(frozen_map({q: tuple(map(frozen_map, channels))
                                       for q, channels in packets.items()})))
    return ir


def _field(ir: ProgramIR, q: QueueIR, name: str) -> FieldLayout:
    """The field ``name`` of the state ``q`` carries, a typed packet."""
    state = ir.node(q.dequeuer).packet_state
    f = state.field(name) if state is not None else None
    assert f is not None                      # it carries the packet
    return f


def _state(ir: ProgramIR, q: QueueIR) -> str:
    state = ir.node(q.dequeuer).packet_state
    assert state is not None                  # it carries a typed packet
    return state.name


def _window(ranges: tuple[tuple[int, int], ...]) -> int | None:
    """Bytes from the packet's start up to the last one in use (None: up to its end)."""
    end = max((hi for _, hi in ranges), default=0)
    return None if end == TO_THE_END else end


def _crossing(ir: ProgramIR, q: QueueIR, f: FieldLayout, ports: set[Device]) -> FrameCrossing:
    home = ir.queue_home(q.name)
    if home.enq_device != home.deq_device and len(ports) > 1:
        raise FloemError(f"queue {q.name} carries frame '{f.name}' between CPU and NIC, but "
                         "both have packet I/O elements: a frame's buffer belongs to one "
                         "device's port, so keep FromNet/ToNet on one side", q.loc.file,
                         q.loc.line)
    port = next(iter(ports), home.enq_device)
    if home.enq_device == port:
        return FrameCrossing.STAYS if home.deq_device == port else FrameCrossing.LEAVES
    return FrameCrossing.RETURNS if home.deq_device == port else FrameCrossing.AWAY


def _sliced(ir: ProgramIR, crossings: list[tuple[QueueIR, int, tuple[str, str], PacketBytes]],
            ports: set[Device]) -> dict[tuple[str, str], tuple[int, int]]:
    """The windows of each frame (state and field) that keeps its payload by the port: it
    leaves, comes back, its buffer crosses with its bytes everywhere (so the other side
    knows a kept frame from a whole one), and every element away from the port touches it
    through bounded members only. Away from the port the window is what those elements
    read or write; back to the port, what they write (the rest of the kept frame is as it
    was). A frame that could be sliced but for such an element is warned about, with the
    element and line."""
    if not ir.options.slicing or ir.options.send_all_fields or len(ports) != 1:
        return {}
    port = next(iter(ports))
    result = {}
    for frame in {key for _, _, key, b in crossings if b.crossing == FrameCrossing.LEAVES}:
        state, name = frame
        mine = [(q, c, b) for q, c, key, b in crossings
                if key == frame and b.crossing != FrameCrossing.STAYS]
        if FrameCrossing.RETURNS not in {b.crossing for _, _, b in mine}:
            continue
        parts = _field(ir, mine[0][0], name).frame
        assert parts is not None                  # the frame crosses
        buffer = parts.buffer
        carried = ir.liveness.carried
        if any(name in carried[q.name][c] and buffer not in carried[q.name][c]
               for q, c, _ in mine):
            continue
        ends, written, blocking = [], [], []
        for n in ir.nodes():
            use = n.info.fields.bytes.get(name) if n.info is not None else None
            if (use is None or n.packet_state is None or n.packet_state.name != state
                    or ir.segments[n.segment].device == port):
                continue
            if use.unbounded is not None:
                body = n.body_info.body
                line = body.app_line + use.unbounded[0] - 1
                blocking.append(f"'{n.name}' (made at {n.loc}) at {body.app_file}:"
                                f"{line}: {use.unbounded[1]}")
            ends += [hi for _, hi in use.reads | use.writes]
            written += [hi for _, hi in use.writes]
        if blocking:
            ir.warnings.append(f"{mine[0][0].loc}: frame {state}.{name} crosses between "
                               f"{port} and {_other(port)} whole, where its payload could stay "
                               f"on the {port}, because " + "; ".join(blocking))
        else:
            result[frame] = (max(ends, default=0), max(written, default=0))
    return result


def _other(device: Device) -> Device:
    return Device.CPU if device == Device.NIC else Device.NIC
