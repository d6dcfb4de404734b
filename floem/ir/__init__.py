"""The graph IR the passes transform: a networkx MultiDiGraph plus program tables."""
from floem.ir.graph import (CacheIR, EdgeKind, ElementNode, ProcessIR, ProgramIR, QueueIR,
                            SegmentIR)
from floem.ir.options import BuildOptions

__all__ = ["BuildOptions", "CacheIR", "EdgeKind", "ElementNode", "ProcessIR", "ProgramIR",
           "QueueIR", "SegmentIR"]
