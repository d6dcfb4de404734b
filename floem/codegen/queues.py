"""Lowered queues for code generation: the C of each channel's entry struct and of the
enqueue, dequeue, save and release bodies (templates/queues.c.j2), from the entry layouts
``plan_entries`` decided (floem/ir/entries.py says what an entry holds).
"""
from __future__ import annotations

from dataclasses import dataclass

from floem.codegen.render import fragment
from floem.ir import (Device, ElementNode, ElementPlan, EntryLayout, QueueHome, QueueIR,
                      StateLayout)
from floem.ir.cnames import c_global
from floem.ir.plan import QueueSide

_MACROS = "queues.c.j2"


def carries_packets(entries: tuple[EntryLayout, ...]) -> bool:
    """True when some channel carries a typed packet or a frame's reference."""
    return any(e.carries_packets for e in entries)


def entry_structs(chans: tuple[EntryLayout, ...]) -> list[str]:
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
    ``table``: the C array of the queue's instance handles. ``multi_producer`` and
    ``multi_consumer``: the atomic variants of reserving and acquiring entries.
    """

    table: str
    synced: bool = False
    manage: bool = False
    multi_producer: bool = False
    multi_consumer: bool = False

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
    channels: tuple[EntryLayout, ...]
    side: QueueSide
    home: QueueHome
    sync_batch: int             # entries the sync layer moves at once

    @property
    def access(self) -> Access:
        """How the process's queue elements reach the instances."""
        name = self.queue.name
        return Access(table=c_global("queue", name, "sync" if self.side.synced else "inst"),
                      synced=self.side.synced, manage=self.side.manage_inline,
                      multi_producer=self.home.multi_producer,
                      multi_consumer=self.home.multi_consumer)

    @property
    def to_host(self) -> bool:
        """True when the NIC enqueues (the sync layer's direction)."""
        return self.home.enq_device == Device.NIC


def enqueue_body(n: ElementNode, plan: ElementPlan, q: QueueIR, ch: EntryLayout,
                 access: Access) -> list[str]:
    """Statements of an enqueue element: pick the instance, reserve, copy live fields, commit.
    A lossy queue whose full port is connected sends the packet there when its instance
    is full, instead of dropping and counting it."""
    return fragment(_MACROS, "enqueue", n, plan, q, ch, access)


def dequeue_body(n: ElementNode, plan: ElementPlan, q: QueueIR, threads: int,
                 access: Access) -> list[str]:
    """Statements of a dequeue: take the oldest entry of this thread's (or qid's) instance."""
    return fragment(_MACROS, "dequeue", n, plan, q, threads, access)


def save_body(n: ElementNode, plan: ElementPlan, ch: EntryLayout, access: Access) -> list[str]:
    """Statements of a save: fill the per-packet state from the held entry, go on."""
    return fragment(_MACROS, "save", n, plan, ch, access)


def release_body(q: QueueIR, access: Access) -> list[str]:
    """Statements of a release: hand the held entry back to the producer."""
    return fragment(_MACROS, "release", q, access)


def wire_function(state: StateLayout) -> str:
    """``floem_wire_<S>(S *s)``: convert a state between NIC and wire byte order, in place.

    NIC code reading host-resident state with ``dma_read`` calls it after the
    read and before ``dma_write``; on a little-endian NIC it does nothing.
    """
    return "\n".join(fragment(_MACROS, "wire_function", state))
