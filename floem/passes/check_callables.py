"""Check callable segments: every path returns a value, or there is a ``default_return``.

Before: callable segments whose ``out`` port is fed by some elements.

After: unchanged, or a `FloemError` at the segment's instantiation when some
execution can end without reaching ``out`` and no ``default_return`` is given::

    args -> Filter (output switch without else) -> return     => error
    args -> Inc -> Inc -> return                               => ok

An element *surely* reaches the return when an output port it always fires
(``output { }``) leads there, when every case of an ``output switch`` with
``else`` does, or when it is the return itself. A join surely runs only when
every one of its inputs comes from elements that run for every call.
"""
from __future__ import annotations

from floem.csrc import BodyForm
from floem.errors import FloemError, raise_together
from floem.ir import EdgeKind, ProgramIR, Role, SegmentIR, SegmentKind

NAME = "check_callables"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({"bodies", "sources"})
PROVIDES: frozenset[str | type] = frozenset()


def run(ir: ProgramIR) -> ProgramIR:
    """Raise for the callables that may not return without a default."""
    errors: list[FloemError] = []
    for seg in ir.segments.values():
        if seg.kind != SegmentKind.CALLABLE or seg.default_return is not None:
            continue
        returns = [n for n in seg.elements if ir.node(n).role == Role.RETURN]
        if returns and seg.source not in _surely_returning(ir, seg, _surely_run(ir, seg.source)):
            errors.append(seg.loc.error(f"callable segment '{seg.name}' may finish without a "
                                        "return value (some path does not reach its output); "
                                        "give default_return=..."))
    raise_together(errors)
    return ir


def _surely_fired(ir: ProgramIR, name: str) -> list[str]:
    """Output ports ``name`` fires on every execution."""
    node = ir.node(name)
    if node.role in (Role.ARGS, Role.CORE_ID):
        return list(node.outputs)
    return sorted(node.info.always_fires) if node.info and node.info.form == BodyForm.BLOCK else []


def _surely_run(ir: ProgramIR, source: str) -> set[str]:
    """Elements that run for every call: reached only through always-fired ports.

    A join is in the set only when each of its inputs is fed from the set.
    """
    done = {source}
    work = [source]
    fed: dict[str, set[str]] = {}
    while work:
        name = work.pop()
        reached = [(e.dst, {e.in_port}) for port in _surely_fired(ir, name)
                   for e in ir.out_edges(name, port)]
        reached += [(e.dst, set(ir.node(e.dst).inputs or {""}))
                    for e in ir.out_edges(name, kind=EdgeKind.ORDER)]
        for v, ports in reached:
            fed.setdefault(v, set()).update(ports)
            if v not in done and (not ir.node(v).join or fed[v] >= set(ir.node(v).inputs)):
                done.add(v)
                work.append(v)
    return done


def _surely_returning(ir: ProgramIR, seg: SegmentIR, surely_run: set[str]) -> set[str]:
    """Elements of ``seg`` from which every execution reaches the return: a least fixpoint
    over the segment, iterated (not recursive), so a cycle returns nothing."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name in reversed(seg.elements):
            if name not in found and _returns(ir, name, found, surely_run):
                found.add(name)
                changed = True
    return found


def _returns(ir: ProgramIR, name: str, found: set[str], surely_run: set[str]) -> bool:
    """True when ``name`` surely reaches the return, given the elements ``found`` so far."""
    node = ir.node(name)
    if node.join and name not in surely_run:
        return False
    if node.role == Role.RETURN:
        return True

    def port_returns(port: str) -> bool:
        return any(e.dst in found for e in ir.out_edges(name, port))

    if any(e.dst in found for e in ir.out_edges(name, kind=EdgeKind.ORDER)):
        return True
    if node.role in (Role.ARGS, Role.CORE_ID) or (node.info and node.info.form == BodyForm.BLOCK):
        return any(port_returns(p) for p in _surely_fired(ir, name))
    info = node.info
    if info is not None and info.form == BodyForm.SWITCH:
        return info.switch_has_else and all(port_returns(p) for p in info.switch_ports)
    return False
