"""The graph IR the passes transform: a networkx MultiDiGraph plus program tables."""
from floem.ir.graph import EdgeKind, ElementNode, ProgramIR, SegmentIR, ProcessIR

__all__ = ["EdgeKind", "ElementNode", "ProgramIR", "SegmentIR", "ProcessIR"]
