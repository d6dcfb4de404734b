"""Lowered queues for code generation: how a process reaches each queue and what the
templates/queues.c.j2 macros write a channel's entry struct and the enqueue, dequeue, save
and release statements from (the entry layouts ``plan_entries`` decided:
floem/ir/entries.py says what an entry holds).
"""
from __future__ import annotations

from dataclasses import dataclass

from floem.ir import Device, ElementNode, ElementPlan, EntryLayout, QueueHome, QueueIR
from floem.ir.cnames import c_global
from floem.ir.plan import QueueLayout, QueueSide


def carries_packets(entries: tuple[EntryLayout, ...]) -> bool:
    """True when some channel carries a typed packet or a frame's reference."""
    return any(e.carries_packets for e in entries)


@dataclass(frozen=True)
class Access:
    """How one side of a process reaches a queue's instances.

    ``synced``: a NIC end of a host-resident queue, through the synchronization
    layer (entries in wire byte order); otherwise the queue runtime directly.
    ``manage``: call the sync manager inline while waiting (no manager cores).
    ``table``: the C array of the queue's instance handles. ``multi_producer`` and
    ``multi_consumer``: the atomic variants of reserving and acquiring entries. ``ring``:
    the instances have the ring layout (one producer and one consumer, host threads).
    """

    table: str
    ring: bool = False
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
    layout: QueueLayout

    @property
    def access(self) -> Access:
        """How the process's queue elements reach the instances."""
        name = self.queue.name
        return Access(table=c_global("queue", name, "sync" if self.side.synced else "inst"),
                      ring=self.layout == QueueLayout.RING, synced=self.side.synced, manage=self.side.manage_inline,
                      multi_producer=self.home.multi_producer,
                      multi_consumer=self.home.multi_consumer)

    @property
    def ring(self) -> bool:
        """True when the instances have the ring layout."""
        return self.layout == QueueLayout.RING

    @property
    def to_host(self) -> bool:
        """True when the NIC enqueues (the sync layer's direction)."""
        return self.home.enq_device == Device.NIC


@dataclass(frozen=True)
class QueueEnd:
    """A queue element as templates/queues.c.j2 writes its statements: an enqueue (of
    ``channel``), a dequeue (by ``threads`` threads), a save (of ``channel``) or a release.
    ``publishes``: its segment enqueues into ring queues (entries it publishes before it
    waits for room)."""

    node: ElementNode
    plan: ElementPlan
    queue: QueueIR
    channel: EntryLayout | None
    threads: int
    access: Access
    publishes: bool = False
