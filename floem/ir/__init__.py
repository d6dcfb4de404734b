"""The graph IR the passes transform: a networkx MultiDiGraph plus program tables."""
from floem.ir.graph import EdgeKind, ElementNode, ProcessIR, ProgramIR, QueueIR, SegmentIR

__all__ = ["EdgeKind", "ElementNode", "ProcessIR", "ProgramIR", "QueueIR", "SegmentIR"]
