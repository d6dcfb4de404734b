"""Placement: segments become processes (executables) with threads; NIC cores are counted.

Before: segments naming a ``process`` (default: the program's name; NIC
segments are all in the ``nic`` process).

After: ``ir.processes`` maps each process to its device, thread and callable
segments; exactly one host process holds ``main`` (the one ``floem.main``
or ``floem.external_main`` names, else the default process; with
``external_main`` that process's executable is the user's program); the NIC's threads plus its manager cores
fit the platform (``--nic``), else an error at the segment that overflows; a ``--nic``
other than the default for a program with no NIC segment is a warning::

    seg rx (NIC, 2 cores), inc2 (process=math)  =>  process nic (NIC) [rx], 2 + 1 cores
                                                   process math [inc2] callables, main
"""
from __future__ import annotations

from floem.errors import FloemError
from floem.ir import BuildOptions, Device, ProcessIR, ProgramIR, SegmentKind
from floem.platforms import PLATFORMS

NAME = "placement"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str] = frozenset({"sources", "main_info"})
PROVIDES: frozenset[str] = frozenset({"processes", "main_process"})


def run(ir: ProgramIR) -> ProgramIR:
    """Group segments into processes and choose the main process."""
    asked = ir.main
    default = ir.name
    for seg in ir.segments.values():
        proc = ir.processes.setdefault(seg.process, ProcessIR(seg.process, device=seg.device))
        proc.segments.append(seg.name)
        if seg.kind == SegmentKind.CALLABLE:
            proc.callables.append(seg.name)
    what = "external_main" if asked.external is not None else "main"
    if asked.process is not None and asked.process not in ir.processes:
        raise _main_error(ir, f"{what}(process={asked.process!r}): no segment is in that process "
                              f"(processes: {', '.join(ir.processes) or 'none'})")
    hosts = [p for p in ir.processes.values() if p.device == Device.CPU]
    wanted = asked.process or default
    if asked.process is None and default not in ir.processes and len(hosts) == 1:
        wanted = hosts[0].name
    if ir.processes.get(wanted, ProcessIR(wanted)).device != Device.CPU:
        raise _main_error(ir, f"{what}(...) runs on the host; the NIC process has no main")
    main = ir.processes.setdefault(wanted, ProcessIR(wanted))
    # Threads anywhere (NIC ones included) need the main host process to create the
    # shared memory and wait for the stop signal, even when it runs none of them.
    main.has_main = asked.loc is not None or any(
        s.kind == SegmentKind.THREAD for s in ir.segments.values())
    if asked.external is not None:
        main.external_main = list(asked.external)
    for proc in ir.processes.values():
        if proc is not main and any(ir.segments[s].kind == SegmentKind.THREAD for s in proc.segments):
            proc.has_main = True
    _check_nic_cores(ir)
    if ir.options.nic != BuildOptions.nic and all(p.device != Device.NIC
                                                  for p in ir.processes.values()):
        ir.warnings.append(f"--nic {ir.options.nic}: the program has no NIC segment, so "
                           f"nothing runs on that NIC")
    ir.main_process = wanted
    return ir


def _main_error(ir: ProgramIR, message: str) -> FloemError:
    """An error located at the ``floem.main`` / ``external_main`` call, if there is one."""
    loc = ir.main.loc
    return loc.error(message) if loc is not None else FloemError(message, ir.app_file)


def _check_nic_cores(ir: ProgramIR) -> None:
    """NIC worker threads plus manager cores must fit the platform's cores."""
    platform = ir.options.nic
    limit = PLATFORMS[platform].cores
    used = ir.options.nic_managers
    for seg in ir.segments.values():
        if seg.device != Device.NIC:
            continue
        used += len(seg.cores)
        if used > limit:
            raise seg.loc.error(f"segment '{seg.name}' needs NIC cores beyond the {limit} of "
                                f"--nic {platform} ({used} with {ir.options.nic_managers} "
                                "manager core(s))")
