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

from floem.ir import EdgeKind, ProgramIR

NAME = "check_callables"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES = frozenset({"bodies", "sources"})
PROVIDES = frozenset()


def run(ir: ProgramIR) -> ProgramIR:
    """Raise for a callable that may not return without a default."""
    for seg in ir.segments.values():
        if seg.kind != "callable" or seg.default_return is not None:
            continue
        returns = [n for n in seg.elements if ir.node(n).role == "return"]
        if returns and not _surely_returns(ir, seg.source, set(), _surely_run(ir, seg.source)):
            raise seg.loc.error(f"callable segment '{seg.name}' may finish without a return value "
                                "(some path does not reach its output); give default_return=...")
    return ir


def _surely_fired(ir: ProgramIR, name: str) -> list[str]:
    """Output ports ``name`` fires on every execution."""
    node = ir.node(name)
    if node.role in ("args", "core_id"):
        return list(node.outputs)
    return sorted(node.info.always_fires) if node.info and node.info.form == "block" else []


def _surely_run(ir: ProgramIR, source: str) -> set[str]:
    """Elements that run for every call: reached only through always-fired ports.

    A join is in the set only when each of its inputs is fed from the set.
    """
    done = {source}
    changed = True
    while changed:
        changed = False
        fed: dict[str, set[str]] = {}
        for name in done:
            for port in _surely_fired(ir, name):
                for _, v, d in ir.out_edges(name, port):
                    fed.setdefault(v, set()).add(d["in_port"])
            for _, v, _ in ir.out_edges(name, kind=EdgeKind.ORDER):
                fed.setdefault(v, set()).update(ir.node(v).inputs or {""})
        for v, ports in fed.items():
            if v not in done and (not ir.node(v).join or ports >= set(ir.node(v).inputs)):
                done.add(v)
                changed = True
    return done


def _surely_returns(ir: ProgramIR, name: str, seen: set[str], surely_run: set[str]) -> bool:
    node = ir.node(name)
    if node.join and name not in surely_run:
        return False
    if node.role == "return":
        return True
    if name in seen:
        return False
    seen = seen | {name}

    def port_returns(port: str) -> bool:
        return any(_surely_returns(ir, v, seen, surely_run) for _, v, _ in ir.out_edges(name, port))

    if any(_surely_returns(ir, v, seen, surely_run)
           for _, v, _ in ir.out_edges(name, kind=EdgeKind.ORDER)):
        return True
    if node.role in ("args", "core_id") or (node.info and node.info.form == "block"):
        return any(port_returns(p) for p in _surely_fired(ir, name))
    info = node.info
    if info.form == "switch":
        return info.switch_has_else and all(port_returns(p) for p in info.switch_ports)
    return False
