"""The graph IR the passes transform (a networkx MultiDiGraph plus program tables) and the
analyses' results kept beside it."""
from floem.ir.entries import (TO_THE_END, EntryLayout, FrameCrossing, FrameReference,
                              PacketBytes, VariablePart)
from floem.ir.graph import (CacheIR, CachePoint, CachePolicy, Edge, EdgeKind, ElementNode, MainIR,
                            PortTypes, ProgramIR, QueueIR, SegmentIR, TraceFilter, WriteMiss)
from floem.ir.options import BuildOptions, Cut, Part
from floem.ir.plan import ElementPlan, ProcessPlan, QueueSide
from floem.ir.results import (EntryLayouts, Homes, Liveness, Placement, Plan, ProcessIR,
                              QueueHome, Results, Windows)
from floem.ir.state import (CCode, CType, Device, FieldLayout, FrameParts, Home, MemoryRegionIR,
                            PersistentState, Role, SegmentKind, StateLayout, TypeKind)

__all__ = ["BuildOptions", "CacheIR", "CachePoint", "CachePolicy", "CCode", "CType", "Cut",
           "Device", "Edge", "EdgeKind", "ElementNode", "ElementPlan", "EntryLayout",
           "EntryLayouts", "FieldLayout", "FrameCrossing", "FrameParts", "FrameReference",
           "Home", "Homes", "Liveness", "MainIR", "MemoryRegionIR", "PacketBytes", "Part",
           "PersistentState", "Placement", "Plan", "PortTypes", "ProcessIR", "ProcessPlan",
           "ProgramIR", "QueueHome", "QueueIR", "QueueSide", "Results", "Role", "SegmentIR",
           "SegmentKind", "StateLayout", "TO_THE_END", "TraceFilter", "TypeKind", "VariablePart",
           "Windows", "WriteMiss"]
