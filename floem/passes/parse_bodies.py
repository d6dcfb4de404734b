"""Front end, C half: parse every element body (and ``floem.main``) with pycparser.

Before: IR nodes whose ``code`` is C text with the Floem forms.

After: every node but a callable's arguments and return has ``info`` (a `floem.csrc.BodyInfo`: ports read, output
form and calls, per-packet fields used/written, the byte ranges of typed packets read and
written or why they cannot be bounded, persistent states touched);
``ir.main_info`` holds the analysis of the main code; ``ir.include_definitions`` names
what the ``floem.include`` C defines that a program must hold once (one translation
unit keeps them so: plan_code);
``ir.size_uses[S][f]`` names the fields the size expression of variable-size
field ``f`` of state class ``S`` (by name) reads (an enqueue reads them when it sends
``f``). Mistakes in
bodies (syntax, ports read twice, output calls outside the output forms,
unknown per-packet fields) stop here with the element and body line.
"""
from __future__ import annotations

import dataclasses

from floem import csrc
from floem.ir import CCode, Device, ElementNode, PersistentState, ProgramIR, Role, StateLayout
from floem.ir.sizes import packet_view
from floem.templates import render

NAME = "parse_bodies"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({"graph"})
PROVIDES: frozenset[str | type] = frozenset({"bodies", "main_info"})
MAIN_BODY = "main"
PSEUDO_ROLES = ("args", "return", "dequeue", "cache_get_start", "cache_get_end",
                "cache_set_start", "cache_set_end")


def run(ir: ProgramIR) -> ProgramIR:
    """Analyse all bodies in one pycparser translation unit."""
    bodies = [_body(n, ir.segments[n.segment].device == Device.NIC) for n in ir.nodes()
              if n.role not in PSEUDO_ROLES]
    if ir.main.code is not None:
        bodies.append(main_body(ir.main.code, list(ir.states.values())))
    sizes = _size_bodies(ir)
    bodies += [body for _, _, body in sizes.values()]
    prelude = render("prelude.h.j2", layouts=ir.layouts)
    include_text = "\n".join(c.text for c in ir.includes)
    analysis = csrc.analyze_unit(bodies, prelude=prelude, include_text=include_text,
                                 include_dirs=ir.include_dirs())
    infos = analysis.infos
    ir.include_definitions = analysis.defined_once
    for n in ir.nodes():
        ir.replace_node(dataclasses.replace(n, info=infos.get(n.name)))
    ir.main_info = infos.get(MAIN_BODY)
    for name, (state, field, _) in sizes.items():
        ir.size_uses.setdefault(state, {})[field] = frozenset(infos[name].fields.uses)
    return ir


def _size_bodies(ir: ProgramIR) -> dict[str, tuple[str, str, csrc.Body]]:
    """A body ``(void)(SIZE);`` per variable-size field of the states queues carry."""
    states = {n.packet_state.name: n.packet_state for n in ir.nodes()
              if n.role == Role.ENQUEUE and n.packet_state}
    bodies = {}
    for state in sorted(states.values(), key=lambda s: s.name):
        fields = {f.name: str(f.type) for f in state.fields}
        for f in state.fields:
            if f.size:
                name = f"_size_{state.name}_{f.name}"
                bodies[name] = (state.name, f.name, csrc.Body(
                    element=name, code=f"(void)({f.size});", app_file=f.loc.file,
                    app_line=f.loc.line, inputs=[], outputs=[], state_fields=fields,
                    persistent={}))
    return bodies


def _body(n: ElementNode, nic: bool) -> csrc.Body:
    code = n.nic_code if nic and n.nic_code is not None else n.code
    if n.role == Role.ENQUEUE:
        full = " output switch { case 0: full(); }" if "full" in n.outputs else ""
        code = CCode(enqueue_reads(n.packet_state) + full, n.loc)
    fields = {f.name: str(f.type) for f in n.packet_state.fields} if n.packet_state else None
    return csrc.Body(
        element=n.name, code=code.text if code else "",
        app_file=code.loc.file if code else n.loc.file, app_line=code.loc.line if code else n.loc.line,
        inputs=[csrc.Port(p, [t.c for t in types]) for p, types in n.inputs.items()],
        outputs=[csrc.Port(p, [t.c for t in types]) for p, types in n.outputs.items()],
        state_fields=fields,
        persistent={attr: s.layout.name for attr, s in n.persistent.items()},
        persistent_fields={attr: _field_types(s) for attr, s in n.persistent.items()},
        packets={f.name: packet_view(f.points_to) for f in n.packet_state.fields
                 if f.typed_packet and f.points_to is not None} if n.packet_state else {},
    )


def enqueue_reads(state: StateLayout | None) -> str:
    """What an enqueue reads besides the fields it sends: ``state->qid`` (and the size
    expressions of the variable-size fields it sends: see ``ProgramIR.size_uses``)."""
    if state is None or state.field("qid") is None:
        return ""
    return "(void)state->qid;"


def main_body(code: CCode, states: list[PersistentState]) -> csrc.Body:
    """The ``floem.main`` code as a body with no ports that sees every persistent state."""
    return csrc.Body(element=MAIN_BODY, code=code.text, app_file=code.loc.file,
                     app_line=code.loc.line, inputs=[], outputs=[], state_fields=None,
                     persistent={s.name: s.layout.name for s in states},
                     persistent_fields={s.name: _field_types(s) for s in states})


def _field_types(state: PersistentState) -> dict[str, str]:
    """The C type of each field of persistent state ``state``."""
    return {f.name: str(f.type) for f in state.layout.fields}

