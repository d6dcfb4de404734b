"""The ``--report`` text: segments, devices, cores, per-packet state and what each segment uses."""
from __future__ import annotations

from floem.ir import TO_THE_END, FrameCrossing, PacketBytes, ProgramIR, QueueIR, VariablePart
from floem.ir.sizes import entry_size, state_size


def report(ir: ProgramIR) -> str:
    """A human-readable summary of the compiled program."""
    lines = [f"program {ir.name}", "", "segments:"]
    for seg in ir.segments.values():
        lines.append(f"  {seg.name}: {seg.kind}, device {seg.device}, cores {seg.cores}, "
                     f"process {seg.process}, source {seg.source}")
        if seg.packet_state is not None:
            uses = ", ".join(sorted(ir.liveness.uses[seg.name])) or "(none)"
            lines.append(f"    per-packet state {seg.packet_state.name}: uses {uses}")
    lines += ["", "processes:"]
    for proc in ir.processes.values():
        lines.append(f"  {proc.name}: segments {', '.join(proc.segments) or '(none)'}"
                     + ("; main" if proc.has_main else "")
                     + (f"; callable {', '.join(proc.callables)}" if proc.callables else ""))
    lines += ["", "queues:" + ("" if ir.queues else " (none)")]
    for q in ir.queues.values():
        lines += _queue(ir, q)
    if ir.caches:
        lines += ["", "caches:"]
    for c in ir.caches.values():
        key = f"{c.key} ({c.keylen} bytes)" if c.keylen else c.key
        val = f"{c.val} ({c.vallen} bytes)" if c.vallen else c.val
        lines.append(f"  {c.name}: {key} -> {val}, {c.buckets} buckets of "
                     f"{c.entries or 'unbounded'} entries, {c.policy.replace('_', '-')}, "
                     f"{c.write_miss.replace('_', '-')}")
        lines.append(f"    get region: {', '.join(c.get_region) or '(none)'}")
        lines.append(f"    set region: {', '.join(c.set_region) or '(none)'}")
        if c.steer_instances:
            lines.append(f"    misses and evictions steered by key over {c.steer_instances} "
                         "queue instances")
    if ir.warnings:
        lines += ["", "warnings:"] + [f"  {w}" for w in ir.warnings]
    return "\n".join(lines) + "\n"


def _queue(ir: ProgramIR, q: QueueIR) -> list[str]:
    state = ir.node(q.dequeuer).packet_state
    whole = state_size(state) if state else 0
    home = ir.queue_home(q.name)
    variant = f"{'multi' if home.multi_producer else 'single'}-producer, " \
              f"{'multi' if home.multi_consumer else 'single'}-consumer"
    lines = [f"  {q.name}: {q.channels} channel(s) on {q.instances} instance(s) of {q.size} "
             f"entries, {'lossless' if q.lossless else 'lossy'}, {variant}"]
    payloads = []
    entries = ir.entry_layouts.entries[q.name]
    for ch in entries:
        fixed = ch.fixed_bytes
        payloads.append(fixed)
        sent = ", ".join([f.name for f in ch.fixed] + [_variable(v) for v in ch.variable]
                         + [f"{r.name} (reference)" for r in ch.references])
        room = ch.variable_room - 8 * len(ch.variable)
        if q.entry_size and fixed is not None:
            room = q.entry_size - 8 - fixed - 7 * len(ch.variable)
        extra = f" + up to {room} variable" if ch.variable else ""
        lines.append(f"    channel {ch.index}: sends {sent or '(nothing)'}: "
                     f"{_bytes(fixed)}{extra} bytes of {_bytes(whole)} per-packet state bytes")
        lines += [f"      {v.name}: {line}" for v in ch.variable if v.packet is not None
                  for line in packet_lines(v.packet, v.threshold)]
    if q.entry_size:
        lines.append(f"    entry: {q.entry_size} bytes (fixed by entry_size=)")
    elif None not in payloads:
        known = [p for p in payloads if p is not None]
        largest = max(p + ch.variable_room for p, ch in zip(known, entries))
        lines.append(f"    entry: {entry_size(largest)} bytes (8-byte header, rounded)")
    return lines


def _variable(v: VariablePart) -> str:
    if v.packet is None:
        return f"{v.name} (variable)"
    window = "whole" if v.packet.window is None else f"bytes 0-{v.packet.window}"
    return f"{v.name} ({window})"


def packet_lines(packet: PacketBytes, threshold: int) -> list[str]:
    """What of a typed packet crosses a channel, and why: the byte ranges in use after it,
    the window, whether the payload stays by the port, or what made every byte cross."""
    used = ", ".join(f"{lo}-{'end' if hi == TO_THE_END else hi}" for lo, hi in packet.ranges)
    head = f"the frame {_CROSSINGS[packet.crossing]}; " if packet.crossing is not None else ""
    if packet.window is None:
        return ([f"{head}every byte crosses (in use after it: {used or 'none'}), because:"]
                + [f"  {cause}" for cause in packet.causes])
    if packet.sliced:
        shorter = f"frames under {threshold} bytes, and " if threshold else ""
        return [f"{head}bytes 0-{packet.window} cross, the rest stays where the frame arrived "
                f"(sliced: away from its port, elements use bytes 0-{packet.window}); "
                f"{shorter}any frame the pool cannot keep crosses whole"]
    return [f"{head}bytes 0-{packet.window} cross (in use after it: {used or 'none'})"]


_CROSSINGS = {
    FrameCrossing.STAYS: "stays in its buffer (only its pointer crosses)",
    FrameCrossing.LEAVES: "leaves its port's device",
    FrameCrossing.AWAY: "is away from its port's device",
    FrameCrossing.RETURNS: "returns to its port's device",
}


def _bytes(n: int | None) -> str:
    return "?" if n is None else str(n)
