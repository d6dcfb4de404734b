"""Placement: segments become processes (executables) with threads; NIC cores are counted.

Before: segments naming a ``process`` (default: the program's name; NIC
segments are all in the ``nic`` process).

After: a `Placement` result: ``processes`` maps each process to its device, thread and
callable segments; exactly one host process holds ``main`` (the one ``floem.main``
or ``floem.external_main`` names, else the default process; with
``external_main`` that process's executable is the user's program); the NIC's threads plus its manager cores
(when a queue joins the NIC and the CPU, which the sync layer's managers keep: otherwise
they have nothing to do and do not run) fit the platform (``--nic``), else an error at
the segment that overflows; a ``--nic``
other than the default for a program with no NIC segment is a warning::

    seg rx (NIC, 2 cores), inc2 (process=math)  =>  process nic (NIC) [rx], 2 + 1 cores
                                                   process math [inc2] callables, main
"""
from __future__ import annotations

from floem.errors import FloemError
from floem.ir import BuildOptions, Device, Placement, ProcessIR, ProgramIR, SegmentKind
from floem.ir.results import frozen_map
from floem.platforms import PLATFORMS

NAME = "placement"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({"sources", "main_info"})
PROVIDES: frozenset[str | type] = frozenset({Placement})


def run(ir: ProgramIR) -> ProgramIR:
    """Group segments into processes and choose the main process."""
    asked = ir.main
    default = ir.name
    devices: dict[str, Device] = {}
    for seg in ir.segments.values():
        devices.setdefault(seg.process, seg.device)
    what = "external_main" if asked.external is not None else "main"
    if asked.process is not None and asked.process not in devices:
        raise _main_error(ir, f"{what}(process={asked.process!r}): no segment is in that process "
                              f"(processes: {', '.join(devices) or 'none'})")
    hosts = [name for name, device in devices.items() if device == Device.CPU]
    wanted = asked.process or default
    if asked.process is None and default not in devices and len(hosts) == 1:
        wanted = hosts[0]
    if devices.setdefault(wanted, Device.CPU) != Device.CPU:
        raise _main_error(ir, f"{what}(...) runs on the host; the NIC process has no main")
    processes = {name: _process(ir, name, device, wanted) for name, device in devices.items()}
    _check_nic_cores(ir)
    if ir.options.nic != BuildOptions.nic and Device.NIC not in devices.values():
        ir.warnings.append(f"--nic {ir.options.nic}: the program has no NIC segment, so "
                           f"nothing runs on that NIC")
    ir.results.add(Placement(frozen_map(processes), wanted))
    return ir


def _process(ir: ProgramIR, name: str, device: Device, main: str) -> ProcessIR:
    """Process ``name`` on ``device``; ``main``: the process holding main. A process with
    threads has a main of its own; the main process has one too when threads run anywhere
    (NIC ones included: it creates the shared memory and waits for the stop signal, even when
    it runs none of them) or the program asked for one."""
    segments = [s for s in ir.segments.values() if s.process == name]
    waits_for = ir.segments.values() if name == main else segments
    has_main = (name == main and ir.main.loc is not None) or any(
        s.kind == SegmentKind.THREAD for s in waits_for)
    external = tuple(ir.main.external) if name == main and ir.main.external is not None else ()
    return ProcessIR(name, device, tuple(s.name for s in segments),
                     tuple(s.name for s in segments if s.kind == SegmentKind.CALLABLE),
                     has_main, external)


def _main_error(ir: ProgramIR, message: str) -> FloemError:
    """An error located at the ``floem.main`` / ``external_main`` call, if there is one."""
    loc = ir.main.loc
    return loc.error(message) if loc is not None else FloemError(message, ir.app_file)


def _check_nic_cores(ir: ProgramIR) -> None:
    """NIC worker threads plus manager cores (when they have queues to keep) must fit the
    platform's cores."""
    platform = ir.options.nic
    limit = PLATFORMS[platform].cores
    managers = ir.options.nic_managers if ir.options.sync_layer and any(
        len({ir.segments[ir.node(n).segment].device
             for n in (q.dequeuer, *(e for names in q.enqueuers for e in names))
             if n in ir.graph}) > 1
        for q in ir.queues.values()) else 0
    used = managers
    for seg in ir.segments.values():
        if seg.device != Device.NIC:
            continue
        used += len(seg.cores)
        if used > limit:
            raise seg.loc.error(f"segment '{seg.name}' needs NIC cores beyond the {limit} of "
                                f"--nic {platform} ({used} with {managers} manager core(s))")
