"""Check callable segments: every path returns a value, or there is a ``default_return``.

Before: callable segments whose ``out`` port is fed by some elements.

After: unchanged, or a `FloemError` at the segment's instantiation when some
execution can end without reaching ``out`` and no ``default_return`` is given::

    args -> Filter (output switch without else) -> return     => error
    args -> Inc -> Inc -> return                               => ok

An element *surely* reaches the return when an output port it always fires
(``output { }``) leads there, when every case of an ``output switch`` with
``else`` does, or when it is the return itself.
"""
from __future__ import annotations

from floem.ir import EdgeKind, ProgramIR

NAME = "check_callables"


def run(ir: ProgramIR) -> ProgramIR:
    """Raise for a callable that may not return without a default."""
    for seg in ir.segments.values():
        if seg.kind != "callable" or seg.default_return is not None:
            continue
        returns = [n for n in seg.elements if ir.node(n).role == "return"]
        if returns and not _surely_returns(ir, seg.source, set()):
            raise seg.loc.error(f"callable segment '{seg.name}' may finish without a return value "
                                "(some path does not reach its output); give default_return=...")
    return ir


def _surely_returns(ir: ProgramIR, name: str, seen: set[str]) -> bool:
    node = ir.node(name)
    if node.role == "return":
        return True
    if name in seen:
        return False
    seen = seen | {name}

    def port_returns(port: str) -> bool:
        return any(_surely_returns(ir, v, seen) for _, v, _ in ir.out_edges(name, port))

    if any(_surely_returns(ir, v, seen) for _, v, _ in ir.out_edges(name, kind=EdgeKind.ORDER)):
        return True
    if node.role == "args" or node.role == "core_id":
        return any(port_returns(p) for p in node.outputs)
    info = node.info
    if info.form == "block":
        return any(port_returns(p) for p in info.always_fires)
    if info.form == "switch":
        return info.switch_has_else and all(port_returns(p) for p in info.switch_ports)
    return False
