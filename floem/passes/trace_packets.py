"""Packet tracing, its front half (only in a build with the ``trace`` option; otherwise
this pass changes nothing): the trace id that crosses queues, and ``--trace-filter``.

Within a segment a traced packet's id lives in a thread-local variable of the runtime (the
thread runs the packet to its end); across a queue it travels in the entry, as a hidden
per-packet field ``_floem_trace`` (``uint32_t``) of the state the queue carries. The
enqueue writes it (kills it, to liveness) and the elements the dequeue feeds read it, so
liveness finds it live on every channel and puts it in the entries (code generation then
writes it from the thread's id before the copy, and reads it back in the save)::

    Parse (writes op) -> q.enq[0] ... q.deq.out0 -> Lookup (reads key)
    q channel 0 carries key                  q channel 0 carries key, _floem_trace

The ``--trace-filter`` expression is read by the C front end like a body (the program's
``floem.include`` text and State declarations around it) and kept as ``ir.trace_filter``:
which per-packet fields it reads and how many port values (``v0``, ``v1``, ...) it names;
`plan_code` decides at which packet entries it applies. Its mistakes are errors located at
``--trace-filter:1``.
"""
from __future__ import annotations

import dataclasses
import re

from floem import csrc
from floem.csrc.model import BodyError
from floem.csrc.tokens import TokenKind, TokenList
from floem.errors import FloemError
from floem.ir import CType, FieldLayout, ProgramIR, StateLayout, TraceFilter
from floem.ir.plan import TRACE_FIELD, TRACE_FILTER_FILE
from floem.templates import render

NAME = "trace_packets"
#: What this pass needs done before it, and what it gives the passes after it.
REQUIRES: frozenset[str | type] = frozenset({"bodies", "sources", "cache_fields"})
PROVIDES: frozenset[str | type] = frozenset({"trace_field"})
#: A port value the filter names: v0, v1, ...
_VALUE = re.compile(r"v(0|[1-9][0-9]*)")


def run(ir: ProgramIR) -> ProgramIR:
    """Add the trace field where queues carry per-packet state; read the filter."""
    if not ir.options.trace:
        return ir
    for state in _carried_states(ir):
        ir.replace_layout(state, state.extended(
            [FieldLayout(TRACE_FIELD, CType("uint32_t"), state.loc)]))
    for q in ir.queues.values():
        if ir.node(q.dequeuer).packet_state is None:
            continue
        for names in q.enqueuers:
            for name in names:
                if name in ir.graph:            # as liveness: only the enqueues there are
                    _add_fields(ir, name, kills={TRACE_FIELD})
        for c in range(q.channels):
            for e in ir.out_edges(q.dequeuer, f"out{c}"):
                _add_fields(ir, e.dst, uses={TRACE_FIELD})
    if ir.options.trace_filter is not None:
        ir.trace_filter = _read_filter(ir, ir.options.trace_filter)
    return ir


def _carried_states(ir: ProgramIR) -> list[StateLayout]:
    """The per-packet states some queue carries, each once."""
    states: dict[int, StateLayout] = {}
    for q in ir.queues.values():
        state = ir.node(q.dequeuer).packet_state
        if state is not None:
            states.setdefault(id(state), state)
    return list(states.values())


def _add_fields(ir: ProgramIR, name: str, uses: frozenset[str] | set[str] = frozenset(),
                kills: frozenset[str] | set[str] = frozenset()) -> None:
    """Record that element ``name`` reads ``uses`` and overwrites ``kills`` (a new analysis
    record: nodes the cache expansion copied may share the old one)."""
    n = ir.node(name)
    if n.info is None:
        return
    f = n.info.fields
    ir.replace_node(dataclasses.replace(n, info=dataclasses.replace(n.info, fields=csrc.FieldUse(
        f.uses | set(uses), f.kills | set(kills), f.writes | set(kills)))))


def _read_filter(ir: ProgramIR, expression: str) -> TraceFilter:
    """The filter analysed against every per-packet state of the program (`plan_code`
    checks each entry's own); an error at ``--trace-filter:1`` when it is not one C
    expression, does not parse, or names a field no per-packet state has."""
    values = _check_one_expression(expression)
    fields: dict[str, str] = {}
    for n in ir.nodes():
        if n.packet_state is not None:
            for f in n.packet_state.fields:
                if f.name != TRACE_FIELD:
                    fields.setdefault(f.name, str(f.type))
    body = csrc.Body(element="trace_filter", code=f"(void)({expression});",
                     app_file=TRACE_FILTER_FILE, app_line=1, inputs=[], outputs=[],
                     state_fields=fields if fields else None, persistent={})
    try:
        info = csrc.analyze(
            [body], prelude=render("prelude.h.j2", layouts=ir.layouts),
            include_text="\n".join(c.text for c in ir.includes),
            include_dirs=ir.include_dirs())["trace_filter"]
    except FloemError as e:
        raise FloemError(e.message, TRACE_FILTER_FILE, 1) from None
    expression_only = dataclasses.replace(info.body, code=expression)
    return TraceFilter(info=dataclasses.replace(info, body=expression_only), values=values)


def _check_one_expression(expression: str) -> int:
    """Check that ``expression`` is one C expression (no statement, block or preprocessor
    line); return how many port values it names (the highest ``vN`` plus one)."""
    try:
        tokens = TokenList(expression)
    except BodyError as e:
        raise FloemError(e.message, TRACE_FILTER_FILE, 1) from None
    if any(t.kind == TokenKind.PP for t in tokens.tokens):
        raise FloemError("one C expression, not a preprocessor line", TRACE_FILTER_FILE, 1)
    values = 0
    for i in tokens.significant:
        t = tokens[i]
        if t.kind == TokenKind.PUNCT and t.text in (";", "{", "}"):
            raise FloemError(f"one C expression, e.g. 'state->opcode == 1', not {t.text!r}",
                             TRACE_FILTER_FILE, 1)
        if t.kind == TokenKind.IDENT and _VALUE.fullmatch(t.text) and not tokens.is_member_name(i):
            values = max(values, int(t.text[1:]) + 1)
    if not tokens.significant:
        raise FloemError("an empty expression", TRACE_FILTER_FILE, 1)
    return values
