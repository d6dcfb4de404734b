"""What crosses a queue: the bytes of typed packets a channel carries (``liveness``,
``slice_packets``) and the layout of each channel's entries (``plan_entries``).

An entry of channel ``c`` of queue ``q`` is ``struct q_entry<c>``: the channel's live
fixed-size fields, a 64-bit reference for each frame buffer crossing between devices, a
``<f>__len`` for each live variable-size field, then the variable-size bytes, one field
after the other, each starting at a multiple of 8 bytes from the payload (so a pointer to a
struct that is not packed can point at them). A typed packet is variable-size too, its
bytes the window ``slice_packets`` chose; a frame that stays by its port crosses as a
pointer (a fixed field).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from floem.ir.state import FieldLayout

class FrameCrossing(StrEnum):
    """How a frame crosses a queue channel (``slice_packets``), by where its ends are
    relative to the process owning the network port (the frame's buffer is there)."""

    STAYS = "stays"         # both ends by the port: pointer, length and buffer cross
    LEAVES = "leaves"       # away from the port: bytes cross; the frame is kept there or freed
    RETURNS = "returns"     # back to the port: bytes go onto the kept frame, or a new buffer
    AWAY = "away"           # both ends away from the port: bytes and the reference cross


#: The end of a byte range that runs to the end of a typed packet (its size expression).
TO_THE_END = 1 << 40


@dataclass(frozen=True)
class PacketBytes:
    """What a queue channel carries of one typed packet field: the byte ranges live after
    it (``liveness``; a range ending at `TO_THE_END` runs to the packet's end, and
    ``causes`` say which accesses made it so), then (``slice_packets``) the window that
    crosses, bytes ``[0, window)`` (None: the whole packet), for a frame how it crosses, and
    whether its payload stays by the port (``sliced``: the window is then the header part
    the other side uses, and a frame that crossed whole crosses whole again)."""

    ranges: tuple[tuple[int, int], ...]
    causes: tuple[str, ...] = ()
    window: int | None = None
    crossing: FrameCrossing | None = None
    sliced: bool = False

    @property
    def whole(self) -> bool:
        """True when some byte range runs to the packet's end."""
        return any(hi == TO_THE_END for _, hi in self.ranges)

    def describe(self) -> str:
        """One line for the IR dump: the bytes in use, then what crosses and how."""
        used = ", ".join(f"{lo}-{'end' if hi == TO_THE_END else hi}" for lo, hi in self.ranges)
        text = f"bytes in use {used or '(none)'}"
        if self.window is not None or self.crossing is not None:
            text += f"; window {'whole' if self.window is None else self.window}"
        if self.crossing is not None:
            text += f"; frame {self.crossing}{', sliced' if self.sliced else ''}"
        return text


@dataclass(frozen=True)
class VariablePart:
    """A variable-size field a channel carries; for a typed packet, what of it crosses
    (``packet``) and the bytes the entry keeps for it (``room``: 0 for a plain field, whose
    bytes share the entry's `EntryLayout.variable_room`)."""

    field: FieldLayout
    packet: PacketBytes | None
    length: str | None                  # a frame's length field, when the channel carries it
    buffer: str | None                  # a frame's buffer field, when the channel carries it
    threshold: int                      # frames shorter than this are not kept
    room: int

    @property
    def name(self) -> str:
        """The field's name."""
        return self.field.name

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

    def describe(self) -> str:
        """The field, and the bytes kept for it."""
        return f"{self.name} ({self.room} bytes)" if self.room else self.name


@dataclass(frozen=True)
class FrameReference:
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


@dataclass(frozen=True)
class EntryLayout:
    """What one channel's entries carry: the struct (its fixed-size fields, a 64-bit
    reference for each frame buffer, a 32-bit length for each variable-size field:
    ``fixed_bytes``), then the variable-size bytes (``variable_room``: each typed packet's
    room, the plain variable-size fields' shared room, and 8 bytes of alignment a field)."""

    queue: str
    index: int
    struct: str                         # the C struct tag of the entry, e.g. ``q1_entry0``
    entry_size: int | None              # the queue's declared entry size (None: as needed)
    fixed: tuple[FieldLayout, ...]
    variable: tuple[VariablePart, ...]
    references: tuple[FrameReference, ...]
    fixed_bytes: int | None             # the struct's bytes (None: a field of unknown size)
    variable_room: int

    @property
    def empty(self) -> bool:
        """True when the channel carries no field at all."""
        return not self.fixed and not self.variable and not self.references

    @property
    def carries_packets(self) -> bool:
        """True when the channel carries a typed packet or a frame's reference."""
        return bool(self.references) or any(v.packet is not None for v in self.variable)

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

    def describe(self) -> str:
        """One line for the IR dump."""
        size = "?" if self.fixed_bytes is None else self.fixed_bytes
        parts = [f"{size} bytes" + (f": fixed {', '.join(f.name for f in self.fixed)}"
                                    if self.fixed else ""),
                 f"references {', '.join(r.name for r in self.references)}"
                 if self.references else "",
                 f"variable {', '.join(v.describe() for v in self.variable)}, "
                 f"{self.variable_room} bytes after the struct" if self.variable else ""]
        return f"entry struct {self.struct}: {'; '.join(p for p in parts if p)}"
