"""The ``--report`` text: segments, devices, cores, per-packet state and what each segment uses."""
from __future__ import annotations

from floem.ir import ProgramIR


def report(ir: ProgramIR) -> str:
    """A human-readable summary of the compiled program."""
    lines = [f"program {ir.program.display_name}", "", "segments:"]
    for seg in ir.segments.values():
        lines.append(f"  {seg.name}: {seg.kind}, device {seg.device}, cores {seg.cores}, "
                     f"process {seg.process}, source {seg.source}")
        if seg.state_class is not None:
            uses = ", ".join(sorted(seg.uses)) or "(none)"
            lines.append(f"    per-packet state {seg.state_class.__name__}: uses {uses}")
    lines += ["", "processes:"]
    for proc in ir.processes.values():
        lines.append(f"  {proc.name}: segments {', '.join(proc.segments) or '(none)'}"
                     + ("; main" if proc.has_main else "")
                     + (f"; callable {', '.join(proc.callables)}" if proc.callables else ""))
    lines += ["", "queues: (none)"]
    if ir.warnings:
        lines += ["", "warnings:"] + [f"  {w}" for w in ir.warnings]
    return "\n".join(lines) + "\n"
