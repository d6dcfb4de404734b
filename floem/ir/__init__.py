"""The graph IR the passes transform: a networkx MultiDiGraph plus program tables."""
from floem.ir.entries import (TO_THE_END, EntryLayout, FrameCrossing, FrameReference,
                              PacketBytes, VariablePart)
from floem.ir.graph import (CacheIR, CachePoint, CachePolicy, Edge, EdgeKind, ElementNode, MainIR,
                            ProcessIR, ProgramIR, QueueIR, SegmentIR, TraceFilter, WriteMiss)
from floem.ir.options import BuildOptions, Cut
from floem.ir.plan import ElementPlan, ProcessPlan, QueueSide
from floem.ir.state import (CCode, CType, Device, FieldLayout, FrameParts, Home, MemoryRegionIR,
                            PersistentState, Role, SegmentKind, StateLayout, TypeKind)

__all__ = ["BuildOptions", "CacheIR", "CachePoint", "CachePolicy", "CCode", "CType", "Cut",
           "Device", "Edge", "EdgeKind", "ElementNode", "ElementPlan", "EntryLayout",
           "FieldLayout", "FrameCrossing", "FrameParts", "FrameReference", "Home", "MainIR",
           "MemoryRegionIR", "PacketBytes", "PersistentState", "ProcessIR", "ProcessPlan",
           "ProgramIR", "QueueIR", "QueueSide", "Role", "SegmentIR", "SegmentKind", "StateLayout",
           "TO_THE_END", "TraceFilter", "TypeKind", "VariablePart", "WriteMiss"]
