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

from floem.csrc.tokens import tokenize
from floem.codegen import caches as cgen
from floem.codegen import queues as qgen
from floem.codegen.render import render
from floem.platforms import DMA_ENVIRONMENT
from floem.codegen.structs import report_statement
from floem.ir import (Device, EdgeKind, ElementNode, Home, PersistentState, ProgramIR, QueueIR,
                      Role, SegmentIR, SegmentKind)
from floem.ir.plan import port_function
from floem.ir.state import struct_declarations


@dataclass
class GeneratedFile:
    """A generated source file and, for C files, where the code of each element or segment starts."""

    name: str
    text: str
    owners: list[tuple[int, str]] = field(default_factory=list)


def generate(ir: ProgramIR, cflags: list[str], runtime_sources: list[str],
             nic_cc: str = "$(CC)", nic_cflags: list[str] | None = None,
             libs: list[str] | None = None) -> list[GeneratedFile]:
    """The C files, headers and Makefile for every process of ``ir``."""
    files = []
    structs = struct_declarations(ir.layouts)
    for proc in ir.processes.values():
        emitter = _ProcessEmitter(ir, proc.name)
        files.append(emitter.header(structs))
        files.append(emitter.source())
    files.append(_makefile(ir, cflags, runtime_sources, nic_cc, nic_cflags or cflags, libs or []))
    return files


def launcher(ir: ProgramIR, emulator: list[str]) -> GeneratedFile | None:
    """``run``: a shell script starting the program's processes the way ``floem run`` does."""
    main = ir.main_process
    if main not in ir.processes or not ir.processes[main].has_main:
        return None
    others = [" ".join(emulator + [f'"$here/{p.name}"']) if p.device == Device.NIC
              else f'"$here/{p.name}"' for p in ir.processes.values()
              if p.has_main and p.name != main]
    text = render("run.sh.j2", app_file=ir.app_file, main=main, others=others)
    return GeneratedFile("run", text)


def _makefile(ir: ProgramIR, cflags: list[str], runtime_sources: list[str], nic_cc: str,
              nic_cflags: list[str], libs: list[str]) -> GeneratedFile:
    text = render(
        "Makefile.j2", app_file=ir.app_file, cflags=" ".join(cflags), nic_cc=nic_cc,
        nic_cflags=" ".join(nic_cflags), ldlibs=" ".join(libs),
        runtime_sources=" ".join(runtime_sources),
        depends=" ".join(ir.depends),
        depend_files=[{"path": d, "name": os.path.splitext(os.path.basename(d))[0]}
                      for d in ir.depends if d.endswith(".c")],
        processes=[{"name": p.name, "executable": p.has_main, "library": bool(p.callables),
                    "external": " ".join(p.external_main),
                    "cc": "$(NIC_CC)" if p.device == Device.NIC else "$(CC)",
                    "cflags": "$(NIC_CFLAGS)" if p.device == Device.NIC else "$(CFLAGS)"}
                   for p in ir.processes.values()],
    )
    return GeneratedFile("Makefile", text)


def _resolve_line_markers(text: str, c_file: str) -> str:
    """Replace each ``#line RESUME`` with the real position in the generated file."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line == "#line RESUME":
            lines[i] = f'#line {i + 2} "{c_file}"'
    return "\n".join(lines)


_OWNER_MARK = r"/\* (?:element|port|segment) (\w+)"
_CACHE_BODIES = {"cache_lookup": cgen.lookup_body, "cache_fill": cgen.fill_body,
                 "cache_update": cgen.update_body, "cache_set_end": cgen.set_end_body}


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
        self.channels = {q.name: qgen.channels(ir, q) for q in ir.queues.values()}
        self.nic = self.proc.device == Device.NIC
        self.plan = self.proc.plan
        mine = {n.name for n in self.nodes}
        self.caches = [cgen.CacheView(c, c.state) for c in ir.caches.values()
                       if c.state is not None and set(c.points.values()) & mine]

    # -- header ---------------------------------------------------------------

    def header(self, structs: str) -> GeneratedFile:
        name = f"{self.process}.h"
        text = render(
            "process.h.j2", process=self.process, app_file=self.ir.app_file,
            guard=re.sub(r"\W", "_", self.process).upper(),
            includes=[{"line": c.loc.line, "file": c_string(c.loc.file), "text": c.text}
                      for c in self.ir.includes],
            structs=structs,
            callables=[{"signature": self._callable_signature(self.ir.segments[c])}
                       for c in self.proc.callables],
            regions=[r.name for r in self.ir.regions],
        )
        return GeneratedFile(name, _resolve_line_markers(text, name))

    # -- source ---------------------------------------------------------------

    def source(self) -> GeneratedFile:
        c_file = f"{self.process}.c"
        elements = [self._element(n) for n in self.nodes]
        homes = self.ir.state_homes
        states = list(self.ir.states.values())
        queues = list(self.ir.queues.values())
        used = [q for q in queues if q.name in self.plan.queues]
        text = render(
            "process.c.j2", process=self.process, app_file=self.ir.app_file, c_file=c_file,
            nic=self.nic, managers=self.plan.managers, network=self.plan.network,
            net_queues=self.plan.net_queues,
            dma_defaults=[(DMA_ENVIRONMENT[k], f"{v:g}" if k == "gbps" else str(int(v)))
                          for k, v in sorted(self.ir.options.dma_model.items())],
            states=[self._state(s) for s in states if homes[s.name] == Home.HOST],
            nic_states=[self._state(s) for s in states if self.nic and homes[s.name] == Home.NIC],
            regions=[{"name": r.name, "size": r.size} for r in self.ir.regions],
            queues=[self._queue(q) for q in queues if q.home == Home.HOST],
            nic_queues=[self._queue(q) for q in queues if self.nic and q.home == Home.NIC],
            shadows=[self._queue(q) for q in used if self.plan.queues[q.name].synced],
            used_queues=[self._queue(q) for q in used],
            entry_structs=[s for q in queues if q in used or q.home == Home.HOST   # in the layout
                           for s in qgen.entry_structs(self.channels[q.name])],
            wire_functions=[qgen.wire_function(s) for s in self.ir.layouts if self.nic],
            caches=[{"name": v.cache.name, "buckets": v.cache.buckets,
                     "entries": v.cache.entries or 0, "evict": cgen.evict_function(v),
                     "drain": cgen.drain_function(v) if v.cache.defer_fill_evictions else ""}
                    for v in self.caches],
            prototypes=self._prototypes(),
            joins=[self._join(n) for n in self.nodes if n.join],
            returns=[self._return_slot(s) for s in self.segments
                     if s.kind == SegmentKind.CALLABLE and self._return_element(s)],
            elements=elements,
            dispatchers=[d for n in self.nodes for d in self._dispatchers(n)],
            threads=[self._thread(s) for s in self.segments if s.kind == SegmentKind.THREAD],
            callables=[self._callable(s) for s in self.segments if s.kind == SegmentKind.CALLABLE],
            main=self._main() if self.proc.has_main and not self.proc.external_main else None,
            reported_states=self._reported_states(),
        )
        text = _resolve_line_markers(text, c_file)
        marks = [(i + 1, m.group(1)) for i, line in enumerate(text.split("\n"))
                 if (m := re.match(_OWNER_MARK, line))]
        return GeneratedFile(c_file, text, marks)

    def _reported_states(self) -> list[str]:
        """Statements printing the ``report = True`` states this process's elements use and reach."""
        home = Home.NIC if self.nic else Home.HOST
        used = {s.name for n in self.nodes for s in n.persistent.values()}
        return [report_statement(s) for s in self.ir.states.values()
                if s.name in used and s.layout.report and self.ir.state_homes[s.name] == home]

    @staticmethod
    def _state(s: PersistentState) -> dict[str, str]:
        return {"type": s.layout.name, "pointer": s.pointer, "init": s.initializer}

    def _access(self, q: QueueIR) -> qgen.Access:
        side = self.plan.queues.get(q.name)
        synced = side is not None and side.synced
        return qgen.Access(table=f"{q.name}_sync" if synced else f"{q.name}_inst", synced=synced,
                           manage=side is not None and side.manage_inline)

    def _queue(self, q: QueueIR) -> dict[str, Any]:
        payload = qgen.payload_expr(self.channels[q.name])
        entry_size = (str(q.entry_size) if q.entry_size
                      else f"floem_queue_entry_size({q.name}_payload)")
        if q.entry_size:
            payload = f"{q.entry_size} - FLOEM_QUEUE_ENTRY_HEADER_BYTES"
        side = self.plan.queues.get(q.name)
        return {"name": q.name, "instances": q.instances, "size": q.size,
                "payload": payload, "entry_size": entry_size,
                "enqueued_here": side is not None and side.enqueues,
                "dequeued_here": side is not None and side.dequeues,
                "counters_here": side is not None and side.counts,
                "handle": self._access(q).handle,
                "direction": "FLOEM_SYNC_TO_HOST" if q.enq_device == Device.NIC
                else "FLOEM_SYNC_FROM_HOST",
                "batch": q.sync_batch,
                "multi": "true" if side is not None and side.shared_shadow else "false"}

    def _state_type(self, n: ElementNode) -> str:
        return f"{n.packet_state.name} *" if n.packet_state else "void *"

    def _params(self, n: ElementNode, port: str | None) -> list[str]:
        """C parameters carrying the values of input ``port`` (all of them for a non-join)."""
        ports = [port] if port else list(n.inputs)
        return [v for p in ports for v in self._values(n.inputs[p], f"{p}_")]

    def _signature(self, n: ElementNode) -> str:
        if n.role == Role.ARGS:
            values = self._values(next(iter(n.outputs.values())), "arg")
        else:
            values = [] if n.join else self._params(n, None)
        return f"static void {n.name}({', '.join([f'{self._state_type(n)}state'] + values)})"

    @staticmethod
    def _values(types: list[str], prefix: str) -> list[str]:
        """C parameters ``prefix0, prefix1, ...`` of the given types."""
        return [f"{t}{'' if t.endswith('*') else ' '}{prefix}{i}" for i, t in enumerate(types)]

    def _dispatch_signature(self, n: ElementNode, port: str) -> str:
        params = [f"{self._state_type(n)}state"] + self._values(n.outputs[port], "v")
        return f"static inline void {port_function(n.name, port)}({', '.join(params)})"

    def _join_entry_signature(self, n: ElementNode, port: str) -> str:
        params = [f"{self._state_type(n)}state"] + self._params(n, port)
        return f"static void {n.name}_in_{port}({', '.join(params)})"

    def _prototypes(self) -> list[str]:
        protos = []
        for n in self.nodes:
            protos.append(self._signature(n))
            protos.extend(self._dispatch_signature(n, p) for p in n.outputs)
            if n.join:
                protos.extend(self._join_entry_signature(n, p) for p in n.inputs)
        return protos

    def _join(self, n: ElementNode) -> dict[str, Any]:
        ports = [{"name": p, "fields": self._values(types, f"{p}_")} for p, types in n.inputs.items()]
        return {"element": n.name, "ports": ports}

    def _element(self, n: ElementNode) -> dict[str, Any]:
        where = f"{os.path.basename(n.loc.file)}:{n.loc.line}"
        prologue = [f"{n.persistent[attr].layout.name} *const {attr} = {n.persistent[attr].pointer};"
                    for attr in n.plan.pointers]
        epilogue = [f"{v}(state);" for _, v, _ in self.ir.out_edges(n.name, kind=EdgeKind.ORDER)]
        body = ""
        if n.role == Role.ARGS:
            out = next(iter(n.outputs))
            args = ["state"] + [f"arg{i}" for i in range(len(n.outputs[out]))]
            epilogue.insert(0, f"{port_function(n.name, out)}({', '.join(args)});")
        elif n.role == Role.RETURN:
            slot = self._slot(n.segment)
            epilogue[:0] = [f"{slot}.set = true;"] + ([f"{slot}.value = inp_0;"]
                                                      if n.inputs["inp"] else [])
        elif n.role in (Role.ENQUEUE, Role.DEQUEUE, Role.SAVE, Role.RELEASE):
            epilogue[:0] = self._queue_statements(n)
        elif n.role in _CACHE_BODIES:
            view = next(v for v in self.caches if v.cache.name == n.cache)
            epilogue[:0] = _CACHE_BODIES[n.role](view, n)
        else:
            body = n.plan.body
        if not _mentions("state", [body] + prologue + epilogue):
            prologue.insert(0, "(void)state;")          # an element that ignores the packet
        return {"name": n.name, "cls": n.cls_name, "where": where, "signature": self._signature(n),
                "prologue": prologue, "body": body, "epilogue": epilogue}

    def _queue_statements(self, n: ElementNode) -> list[str]:
        q = self.ir.queues[n.queue]
        access = self._access(q)
        if n.role == Role.ENQUEUE:
            return qgen.enqueue_body(n, self.channels[q.name][n.channel], access)
        if n.role == Role.DEQUEUE:
            return qgen.dequeue_body(n, q, len(self.ir.segments[n.segment].cores), access)
        if n.role == Role.SAVE:
            return qgen.save_body(n, self.channels[q.name][n.channel], access)
        return qgen.release_body(q, access)

    def _dispatchers(self, n: ElementNode) -> list[dict[str, Any]]:
        result = []
        for port, types in n.outputs.items():
            calls = []
            for _, v, d in self.ir.out_edges(n.name, port):
                target = self.ir.node(v)
                values = [f"v{i}" for i in range(len(target.inputs[d["in_port"]]))]
                fn = f"{v}_in_{d['in_port']}" if target.join else v
                calls.append(f"{fn}({', '.join(['state'] + values)});")
            unused = [f"v{i}" for i in range(len(types)) if not _mentions(f"v{i}", calls)]
            lines = [f"(void){name};" for name in (["state"] if not calls else []) + unused]
            lines += ["floem_packet_begin();"] if n.plan.thread_source else []
            lines += calls
            if n.plan.emits_packets:
                lines.append("/* the next value emitted is a new packet */")
                lines += ["floem_packet_seq++;"] if any(m.join for m in self.nodes) else []
                lines += ["memset(state, 0, sizeof *state);"] if n.packet_state else []
            result.append({"signature": self._dispatch_signature(n, port), "lines": lines,
                           "owner": n.name, "port": port})
        if n.join:
            for port in n.inputs:
                others = [p for p in n.inputs if p != port]
                lines = [f"{n.name}_in.{port}_{i} = {port}_{i};" for i in range(len(n.inputs[port]))]
                lines.append(f"{n.name}_in.{port}_seq = floem_packet_seq;")
                ready = " && ".join(f"{n.name}_in.{p}_seq == floem_packet_seq" for p in others)
                lines.append(f"if ({ready})")
                lines.append(f"    {n.name}(state);")
                result.append({"signature": self._join_entry_signature(n, port), "lines": lines,
                               "owner": n.name, "port": port})
        return result

    def _slot(self, segment: str) -> str:
        return f"{segment}_result"

    def _return_element(self, seg: SegmentIR) -> ElementNode | None:
        return next((self.ir.node(n) for n in seg.elements if self.ir.node(n).role == Role.RETURN), None)

    def _return_type(self, seg: SegmentIR) -> str:
        ret = self._return_element(seg)
        if ret is None or not ret.inputs["inp"]:
            return ""
        return ret.inputs["inp"][0]

    def _return_slot(self, seg: SegmentIR) -> dict[str, str]:
        return {"segment": seg.name, "slot": self._slot(seg.name), "type": self._return_type(seg)}

    def _callable_signature(self, seg: SegmentIR) -> str:
        args = self.ir.node(seg.source)
        types = next(iter(args.outputs.values()))
        params = self._values(types, "arg") or ["void"]
        ret = self._return_type(seg) or "void"
        sep = "" if ret.endswith("*") else " "
        return f"{ret}{sep}{seg.name}({', '.join(params)})"

    def _callable(self, seg: SegmentIR) -> dict[str, Any]:
        args = self.ir.node(seg.source)
        count = len(next(iter(args.outputs.values())))
        has_return = self._return_element(seg) is not None
        return {"name": seg.name, "signature": self._callable_signature(seg),
                "state": seg.packet_state.name if seg.packet_state else "",
                "slot": self._slot(seg.name) if has_return else "",
                "has_value": bool(self._return_type(seg)),
                "source": seg.source, "args": [f"arg{i}" for i in range(count)],
                "default": seg.default_return or "0"}

    def _thread(self, seg: SegmentIR) -> dict[str, Any]:
        return {"segment": seg.name, "count": len(seg.cores), "source": seg.source,
                "cpus": seg.cores if seg.pinned else [-1] * len(seg.cores),
                "state": seg.packet_state.name if seg.packet_state else "",
                "manage": self.plan.threads_manage}

    def _main(self) -> dict[str, Any]:
        info = self.ir.main_info
        if info is None or self.ir.main_body is None or self.ir.main_process != self.process:
            return {"body": None, "prologue": []}
        prologue = [f"{s.layout.name} *const {s.name} = {s.pointer};"
                    for s in self.ir.states.values() if s.name in info.persistent_used]
        return {"body": self.ir.main_body, "prologue": prologue}


def _mentions(name: str, texts: list[str]) -> bool:
    """True when identifier ``name`` appears in any of the C ``texts``."""
    return any(t.kind == "ident" and t.text == name for text in texts for t in tokenize(text))
