"""Fan-out, joins and ``run_order``: the execution order the graph says, checked (this pass
writes nothing).

Before: data edges in connection order, ``order`` edges as written by ``run_order``.

After, unchanged: each join (an element with several input ports, ``ElementNode.join``: it
runs once every input of the same packet has arrived) has every port connected;
``run_order(a, b)`` edges are checked (same segment, ``b`` has no input ports); fan-out
edges keep their program-order ``rank``::

    A.out -> B, A.out -> C          A.out -> B (rank 0), A.out -> C (rank 1)
    B -> J.x, C -> J.y              J [join]
"""
from __future__ import annotations

from floem.ir import EdgeKind, ProgramIR

NAME = "order_graph"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({"graph", "bodies"})
PROVIDES: frozenset[str | type] = frozenset({"joins"})


def run(ir: ProgramIR) -> ProgramIR:
    """Check joins and order edges."""
    for n in ir.nodes():
        if n.join:
            connected = {e.in_port for e in ir.in_edges(n.name)}
            for port in n.inputs:
                if port not in connected:
                    raise n.loc.error(f"join element '{n.name}' never runs: input port "
                                      f"'{port}' is not connected")
    for e in ir.edges(EdgeKind.ORDER):
        if ir.node(e.src).segment != ir.node(e.dst).segment:
            raise e.loc.error(f"run_order({e.src}, {e.dst}): elements are in different "
                              "segments")
        if ir.node(e.dst).inputs:
            raise e.loc.error(f"run_order({e.src}, {e.dst}): '{e.dst}' has input ports; "
                              "run_order orders an element with no data dependency")
    return ir
