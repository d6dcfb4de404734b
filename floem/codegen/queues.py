"""Lowered queues for code generation: what each channel carries, and the C of the
enqueue, dequeue, save and release bodies (templates/queues.c.j2).

An entry of channel ``c`` of queue ``q`` is ``struct q_entry<c>``: the
channel's live fixed-size fields, a ``<f>__len`` for each live variable-size
field, then the variable-size bytes, one field after the other, each starting
at a multiple of 8 bytes from the payload (so a pointer to a struct that is
not packed can point at them). A typed packet is variable-size too, its bytes the
window ``slice_packets`` chose; a frame that stays by its port crosses as a pointer (a
fixed field), and the buffer of a frame crossing between devices as a 64-bit reference
to the frame kept by the port (0: none).
"""
from __future__ import annotations

from dataclasses import dataclass

from floem.codegen.render import fragment
from floem.ir import (Device, ElementNode, FieldLayout, FrameCrossing, FrameParts, PacketBytes,
                      ProgramIR, QueueIR, StateLayout)
from floem.ir.cnames import c_global
from floem.ir.plan import QueueSide

DEFAULT_VARIABLE_BYTES = 256
#: Room for a frame that may cross whole: the largest frame a packet I/O buffer holds.
FRAME_BYTES = 2048
_MACROS = "queues.c.j2"


@dataclass(frozen=True)
class Variable:
    """A variable-size field a channel carries; for a typed packet, what of it crosses."""

    field: FieldLayout
    packet: PacketBytes | None = None
    length: str | None = None           # a frame's length field, when the channel carries it
    buffer: str | None = None           # a frame's buffer field, when the channel carries it
    threshold: int = 0                  # frames shorter than this are not kept

    @property
    def name(self) -> str:
        """The field's name."""
        return self.field.name

    @property
    def frame(self) -> bool:
        """True for a frame crossing between devices (its buffer needs handling)."""
        return self.packet is not None and self.packet.crossing is not None

    @property
    def room(self) -> int:
        """Bytes an entry keeps for a typed packet's bytes (plain variable-size fields share
        `DEFAULT_VARIABLE_BYTES`)."""
        assert self.packet is not None
        if self.packet.window is not None and not self.packet.sliced:
            return self.packet.window
        return FRAME_BYTES if self.frame else DEFAULT_VARIABLE_BYTES

    @property
    def keeps(self) -> bool:
        """An enqueue that may keep the frame by its port (sliced, leaving, buffer carried)."""
        return (self.packet is not None and self.packet.sliced and self.buffer is not None
                and self.packet.crossing == FrameCrossing.LEAVES)

    @property
    def leaves(self) -> bool:
        """An enqueue by the frame's port sending it to the other device (its buffer is then
        kept or given back)."""
        return self.packet is not None and self.packet.crossing == FrameCrossing.LEAVES

    @property
    def splices(self) -> bool:
        """A save by the port that puts the frame back into a buffer (its buffer carried)."""
        return (self.packet is not None and self.packet.crossing == FrameCrossing.RETURNS
                and self.buffer is not None)


@dataclass(frozen=True)
class Reference:
    """The buffer field of a frame crossing between devices: in the entry, the 64-bit
    reference of the frame kept by its port, or 0."""

    name: str                           # the buffer field
    frame: str                          # the frame field
    crossing: FrameCrossing
    kept: bool                          # the enqueue may keep the frame (``<frame>__ref``)

    @property
    def leaves(self) -> bool:
        """Sent away from the port by this channel: kept there, or given back."""
        return self.crossing == FrameCrossing.LEAVES


@dataclass
class Channel:
    """What one channel's entries carry."""

    queue: QueueIR
    index: int
    fixed: list[FieldLayout]
    variable: list[Variable]
    references: list[Reference]

    @property
    def struct(self) -> str:
        """The C struct tag of the entry, e.g. ``q1_entry0``."""
        return f"{self.queue.name}_entry{self.index}"

    @property
    def empty(self) -> bool:
        """True when the channel carries no field at all."""
        return not self.fixed and not self.variable and not self.references

    @property
    def leaving(self) -> list[tuple[str, str, bool]]:
        """(frame, its buffer field, whether the enqueue may keep it) for each frame this
        channel sends away from its port: once its bytes are in the entry, its buffer is
        kept or goes back to the network."""
        with_bytes = [(v.name, v.field.frame.buffer, v.keeps) for v in self.variable
                      if v.leaves and v.field.frame is not None]
        alone = [(r.frame, r.name, False) for r in self.references
                 if r.leaves and r.frame not in {v.name for v in self.variable}]
        return with_bytes + alone

    @property
    def dropped_buffers(self) -> list[str]:
        """The buffer fields to give back (``floem_frame_drop``) when a packet is dropped
        instead of crossing: the frames leaving their port, and references held away from it."""
        return ([buffer for _, buffer, _ in self.leaving]
                + [r.name for r in self.references if not r.leaves])

    @property
    def variable_room(self) -> int:
        """Bytes an entry keeps after its fixed part: variable bytes and their alignment
        (the plain variable-size fields share `DEFAULT_VARIABLE_BYTES`)."""
        plain = any(v.packet is None for v in self.variable)
        return (DEFAULT_VARIABLE_BYTES * plain + sum(v.room for v in self.variable if v.packet)
                + 8 * len(self.variable))


def _frame(f: FieldLayout) -> FrameParts:
    """The parts of frame field ``f`` (a field whose packet crosses as a frame)."""
    assert f.frame is not None
    return f.frame


def channels(ir: ProgramIR, q: QueueIR) -> list[Channel]:
    """The channels of ``q`` with their fields split into fixed and variable-size."""
    state = ir.node(q.dequeuer).packet_state
    by_name = {f.name: f for f in state.fields} if state else {}
    result = []
    for c, names in enumerate(q.fields):
        packets = q.packets[c] if c < len(q.packets) else {}
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
                variable.append(Variable(
                    f, packet,
                    frame.length if frame and frame.length in names else None,
                    frame.buffer if frame and frame.buffer in names else None,
                    ir.options.slice_threshold))
            else:
                fixed.append(f)
        kept = {v.name for v in variable if v.keeps}
        references = [Reference(_frame(by_name[n]).buffer, n, how, n in kept)
                      for n, how in crossing.items() if _frame(by_name[n]).buffer in names]
        result.append(Channel(q, c, fixed, variable, references))
    return result


def carries_packets(chans: list[Channel]) -> bool:
    """True when some channel carries a typed packet or a frame's reference."""
    return any(ch.references or any(v.packet is not None for v in ch.variable) for ch in chans)


def entry_structs(chans: list[Channel]) -> list[str]:
    """C definitions of the entry structs of the channels that carry something.

    With a fixed ``entry_size``, a static assertion checks each struct fits.
    """
    return ["\n".join(fragment(_MACROS, "entry_struct", ch)) for ch in chans if not ch.empty]


@dataclass(frozen=True)
class Access:
    """How one side of a process reaches a queue's instances.

    ``synced``: a NIC end of a host-resident queue, through the synchronization
    layer (entries in wire byte order); otherwise the queue runtime directly.
    ``manage``: call the sync manager inline while waiting (no manager cores).
    ``table``: the C array of the queue's instance handles.
    """

    table: str
    synced: bool = False
    manage: bool = False

    @property
    def handle(self) -> str:
        """C type of an instance handle."""
        return "floem_sync_t" if self.synced else "floem_queue_t"


#: The side of a process that only holds a queue in its memory.
HOLDS = QueueSide(synced=False, manage_inline=False, enqueues=False, dequeues=False,
                  counts=False, shared_shadow=False)


@dataclass(frozen=True)
class QueueView:
    """A queue as one process lays it out and reaches it (templates/process.c.j2)."""

    queue: QueueIR
    channels: list[Channel]
    side: QueueSide

    @property
    def access(self) -> Access:
        """How the process's queue elements reach the instances."""
        name = self.queue.name
        return Access(table=c_global("queue", name, "sync" if self.side.synced else "inst"),
                      synced=self.side.synced, manage=self.side.manage_inline)

    @property
    def to_host(self) -> bool:
        """True when the NIC enqueues (the sync layer's direction)."""
        return self.queue.enq_device == Device.NIC


def enqueue_body(n: ElementNode, ch: Channel, access: Access) -> list[str]:
    """Statements of an enqueue element: pick the instance, reserve, copy live fields, commit.
    A lossy queue whose full port is connected sends the packet there when its instance
    is full, instead of dropping and counting it."""
    return fragment(_MACROS, "enqueue", n, ch, access)


def dequeue_body(n: ElementNode, q: QueueIR, threads: int, access: Access) -> list[str]:
    """Statements of a dequeue: take the oldest entry of this thread's (or qid's) instance."""
    return fragment(_MACROS, "dequeue", n, q, threads, access)


def save_body(n: ElementNode, ch: Channel, access: Access) -> list[str]:
    """Statements of a save: fill the per-packet state from the held entry, go on."""
    return fragment(_MACROS, "save", n, ch, access)


def release_body(q: QueueIR, access: Access) -> list[str]:
    """Statements of a release: hand the held entry back to the producer."""
    return fragment(_MACROS, "release", q, access)


def wire_function(state: StateLayout) -> str:
    """``floem_wire_<S>(S *s)``: convert a state between NIC and wire byte order, in place.

    NIC code reading host-resident state with ``dma_read`` calls it after the
    read and before ``dma_write``; on a little-endian NIC it does nothing.
    """
    return "\n".join(fragment(_MACROS, "wire_function", state))
