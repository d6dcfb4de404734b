"""Placement: segments become processes (executables) with threads.

Before: segments naming a ``process`` (default: the program's name).

After: ``ir.processes`` maps each process to its thread and callable
segments; exactly one process holds ``main`` (the one ``floem.main`` names,
else the default process); each queue's producer and consumer variants
(atomic or not) follow from the threads that use it::

    seg rx (process=kvs), inc2 (process=math)  =>  process kvs [rx] main
                                                  process math [inc2] callables
"""
from __future__ import annotations

from floem.ir import ProcessIR, ProgramIR, QueueIR

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
    if program.main_process is not None and program.main_process not in ir.processes:
        raise program.main_code.loc.error(
            f"main(process={program.main_process!r}): no segment is in that process "
            f"(processes: {', '.join(ir.processes) or 'none'})")
    wanted = program.main_process or default
    if program.main_process is None and default not in ir.processes and len(ir.processes) == 1:
        wanted = next(iter(ir.processes))
    main = ir.processes.setdefault(wanted, ProcessIR(wanted))
    main.has_main = program.main_code is not None or any(
        ir.segments[s].kind == "thread" for s in main.segments)
    for proc in ir.processes.values():
        if proc is not main and any(ir.segments[s].kind == "thread" for s in proc.segments):
            proc.has_main = True
    for q in ir.queues.values():
        _queue_threads(ir, q)
    ir.options["main_process"] = wanted
    return ir


def _queue_threads(ir: ProgramIR, q: QueueIR) -> None:
    """Decide the producer and consumer variants of a queue from the threads that use it.

    A thread segment with ``n`` threads dequeuing from ``m`` instances gives
    thread ``t`` the instances ``t, t+n, ...``: one consumer per instance.
    Callable segments may be called from any number of threads.
    """
    producers = 0
    for enq in (name for names in q.enqueuers for name in names):
        if enq in ir.graph:
            seg = ir.segments[ir.node(enq).segment]
            producers += 2 if seg.kind == "callable" else len(seg.cores)
    consumer = ir.segments[ir.node(q.dequeuer).segment]
    q.multi_producer = q.enq_atomic if q.enq_atomic is not None else producers > 1
    q.multi_consumer = q.deq_atomic if q.deq_atomic is not None else consumer.kind == "callable"
    if consumer.kind == "thread" and len(consumer.cores) > q.instances:
        ir.warnings.append(f"{consumer.loc}: segment '{consumer.name}' has {len(consumer.cores)} "
                           f"threads but queue '{q.name}' only {q.instances} instances; "
                           "the extra threads stay idle")
