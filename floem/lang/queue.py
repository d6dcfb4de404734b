"""Queues: logical channels between segments, mapped onto physical instances."""
from __future__ import annotations

from typing import Any

from floem.errors import Location
from floem.lang.element import Element, Input, Output, Port, connect
from floem.lang.location import caller_location
from floem.lang.registry import current_registry


class Enqueue(Element):
    """Enqueue side of one queue channel: sends the packet's live fields. A lossy queue's
    enqueue has an output ``full`` that the packet leaves by when its instance is full."""

    def configure(self, queue: Queue, channel: int) -> None:
        self.inp = Input()
        if not queue.lossless:
            self.full = Output()
        self.queue = queue
        self.channel = channel


class Dequeue(Element):
    """Dequeue side of a queue: a source with one output port per channel."""

    def configure(self, queue: Queue) -> None:
        self.queue = queue
        for c in range(queue.channels):
            setattr(self, f"out{c}", Output())


class Queue:
    """``channel`` logical queues carried by ``inst`` physical queues of ``size`` entries.

    ``q.enq[i]`` / ``q.deq[i]`` are channel ``i``'s ends (with one channel,
    ``q.enq`` / ``q.deq`` are the ports and ``a >> q`` / ``q >> b`` work).
    The enqueuer picks the instance from ``state->qid`` (default 0). ``lossless``
    enqueues block when the instance is full; lossy ones drop and count, or, when
    ``q.full`` is connected, go on there (the packet was not enqueued).
    ``enq_atomic`` / ``deq_atomic`` force the multi-producer / multi-consumer
    variants (inferred otherwise); ``entry_size`` fixes the bytes per entry.
    """

    def __init__(self, name: str | None = None, channel: int = 1, inst: int = 1,
                 size: int = 256, lossless: bool = True, enq_atomic: bool | None = None,
                 deq_atomic: bool | None = None, entry_size: int | None = None) -> None:
        self.loc: Location = caller_location()
        self.program = current_registry()
        self.name = self.program.claim_name(name, "queue", self.loc)
        for what, value in (("channel", channel), ("inst", inst), ("size", size)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise self.loc.error(f"Queue {what}= must be a positive integer, not {value!r}")
        if size > 1 << 24:
            raise self.loc.error(f"Queue size={size} is too large (at most {1 << 24} entries)")
        if entry_size is not None and (not isinstance(entry_size, int) or isinstance(
                entry_size, bool) or not (entry_size == 32 or (entry_size > 0 and entry_size % 64 == 0))):
            raise self.loc.error(f"Queue entry_size= must be 32 or a multiple of 64 bytes "
                                 f"(header included), not {entry_size!r}")
        self.channels = channel
        self.instances = inst
        self.size = size
        self.lossless = lossless
        self.enq_atomic = enq_atomic
        self.deq_atomic = deq_atomic
        self.entry_size = entry_size
        self.enqueuers = [Enqueue(name=f"{self.name}_enq{c}", configure=[self, c])
                          for c in range(channel)]
        self.dequeuer = Dequeue(name=f"{self.name}_deq", configure=[self])
        for generated in [f"{self.name}_release"] + [f"{self.name}_save{c}" for c in range(channel)]:
            self.program.claim_name(generated, generated, self.loc)
        for end in self.enqueuers + [self.dequeuer]:
            end.segment = None          # each end joins the segment it is connected in
        self.program.register(self)

    @property
    def enq(self) -> Any:
        """Channel ends to enqueue into: a list, or the port itself with one channel."""
        ports = [e.inp for e in self.enqueuers]
        return ports[0] if self.channels == 1 else ports

    @property
    def deq(self) -> Any:
        """Channel ends to dequeue from: a list, or the port itself with one channel."""
        ports = [getattr(self.dequeuer, f"out{c}") for c in range(self.channels)]
        return ports[0] if self.channels == 1 else ports

    @property
    def full(self) -> Any:
        """Where a lossy queue's packets go when their instance is full (instead of being
        dropped): a port per channel, or the port itself with one channel."""
        if self.lossless:
            raise caller_location().error(
                f"queue '{self.name}' is lossless (its enqueues wait for room): only a "
                "Queue(..., lossless=False) has a full port")
        ports = [e.full for e in self.enqueuers]
        return ports[0] if self.channels == 1 else ports

    @property
    def qid(self) -> Port:
        """Input naming the instance to dequeue from (for callable segments that dequeue)."""
        if "qid" not in self.dequeuer.inputs:
            self.dequeuer.qid = Input("int")
        return self.dequeuer.qid

    def connect_from(self, src: Any, loc: Location) -> Any:
        """``a >> q`` for a one-channel queue."""
        if self.channels != 1:
            raise loc.error(f"queue '{self.name}' has {self.channels} channels: "
                            f"connect to {self.name}.enq[i]")
        return connect(src, self.enqueuers[0].inp, loc)

    def source_port(self, loc: Location) -> Port:
        """``q >> b`` for a one-channel queue."""
        if self.channels != 1:
            raise loc.error(f"queue '{self.name}' has {self.channels} channels: "
                            f"connect from {self.name}.deq[i]")
        return self.dequeuer.out0

    def __rshift__(self, other: Any) -> Any:
        return connect(self, other, caller_location())
