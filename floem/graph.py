"""``floem graph``: the program as Graphviz DOT (segments as clusters, devices coloured)."""
from __future__ import annotations

import shutil
import subprocess

from floem.errors import FloemError
from floem.ir import EdgeKind, ProgramIR, Role

DEVICE_COLOURS = {"CPU": "#dbe9f6", "NIC": "#fde2c8"}


def to_dot(ir: ProgramIR) -> str:
    """DOT text: one cluster per segment, element nodes, edges labelled with their ports."""
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
            lines.append(f'    "{n.name}" [label="{label}"];')
        lines.append("  }")
    for u, v, d in ir.graph.edges(data=True):
        if d["kind"] == EdgeKind.DATA:
            types = ", ".join(d["types"])
            if ir.node(u).role == Role.CACHE_UPDATE and d["out_port"] == "region" and \
                    ir.caches[ir.node(u).cache].policy == "write_back":
                types = "write-back: evictions" + (", misses" if ir.caches[ir.node(u).cache]
                                                   .write_miss == "no_write_alloc" else "")
            lines.append(f'  "{u}" -> "{v}" [taillabel="{d["out_port"]}", '
                         f'headlabel="{d["in_port"]}", label="{types}"];')
        else:
            lines.append(f'  "{u}" -> "{v}" [style=dashed, label="run_order"];')
    for q in ir.queues.values():
        for c, names in enumerate(q.enqueuers):
            for name in names:
                if name in ir.graph and q.dequeuer in ir.graph:
                    lines.append(f'  "{name}" -> "{q.dequeuer}" [style=dotted, '
                                 f'label="queue {q.name}[{c}]"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_graph(ir: ProgramIR, path: str) -> None:
    """Write ``path``: DOT as is, SVG or PNG rendered by Graphviz ``dot``."""
    dot = to_dot(ir)
    fmt = path.rsplit(".", 1)[-1].lower() if "." in path else "dot"
    if fmt in ("dot", "gv"):
        with open(path, "w") as f:
            f.write(dot)
        return
    if fmt not in ("svg", "png", "pdf"):
        raise FloemError(f"floem graph: cannot write {path!r}: use .dot, .svg, .png or .pdf")
    if shutil.which("dot") is None:
        raise FloemError(f"floem graph: writing {fmt.upper()} needs Graphviz 'dot' "
                         "(apt-get install graphviz); .dot output works without it")
    proc = subprocess.run(["dot", f"-T{fmt}", "-o", path], input=dot.encode(), capture_output=True)
    if proc.returncode != 0:
        raise FloemError(f"floem graph: dot failed: {proc.stderr.decode().strip()}")
