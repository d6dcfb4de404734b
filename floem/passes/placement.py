"""Placement: segments become processes (executables) with threads.

Before: segments naming a ``process`` (default: the program's name).

After: ``ir.processes`` maps each process to its thread and callable
segments; exactly one process holds ``main`` (the one ``floem.main`` names,
else the default process); a persistent state used from two processes is an
error (sharing state across processes comes with queues)::

    seg rx (process=kvs), inc2 (process=math)  =>  process kvs [rx] main
                                                  process math [inc2] callables
"""
from __future__ import annotations

from floem.ir import ProcessIR, ProgramIR

NAME = "placement"


def run(ir: ProgramIR) -> ProgramIR:
    """Group segments into processes and choose the main process."""
    program = ir.program
    default = program.display_name
    for seg in ir.segments.values():
        proc = ir.processes.setdefault(seg.process, ProcessIR(seg.process))
        proc.segments.append(seg.name)
        if seg.kind == "callable":
            proc.callables.append(seg.name)
    wanted = program.main_process or default
    if program.main_process is None and default not in ir.processes and len(ir.processes) == 1:
        wanted = next(iter(ir.processes))
    main = ir.processes.setdefault(wanted, ProcessIR(wanted))
    main.has_main = program.main_code is not None or any(
        ir.segments[s].kind == "thread" for s in main.segments)
    for proc in ir.processes.values():
        if proc is not main and any(ir.segments[s].kind == "thread" for s in proc.segments):
            proc.has_main = True
    users: dict[str, str] = {}
    for n in ir.nodes():
        process = ir.segments[n.segment].process
        for state in n.persistent.values():
            other = users.setdefault(state.name, process)
            if other != process:
                raise state.loc.error(f"persistent state '{state.name}' is used by processes "
                                      f"'{other}' and '{process}'; share state between "
                                      "processes through queues")
    ir.options["main_process"] = wanted
    return ir
