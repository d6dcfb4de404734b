"""Lowered queues for code generation: what each channel carries, and the C of the
enqueue, dequeue, save and release bodies (templates/queues.c.j2).

An entry of channel ``c`` of queue ``q`` is ``struct q_entry<c>``: the
channel's live fixed-size fields, a ``<f>_len`` for each live variable-size
field, then the variable-size bytes, one field after the other, each starting
at a multiple of 8 bytes from the payload (so a pointer to a struct that is
not packed can point at them).
"""
from __future__ import annotations

from dataclasses import dataclass

from floem.codegen.render import fragment
from floem.ir import Device, ElementNode, FieldLayout, ProgramIR, QueueIR, StateLayout
from floem.ir.plan import QueueSide

DEFAULT_VARIABLE_BYTES = 256
_MACROS = "queues.c.j2"


@dataclass
class Channel:
    """What one channel's entries carry."""

    queue: QueueIR
    index: int
    fixed: list[FieldLayout]
    variable: list[FieldLayout]

    @property
    def struct(self) -> str:
        """The C struct tag of the entry, e.g. ``q1_entry0``."""
        return f"{self.queue.name}_entry{self.index}"

    @property
    def empty(self) -> bool:
        """True when the channel carries no field at all."""
        return not self.fixed and not self.variable

    @property
    def variable_room(self) -> int:
        """Bytes an entry keeps after its fixed part: variable bytes and their alignment."""
        return DEFAULT_VARIABLE_BYTES + 8 * len(self.variable) if self.variable else 0


def channels(ir: ProgramIR, q: QueueIR) -> list[Channel]:
    """The channels of ``q`` with their fields split into fixed and variable-size."""
    state = ir.node(q.dequeuer).packet_state
    by_name = {f.name: f for f in state.fields} if state else {}
    result = []
    for c, names in enumerate(q.fields):
        fields = [by_name[n] for n in names]
        result.append(Channel(q, c, [f for f in fields if not f.size],
                              [f for f in fields if f.size]))
    return result


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
        return Access(table=f"{name}_sync" if self.side.synced else f"{name}_inst",
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
