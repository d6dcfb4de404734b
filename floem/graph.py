"""``floem graph``: the program as Graphviz DOT (segments as clusters, devices coloured),
with what each queue channel carries and, given a run's counters, packets on every edge and
drops on the elements."""
from __future__ import annotations

import shutil
import subprocess

from floem.errors import FloemError
from floem.ir import (CachePolicy, Device, EdgeKind, EntryLayouts, Home, ProgramIR, QueueIR, Role,
                      WriteMiss)
from floem.stats import QueueCounts, RunCounts

DEVICE_COLOURS = {"CPU": "#dbe9f6", "NIC": "#fde2c8"}
DROP_COLOUR = "#c0392b"


def to_dot(ir: ProgramIR, run: RunCounts | None = None) -> str:
    """DOT text: one cluster per segment, element nodes, edges labelled with their ports
    and types, queue channels with the fields they carry; with ``run`` (a run's counters),
    packets in on elements, packets on edges, the drops of elements that sent some packets
    nowhere (outlined), and what each queue took in and dropped."""
    counts = run.elements if run is not None else {}
    queue_counts = run.queues if run is not None else {}
    lines = [f'digraph "{ir.name}" {{', "  rankdir=LR;",
             '  node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=9];']
    for seg in ir.segments.values():
        colour = DEVICE_COLOURS.get(seg.device, "#eeeeee")
        lines += [f'  subgraph "cluster_{seg.name}" {{',
                  f'    label="{seg.name} ({seg.kind}, {seg.device}, cores {seg.cores})";',
                  f'    style=filled; fillcolor="{colour}";']
        for name in seg.elements:
            n = ir.node(name)
            kind = n.role.replace("_", " ") if n.role.startswith("cache") else n.cls_name
            label = f"{n.name}\\n{kind}" + ("\\n[join]" if n.join else "")
            e = counts.get(name)
            dropped = e is not None and bool(e.ended) and bool(n.outputs)
            if e is not None and e.runs is not None:
                label += f"\\nin {e.runs}" + (f", dropped {e.ended}" if dropped else "")
            style = f', color="{DROP_COLOUR}", penwidth=2' if dropped else ""
            lines.append(f'    "{n.name}" [label="{label}"{style}];')
        lines.append("  }")
    for edge in ir.edges():
        u, v = edge.src, edge.dst
        if edge.kind == EdgeKind.DATA:
            types = ", ".join(t.c for t in edge.types)
            if ir.node(u).role == Role.CACHE_UPDATE and edge.out_port == "region" and \
                    ir.caches[ir.node(u).cache].policy == CachePolicy.WRITE_BACK:
                types = "write-back: evictions" + (", misses" if ir.caches[ir.node(u).cache]
                                                   .write_miss == WriteMiss.NO_WRITE_ALLOC else "")
            sent = counts[u].outs.get(edge.out_port) if u in counts else None
            label = types if sent is None else f"{sent} pkts" + (f"\\n{types}" if types else "")
            lines.append(f'  "{u}" -> "{v}" [taillabel="{edge.out_port}", '
                         f'headlabel="{edge.in_port}", label="{label}"];')
        else:
            lines.append(f'  "{u}" -> "{v}" [style=dashed, label="run_order"];')
    for q in ir.queues.values():
        carried = _carried(ir, q)
        taken = _taken(ir, q, queue_counts.get(q.name))
        for c, names in enumerate(q.enqueuers):
            for name in names:
                if name in ir.graph and q.dequeuer in ir.graph:
                    lines.append(f'  "{name}" -> "{q.dequeuer}" [style=dotted, '
                                 f'label="queue {q.name}[{c}]{carried[c]}{taken}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _taken(ir: ProgramIR, q: QueueIR, instances: list[QueueCounts] | None) -> str:
    """A label line with what queue ``q``'s instances took in, gave out and dropped in a
    run (all its channels together: the instances count entries, not channels), as far as
    they count it: the NIC's end of a queue in host memory counts nothing there."""
    if not instances:
        return ""
    home = ir.queue_home(q.name)
    nic_end = {end for end, device in (("enq", home.enq_device), ("deq", home.deq_device))
               if device == Device.NIC and home.home == Home.HOST}
    parts = [f"{sum(getattr(i, what) for i in instances)} {what}"
             for what, end in (("enqueued", "enq"), ("dequeued", "deq"), ("dropped", "enq"))
             if end not in nic_end]
    every = " (all channels)" if q.channels > 1 else ""
    return f"\\n{', '.join(parts)}{every}"


def _carried(ir: ProgramIR, q: QueueIR) -> list[str]:
    """Per channel of ``q``, a label line saying what its entries carry (once their layouts
    are made): the fields and their bytes."""
    if EntryLayouts not in ir.results:
        return [""] * q.channels
    result = []
    for ch in ir.entry_layouts.entries[q.name]:
        names = ", ".join(f.name for f in ch.fixed + ch.variable) or "nothing"
        size = ch.fixed_bytes
        result.append(f"\\n{names}" + (f" ({size} B)" if size is not None else ""))
    return result


#: The file name endings `write_graph` writes.
GRAPH_FORMATS = ("dot", "gv", "svg", "png", "pdf")


def write_graph(ir: ProgramIR, path: str, run: RunCounts | None = None) -> None:
    """Write ``path``: DOT as is, SVG or PNG rendered by Graphviz ``dot``."""
    dot = to_dot(ir, run)
    fmt = path.rsplit(".", 1)[-1].lower() if "." in path else "dot"
    if fmt in ("dot", "gv"):
        with open(path, "w") as f:
            f.write(dot)
        return
    if fmt not in GRAPH_FORMATS:
        raise FloemError(f"floem graph: cannot write {path!r}: use .dot, .svg, .png or .pdf")
    if shutil.which("dot") is None:
        raise FloemError(f"floem graph: writing {fmt.upper()} needs Graphviz 'dot' "
                         "(apt-get install graphviz); .dot output works without it")
    proc = subprocess.run(["dot", f"-T{fmt}", "-o", path], input=dot.encode(), capture_output=True)
    if proc.returncode != 0:
        raise FloemError(f"floem graph: dot failed: {proc.stderr.decode().strip()}")
