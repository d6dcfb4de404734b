"""The layout of every queue channel's entries (floem/ir/entries.py), decided once for code
generation, the report and `floem place`'s model to read.

Before: the per-packet fields live across each queue channel (`Liveness`) and, for typed
packets, the window that crosses and how a frame crosses (`Windows`).

After: an `EntryLayouts` result holds one `EntryLayout` per channel of each queue: its
fixed-size fields, the buffer references of frames crossing between devices (a frame's
buffer field is then a reference, not a pointer), its variable-size fields (a frame that
stays by its port is a fixed field: its pointer crosses) with the bytes kept for each, and
the bytes an entry keeps after the struct (examples/nf/firewall.py, the frame sliced)::

    queue firewall_rxq: channels=1 inst=1 size=256 lossless=True ... NIC->CPU in host memory
      channel 0 carries pkt, pkt_len, pkt_buf
        pkt: bytes in use 0-end; window 38; frame leaves, sliced
        entry struct firewall_rxq_entry0: 20 bytes: fixed pkt_len; references pkt_buf;
        variable pkt (2048 bytes), 2056 bytes after the struct

A typed packet keeps its window, or 2048 bytes (a frame buffer's) for a frame that may
cross whole (a sliced frame does when the pool of kept frames is full), or its
``max_size``, or `DEFAULT_VARIABLE_BYTES` for a typed packet that is not a frame; a plain
variable-size field keeps its ``max_size`` (``Field(..., max_size=250)``), and those of a
channel without one share `DEFAULT_VARIABLE_BYTES`; each variable field takes 8 more for
its alignment.
"""
from __future__ import annotations

from floem.ir import (EntryLayout, EntryLayouts, FieldLayout, FrameCrossing, FrameParts,
                      FrameReference, Liveness, PacketBytes, ProgramIR, QueueIR, VariablePart,
                      Windows)
from floem.ir.results import frozen_map
from floem.ir.sizes import field_size

NAME = "plan_entries"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({Liveness, Windows})
PROVIDES: frozenset[str | type] = frozenset({EntryLayouts})

#: Bytes an entry keeps for a channel's plain variable-size fields together (and for a
#: typed packet that is not a frame and crosses whole).
DEFAULT_VARIABLE_BYTES = 256
#: Room for a frame that may cross whole: the largest frame a packet I/O buffer holds.
FRAME_BYTES = 2048
#: The alignment each variable-size field's bytes start at.
ALIGNMENT = 8


def run(ir: ProgramIR) -> ProgramIR:
    """Lay out every queue channel's entries."""
    ir.results.add(EntryLayouts(frozen_map({
        q.name: tuple(_layout(ir, q, c, names)
                      for c, names in enumerate(ir.liveness.carried[q.name]))
        for q in ir.queues.values()})))
    return ir


def _layout(ir: ProgramIR, q: QueueIR, c: int, names: tuple[str, ...]) -> EntryLayout:
    """Channel ``c`` of ``q`` (carrying the fields ``names``) as entries lay it out."""
    state = ir.node(q.dequeuer).packet_state
    by_name = {f.name: f for f in state.fields} if state else {}
    packets = ir.windows.packets[q.name][c]
    crossing = {n: b.crossing for n, b in packets.items() if b.crossing is not None
                and b.crossing != FrameCrossing.STAYS}
    buffers = {_frame(by_name[n]).buffer for n in crossing}
    fixed, variable = [], []
    for f in (by_name[n] for n in names):
        if f.name in buffers:
            continue
        packet = packets.get(f.name)
        if f.size and not (packet is not None and packet.crossing == FrameCrossing.STAYS):
            frame = f.frame if f.name in crossing else None
            variable.append(VariablePart(
                f, packet,
                frame.length if frame and frame.length in names else None,
                frame.buffer if frame and frame.buffer in names else None,
                ir.options.slice_threshold, _room(f, packet)))
        else:
            fixed.append(f)
    kept = {v.name for v in variable if v.keeps}
    references = tuple(FrameReference(_frame(by_name[n]).buffer, n, how, n in kept)
                       for n, how in crossing.items() if _frame(by_name[n]).buffer in names)
    plain = any(v.packet is None and v.field.max_size is None for v in variable)
    room = (DEFAULT_VARIABLE_BYTES * plain + sum(v.room for v in variable)
            + ALIGNMENT * len(variable))
    sizes = [field_size(f) for f in fixed]
    struct = None if None in sizes else \
        sum(s or 0 for s in sizes) + 8 * len(references) + 4 * len(variable)
    return EntryLayout(q.name, c, f"{q.name}_entry{c}", q.entry_size, tuple(fixed),
                       tuple(variable), references, struct, room)


def _room(f: FieldLayout, packet: PacketBytes | None) -> int:
    """Bytes an entry keeps for variable-size field ``f``, a typed packet when ``packet`` is
    given: its window, or its largest size (``max_size``), or for a typed packet crossing
    whole a frame buffer's or `DEFAULT_VARIABLE_BYTES`; 0 for an unbounded plain field,
    which shares the channel's `DEFAULT_VARIABLE_BYTES` with the others."""
    if packet is not None and packet.window is not None and not packet.sliced:
        return packet.window
    if f.max_size is not None:
        return f.max_size
    if packet is None:
        return 0
    return FRAME_BYTES if packet.crossing is not None else DEFAULT_VARIABLE_BYTES


def _frame(f: FieldLayout) -> FrameParts:
    """The parts of frame field ``f`` (a field whose packet crosses as a frame)."""
    assert f.frame is not None
    return f.frame
