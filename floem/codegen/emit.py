"""Code generation: the final IR becomes C files, headers and a Makefile (jinja2 templates).

Every element instance becomes one C function named after it, holding its
body as the user wrote it (Floem forms lowered) under ``#line`` directives
that point at the app file. Output ports become small dispatcher functions
calling the connected elements in program order; joins store their inputs in
a thread-local record keyed by the packet sequence number.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from floem.codegen import caches as cgen
from floem.codegen import functions as fn
from floem.codegen import queues as qgen
from floem.templates import render
from floem.paths import in_build
from floem.platforms import DMA_ENVIRONMENT
from floem.codegen.structs import printf_conversion
from floem.ir import (CacheIR, CachePoint, Device, ElementNode, Home, PersistentState, ProcessIR,
                      ProgramIR, QueueIR, Role, SegmentIR, SegmentKind)


@dataclass
class GeneratedFile:
    """A generated source file and, for C files, where the code of each element or segment starts."""

    name: str
    text: str
    owners: list[tuple[int, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Archive:
    """Floem's runtime and element library compiled for one compiler and set of flags: a
    static library of ``objects`` (runtime/runtime.mk's OBJECTS) in the build cache
    (``path``, keyed by ``cc``, ``ar`` and ``cflags``) that runtime/runtime.mk makes with
    the Makefile's compiler and ``ar`` (the NIC's, for ``nic``); the Makefile names it
    ``variable``."""

    variable: str
    path: str
    cc: str
    ar: str
    cflags: list[str]
    objects: list[str]
    nic: bool = False


@dataclass(frozen=True)
class CompileSettings:
    """What the Makefile compiles with: the host's and the NIC's C flags, the NIC's compiler,
    the libraries linked, and the runtime archives the processes link (``RUNTIME``: the
    host's, ``PIC_RUNTIME``: position-independent, for libraries, ``NIC_RUNTIME``)."""

    cflags: list[str] = field(default_factory=list)
    nic_cc: str = "$(CC)"
    nic_ar: str = "$(AR)"
    nic_cflags: list[str] = field(default_factory=list)
    libs: list[str] = field(default_factory=list)
    archives: list[Archive] = field(default_factory=list)


def generate(ir: ProgramIR, tools: CompileSettings = CompileSettings()) -> list[GeneratedFile]:
    """The C files, headers and Makefile for every process of ``ir``."""
    files = []
    for proc in ir.processes.values():
        emitter = _ProcessEmitter(ir, proc.name)
        files.append(emitter.header())
        files.extend(emitter.sources())
    files.append(_makefile(ir, tools))
    return files


def launcher(ir: ProgramIR, emulator: list[str]) -> GeneratedFile | None:
    """``run``: a shell script starting the program's processes the way ``floem run`` does."""
    main = ir.placement.main
    if main not in ir.processes or not ir.processes[main].has_main:
        return None
    others = [(p.name, " ".join(emulator + [f'"$here/{p.name}"']) if p.device == Device.NIC
               else f'"$here/{p.name}"') for p in ir.processes.values()
              if p.has_main and p.name != main]
    text = render("run.sh.j2", app_file=ir.app_file, main=main, others=others)
    return GeneratedFile("run", text)


def _makefile(ir: ProgramIR, tools: CompileSettings) -> GeneratedFile:
    depends = [in_build(d) for d in ir.depends]
    # The element library's C is in the runtime archive; the program's own is built here.
    own = [d for d in depends if d.endswith(".c") and not d.startswith("runtime/")]
    processes = [_process_build(p, len(ir.plan.processes[p.name].units), own,
                                [in_build(f) for f in p.external_main])
                 for p in ir.processes.values()]
    text = render(
        "Makefile.j2", app_file=ir.app_file, cflags=_flags(tools.cflags), nic_cc=tools.nic_cc,
        nic_ar=tools.nic_ar,
        nic_cflags=_flags(tools.nic_cflags), ldlibs=" ".join(tools.libs),
        depends=" ".join(depends), processes=processes,
        archives=[{"variable": a.variable, "path": a.path,
                   "cc": "$(NIC_CC)" if a.nic else "$(CC)", "ar": "$(NIC_AR)" if a.nic else "$(AR)",
                   "cflags": " ".join(a.cflags), "objects": " ".join(a.objects)}
                  for a in tools.archives])
    return GeneratedFile("Makefile", text)


def _process_build(p: ProcessIR, units: int, own: list[str], external: list[str]
                   ) -> dict[str, Any]:
    """How the Makefile builds process ``p``: its objects for the executable (in
    ``P.objs/``) and for the library (``libP.objs/``, position-independent), from its
    ``units`` translation units, the program's C files ``own`` and, for the executable, the
    files of its ``external_main``."""
    nic = p.device == Device.NIC
    stems = [p.name] + [f"{p.name}.{k}" for k in range(1, units)]
    builds = []
    for directory, pic in ((f"{p.name}.objs", False), (f"lib{p.name}.objs", True)):
        if (p.callables if pic else p.has_main):
            sources = [{"path": d, "object": f"{directory}/depend{i}_{_stem(d)}.o",
                        "external": False} for i, d in enumerate(own, 1)]
            sources += [] if pic else [{"path": f, "object": f"{directory}/main{i}_{_stem(f)}.o",
                                        "external": True} for i, f in enumerate(external, 1)]
            builds.append({
                "what": f"The objects of lib{p.name}: position-independent, without main"
                        if pic else f"The objects of {p.name}",
                "directory": directory, "variable": directory.replace(".", "_").upper(),
                "flags": " -fPIC -DFLOEM_LIBRARY" if pic else "",
                "objects": [f"{directory}/{u}.o" for u in stems] + [s["object"] for s in sources],
                "sources": sources})
    return {"name": p.name, "executable": p.has_main, "library": bool(p.callables),
            "cc": "$(NIC_CC)" if nic else "$(CC)", "cflags": "$(NIC_CFLAGS)" if nic else "$(CFLAGS)",
            "headers": f"{p.name}.h" + (f" {p.name}.units.h" if units > 1 else ""),
            "builds": builds,
            "archive": "NIC_RUNTIME" if nic else "RUNTIME", "pic_archive": "PIC_RUNTIME"}


def _stem(path: str) -> str:
    """A file's name without its directory and extension."""
    return os.path.splitext(os.path.basename(path))[0]


def _flags(flags: list[str]) -> str:
    """The compiler flags as the Makefile writes them: ``-I`` of a directory the build
    directory holds a copy of (`floem.paths.build_copies`) names the copy."""
    written = []
    for flag in flags:
        directory = flag.removeprefix("-I")
        copy = in_build(directory) if flag.startswith("-I") else directory
        written.append(flag if copy == directory else f"-I$(CURDIR)/{copy}")
    return " ".join(written)


def _include(text: str) -> str:
    """An include line of the program's header: a file the build directory holds a copy of
    is included as its copy, a runtime header by its name under ``runtime/include``."""
    m = re.fullmatch(r'#include "(/[^"]+)"', text)
    if m is None:
        return text
    copy = in_build(m.group(1))
    return text if copy == m.group(1) else f'#include "{copy.removeprefix("runtime/include/")}"'


def _resolve_line_markers(text: str, c_file: str) -> str:
    """Replace each ``#line RESUME`` with the real position in the generated file."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line == "#line RESUME":
            lines[i] = f'#line {i + 2} "{c_file}"'
    return "\n".join(lines)


_OWNER_MARK = r"/\* (?:element|port|segment) (\w+)"
#: The roles of the cache elements whose statements templates/caches.c.j2 writes.
_CACHE_ROLES = (Role.CACHE_LOOKUP, Role.CACHE_FILL, Role.CACHE_UPDATE, Role.CACHE_SET_END)


def c_string(text: str) -> str:
    """``text`` escaped for use inside a C string literal."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


class _ProcessEmitter:
    """Renders one process: its elements, dispatchers, threads and callables."""

    def __init__(self, ir: ProgramIR, process: str) -> None:
        self.ir = ir
        self.process = process
        self.proc = ir.processes[process]
        self.segments: list[SegmentIR] = [ir.segments[s] for s in self.proc.segments]
        self.nodes: list[ElementNode] = [ir.node(n) for s in self.segments for n in s.elements]
        self.nic = self.proc.device == Device.NIC
        self.plan = ir.plan.processes[process]
        mine = {n.name for n in self.nodes}
        self.caches = [cgen.CacheView(c, c.state,
                                      ir.element_plan(c.points[CachePoint.SET_START])
                                      .ports["region"] if CachePoint.SET_START in c.points else "")
                       for c in ir.caches.values()
                       if c.state is not None and set(c.points.values()) & mine]

    # -- header ---------------------------------------------------------------

    def header(self) -> GeneratedFile:
        name = f"{self.process}.h"
        text = render(
            "process.h.j2", process=self.process, app_file=self.ir.app_file,
            guard=re.sub(r"\W", "_", self.process).upper(),
            includes=[{"line": c.loc.line, "file": c_string(c.loc.file),
                       "text": _include(c.text)} for c in self.ir.includes],
            layouts=self.ir.layouts,
            callables=[fn.callable_signature(self.ir, self.ir.segments[c])
                       for c in self.proc.callables],
            regions=[r.name for r in self.ir.regions],
        )
        return GeneratedFile(name, _resolve_line_markers(text, name))

    # -- sources ----------------------------------------------------------------

    def sources(self) -> list[GeneratedFile]:
        """The process's C: ``<process>.c`` (its globals, lifecycle and first translation
        unit's elements) and, when it is compiled as several units, ``<process>.units.h``
        (what they share) and ``<process>.<k>.c`` (the elements of unit k)."""
        units = self.plan.units
        split = len(units) > 1
        shared = self._shared(split)
        files = [self._c_file(f"{self.process}.c", "process.c.j2",
                              {**shared, **self._unit(units[0], 0), **self._lifecycle(),
                               "unit_files": [self._unit_file(k) for k in range(1, len(units))]})]
        if split:
            files.insert(0, self._c_file(f"{self.process}.units.h", "units.h.j2", {
                **shared, "linkage": "extern FLOEM_HIDDEN ",
                "guard": re.sub(r"\W", "_", self.process).upper(),
                "unit_files": [f"{self.process}.c"] + [self._unit_file(k)
                                                        for k in range(1, len(units))],
                "threads": [s.name for s in self.segments if s.kind == SegmentKind.THREAD],
                "evictions": [v.cache.name for v in self.caches],
                "drains": [v.cache.name for v in self.caches if v.cache.defer_fill_evictions]}))
            files += [self._c_file(self._unit_file(k), "unit.c.j2",
                                   {**shared, **self._unit(elements, k), "unit": k})
                      for k, elements in enumerate(units) if k > 0]
        return files

    def _unit_file(self, k: int) -> str:
        return f"{self.process}.{k}.c"

    def _c_file(self, name: str, template: str, context: dict[str, Any]) -> GeneratedFile:
        """``template`` rendered as file ``name``, with the owner of each line's code."""
        text = _resolve_line_markers(render(template, **context), name)
        marks = [(i + 1, m.group(1)) for i, line in enumerate(text.split("\n"))
                 if (m := re.match(_OWNER_MARK, line))]
        return GeneratedFile(name, text, marks)

    def _shared(self, split: bool) -> dict[str, Any]:
        """What every C file of the process is rendered with: its includes, entry structs and
        globals (templates/process_head.c.j2, globals.c.j2)."""
        homes = self.ir.homes.states
        layouts = self.ir.entry_layouts.entries
        states = list(self.ir.states.values())
        queues = list(self.ir.queues.values())
        used = [q for q in queues if q.name in self.plan.queues]
        return dict(
            process=self.process, app_file=self.ir.app_file, nic=self.nic,
            network=self.plan.network, counters=self.plan.counters,
            own_orders=self.plan.own_orders,
            packets=any(qgen.carries_packets(layouts[q.name]) for q in used),
            trace=self.plan.trace_number, split=split,
            linkage="FLOEM_HIDDEN " if split else "static ",
            states=[self._state(s) for s in states if homes[s.name] == Home.HOST],
            nic_states=[self._state(s) for s in states if self.nic and homes[s.name] == Home.NIC],
            queues=[self._queue(q) for q in queues if self._home(q) == Home.HOST],
            nic_queues=[self._queue(q) for q in queues if self.nic and self._home(q) == Home.NIC],
            shadows=[self._queue(q) for q in used if self.plan.queues[q.name].synced],
            used_queues=[self._queue(q) for q in used],
            entry_channels=[ch for q in queues if q in used or self._home(q) == Home.HOST
                            for ch in layouts[q.name] if not ch.empty],     # laid out here
            wire_layouts=self.ir.layouts if self.nic else [],
            caches=self._caches())

    def _caches(self) -> list[dict[str, Any]]:
        """The caches this process's elements use."""
        return [{"name": v.cache.name, "buckets": v.cache.buckets,
                 "entries": v.cache.entries or 0, "view": v,
                 "drain": v.cache.defer_fill_evictions} for v in self.caches]

    def _unit(self, elements: tuple[str, ...], k: int) -> dict[str, Any]:
        """The functions of translation unit ``k``, of ``elements`` (templates/unit_body.c.j2):
        theirs, the threads and callables whose sources are there (a callable with a return
        element: where that is), the caches' write-back functions beside their set region's
        start; the prototypes of its functions and, in a process compiled as several units,
        of the other units' functions it calls."""
        nodes = [self.ir.node(e) for e in elements]
        here = set(elements)
        joins = any(n.join for n in self.nodes)
        callables = [s for s in self.segments if s.kind == SegmentKind.CALLABLE
                     and (fn.return_element(self.ir, s) or self.ir.node(s.source)).name in here]
        return dict(
            sequenced=joins,
            prototypes=fn.prototypes(self.ir, nodes) + [
                f for e in self.plan.imports[k]
                for f in fn.shared_functions(self.ir, self.ir.node(e))],
            joins=[self._join(n) for n in nodes if n.join],
            returns=[self._return_slot(s) for s in callables if fn.return_element(self.ir, s)],
            elements=[fn.element_function(self.ir, n, self._plumbing(n)) for n in nodes],
            evictions=[c for c in self._caches() if self._eviction_unit(c["view"].cache) == k],
            dispatchers=[d for n in nodes for d in fn.dispatchers(self.ir, n, joins)],
            join_entries=[j for n in nodes if n.join for j in fn.join_entries(self.ir, n)],
            threads=[self._thread(s) for s in self.segments
                     if s.kind == SegmentKind.THREAD and s.source in here],
            callables=[self._callable(s) for s in callables])

    def _eviction_unit(self, cache: CacheIR) -> int:
        """The unit of a cache's write-back functions: its set region's start's (they call
        its port), or the first."""
        start = cache.points.get(CachePoint.SET_START)
        return next((k for k, elements in enumerate(self.plan.units) if start in elements), 0)

    def _lifecycle(self) -> dict[str, Any]:
        """What <process>.c alone is rendered with: the shared memory's layout, the
        counters' and traces' tables, starting and stopping, main."""
        return dict(
            managers=self.plan.managers, net_queues=self.plan.net_queues,
            kept_frames=self.plan.kept_frames,
            kept_frame_timeout_ms=self.plan.kept_frame_timeout_ms,
            counter_layout=self.plan.counter_layout.splitlines(),
            counter_notes=[{"line": line, **self._reported(self.ir.states[state])}
                           for line, state in self.plan.counter_notes],
            trace_sites=self.plan.trace_sites,
            dma_defaults=[(DMA_ENVIRONMENT[k], f"{v:g}" if k == "gbps" else str(int(v)))
                          for k, v in sorted(self.ir.options.dma_model.items())],
            regions=[{"name": r.name, "size": r.size} for r in self.ir.regions],
            all_threads=[self._thread(s) for s in self.segments if s.kind == SegmentKind.THREAD],
            main=self._main() if self.proc.has_main and not self.proc.external_main else None,
            reported_states=self._reported_states())

    def _reported_states(self) -> list[dict[str, Any]]:
        """The ``report = True`` states this process's elements use and reach, with the
        fields printed (numeric scalars) and how."""
        home = Home.NIC if self.nic else Home.HOST
        used = {s.name for n in self.nodes for s in n.persistent.values()}
        return [self._reported(s) for s in self.ir.states.values()
                if s.name in used and s.layout.report and self.ir.homes.states[s.name] == home]

    @staticmethod
    def _reported(s: PersistentState) -> dict[str, Any]:
        """A ``report = True`` state with the fields its line prints (numeric scalars), each
        with its printf conversion and the type it is cast to."""
        return {"state": s, "fields": [(f.name, *conv) for f in s.layout.fields
                                       if (conv := printf_conversion(f)) is not None]}

    @staticmethod
    def _state(s: PersistentState) -> dict[str, str]:
        return {"type": s.layout.name, "pointer": s.pointer, "init": s.initializer}

    def _home(self, q: QueueIR) -> Home:
        return self.ir.queue_home(q.name).home

    def _queue(self, q: QueueIR) -> qgen.QueueView:
        return qgen.QueueView(q, self.ir.entry_layouts.entries[q.name],
                              self.plan.queues.get(q.name, qgen.HOLDS), self.ir.queue_home(q.name),
                              self.ir.plan.sync_batches[q.name], self.ir.plan.layouts[q.name])

    def _join(self, n: ElementNode) -> dict[str, Any]:
        return {"element": n.name, "record": self.ir.element_plan(n.name).inputs_record,
                "ports": [{"name": p, "fields": fn.values(types, f"{p}_")}
                          for p, types in n.inputs.items()]}

    def _plumbing(self, n: ElementNode) -> qgen.QueueEnd | cgen.CacheStep | None:
        """A queue or cache element's view (None for an element with a body)."""
        plan = self.ir.element_plan(n.name)
        if n.role.is_queue_end:
            q = self.ir.queues[n.queue]
            view = self._queue(q)
            channel = view.channels[n.channel] if n.role in (Role.ENQUEUE, Role.SAVE) else None
            return qgen.QueueEnd(n, plan, q, channel, len(self.ir.segments[n.segment].cores),
                                 view.access, n.segment in self.plan.publishing)
        if n.role in _CACHE_ROLES:
            return cgen.CacheStep(next(v for v in self.caches if v.cache.name == n.cache), n, plan)
        return None

    def _return_slot(self, seg: SegmentIR) -> dict[str, str]:
        return {"segment": seg.name, "slot": fn.return_slot(seg.name),
                "type": fn.return_type(self.ir, seg)}

    def _callable(self, seg: SegmentIR) -> dict[str, Any]:
        has_return = fn.return_element(self.ir, seg) is not None
        return {"name": seg.name, "function": fn.callable_signature(self.ir, seg),
                "state": seg.packet_state.name if seg.packet_state else "",
                "zero": bool(self.ir.liveness.read_first[seg.name]),
                "slot": fn.return_slot(seg.name) if has_return else "",
                "has_value": bool(fn.return_type(self.ir, seg)),
                "source": seg.source,
                "takes": any(self.ir.node(e).role == Role.DEQUEUE for e in seg.elements),
                "publishes": seg.name in self.plan.publishing,
                "default": seg.default_return or "0"}

    def _thread(self, seg: SegmentIR) -> dict[str, Any]:
        return {"segment": seg.name, "count": len(seg.cores), "source": seg.source,
                "cpus": seg.cores if seg.pinned else [-1] * len(seg.cores),
                "state": seg.packet_state.name if seg.packet_state
                and not self.ir.element_plan(seg.source).fresh_state else "",
                "zero": bool(self.ir.liveness.read_first[seg.name]),
                "manage": self.plan.threads_manage,
                "publishes": seg.name in self.plan.publishing}

    def _main(self) -> dict[str, Any]:
        info = self.ir.main_info
        body = self.ir.plan.main_body
        if info is None or body is None or self.ir.placement.main != self.process:
            return {"body": None, "pointers": []}
        return {"body": body,
                "pointers": [(s.name, s) for s in self.ir.states.values()
                             if s.name in info.persistent_used]}

