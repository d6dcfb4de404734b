"""The graph IR the passes transform: a networkx MultiDiGraph plus program tables."""
from floem.ir.graph import (CacheIR, EdgeKind, ElementNode, MainIR, ProcessIR, ProgramIR,
                            QueueIR, SegmentIR, TraceFilter)
from floem.ir.options import BuildOptions
from floem.ir.plan import ElementPlan, ProcessPlan, QueueSide
from floem.ir.state import (CCode, CType, Device, FieldLayout, Home, MemoryRegionIR,
                            PersistentState, Role, SegmentKind, StateLayout)

__all__ = ["BuildOptions", "CacheIR", "CCode", "CType", "Device", "EdgeKind", "ElementNode",
           "ElementPlan", "FieldLayout", "Home", "MainIR", "MemoryRegionIR", "PersistentState",
           "ProcessIR", "ProcessPlan", "ProgramIR", "QueueIR", "QueueSide", "Role", "SegmentIR",
           "SegmentKind", "StateLayout", "TraceFilter"]
