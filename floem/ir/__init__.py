"""The graph IR the passes transform: a networkx MultiDiGraph plus program tables."""
from floem.ir.graph import (CacheIR, EdgeKind, ElementNode, ProcessIR, ProgramIR, QueueIR,
                            SegmentIR)

__all__ = ["CacheIR", "EdgeKind", "ElementNode", "ProcessIR", "ProgramIR", "QueueIR", "SegmentIR"]
