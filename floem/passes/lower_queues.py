"""Queue lowering: each dequeue gets a save per channel and a release after the packet.

Before: ``A -> q_enq0`` in one segment, ``q_deq.out0 -> B`` in another, and
liveness has decided what each channel carries (``QueueIR.fields``).

After: the enqueue copies the channel's live fields into an entry of
instance ``state->qid``; on the receiving side a save element per channel
fills the segment's per-packet state from the entry (fixed fields copied,
variable-size fields pointing into the entry), and a release element, run
after the packet's processing (an order edge from the dequeue), hands the
entry back to the producer once its last use is over::

    q_deq.out0 -> B            q_deq.out0 -> q_save0 -> B
                               q_deq ..then..> q_release
"""
from __future__ import annotations

import dataclasses

from floem.ir import Edge, EdgeKind, ElementNode, Liveness, ProgramIR, Role

NAME = "lower_queues"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({Liveness})
PROVIDES: frozenset[str | type] = frozenset({"queues_lowered"})


def run(ir: ProgramIR) -> ProgramIR:
    """Insert save and release elements for every queue."""
    for q in ir.queues.values():
        deq = ir.node(q.dequeuer)
        for c in range(q.channels):
            save = ElementNode(name=f"{q.name}_save{c}", cls_name="QueueSave", loc=q.loc,
                               inputs={"inp": ()}, outputs={"out": ()}, segment=deq.segment,
                               packet_state=deq.packet_state, role=Role.SAVE, queue=q.name, channel=c)
            ir.add_node(save)
            ir.add_to_segment(deq.segment, save.name,
                              ir.segments[deq.segment].elements.index(deq.name) + 1 + c)
            for e in ir.out_edges(deq.name, f"out{c}"):
                ir.remove_edge(e)
                ir.add_edge(dataclasses.replace(e, src=save.name, out_port="out"))
            ir.add_edge(Edge(deq.name, save.name, EdgeKind.DATA, f"out{c}", "inp", (), q.loc,
                             -1))
        release = ElementNode(name=f"{q.name}_release", cls_name="QueueRelease", loc=q.loc,
                              inputs={}, outputs={}, segment=deq.segment,
                              packet_state=deq.packet_state, role=Role.RELEASE, queue=q.name)
        ir.add_node(release)
        ir.add_to_segment(deq.segment, release.name)
        ir.add_edge(Edge(deq.name, release.name, EdgeKind.ORDER, "", "", (), q.loc,
                         len(ir.graph.edges)))
    return ir
