"""`analyze`: every body parsed in one unit, its Floem forms checked and summarised.

Steps: scan each body's tokens for the Floem forms (`floem.csrc.forms`); put
the plain-C spellings of all bodies in one unit, preprocess and parse it once
(`floem.csrc.unit`); then walk each body's AST for reads, output calls and
forms (`floem.csrc.ports`) and for per-packet and persistent state
(`floem.csrc.fields`) and for the fields every path assigns (`floem.csrc.kills`), and
check the rules of the output forms.
"""
from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pycparser import c_ast

from floem.csrc.fields import StateVisitor
from floem.csrc.forms import Forms, OutputForm, asm_replacements, scan
from floem.csrc.kills import kills
from floem.csrc.model import Body, BodyError, BodyForm, BodyInfo
from floem.csrc.ports import Call, OtherCall, PortVisitor
from floem.csrc.tokens import TokenList, render
from floem.csrc.unit import INCLUDE_FILE, PRELUDE_FILE, UnitError, parse_unit
from floem.errors import FloemError, raise_together

T = TypeVar("T")


def analyze(bodies: list[Body], prelude: str = "", include_text: str = "",
            include_dirs: Sequence[str] = ()) -> dict[str, BodyInfo]:
    """Rewrite the Floem forms, parse ALL bodies with pycparser in one unit, and check them.

    `prelude` is C the compiler generates (State typedefs), `include_text` the
    user's ``floem.include`` text, `include_dirs` where ``#include "..."`` looks.
    Returns each element's `BodyInfo`; raises `FloemError` for the mistakes of every body
    (one report: a mistake in one body does not hide those in the others).
    """
    return analyze_unit(bodies, prelude, include_text, include_dirs).infos


@dataclass(frozen=True)
class Analysis:
    """What `analyze_unit` found: each element's `BodyInfo`, and the names of what the
    include text defines that a program must hold once (`floem.csrc.unit.ParsedUnit`)."""

    infos: dict[str, BodyInfo]
    defined_once: tuple[str, ...]


def analyze_unit(bodies: list[Body], prelude: str = "", include_text: str = "",
                 include_dirs: Sequence[str] = ()) -> Analysis:
    """`analyze`, with what the include text defines that a program must hold once. Bodies
    that read alike (the instances of a class) are analysed once and share the parts of
    their `BodyInfo`, which no one changes."""
    by_name: dict[str, Body] = {}
    for body in bodies:
        if not body.element.isidentifier() or not body.element.isascii():
            raise body.error(f"element name '{body.element}' is not a C identifier")
        if body.element in by_name:
            raise body.error(f"two bodies for element '{body.element}'")
        by_name[body.element] = body
    forms = _each(by_name, lambda body: scan(body.code, {p.name: p for p in body.inputs}))
    app_file = bodies[0].app_file if bodies else None
    try:
        parsed = parse_unit({name: f.parse_text() for name, f in forms.items()}, prelude,
                            _include_parse_text(include_text, app_file), include_dirs)
    except UnitError as e:
        raise _unit_error(e, by_name, app_file) from None
    analysed: dict[str, BodyInfo] = {}      # by how a body reads: a class's instances alike

    def analysis(body: Body) -> BodyInfo:
        alike = repr(dataclasses.replace(body, element="", app_line=0))
        if alike in analysed:
            return dataclasses.replace(analysed[alike], element=body.element, body=body)
        info = analysed[alike] = _analyze_body(body, forms[body.element],
                                               parsed.bodies[body.element])
        return info

    return Analysis(_each(by_name, analysis), parsed.defined_once)


def _each(bodies: dict[str, Body], function: Callable[[Body], T]) -> dict[str, T]:
    """`function` of every body, by element; the mistakes (`BodyError`) of all the bodies
    raised together, each located in its body."""
    results: dict[str, T] = {}
    errors: list[FloemError] = []
    for name, body in bodies.items():
        try:
            results[name] = function(body)
        except BodyError as e:
            errors.append(body.error(e.message, e.body_line))
    raise_together(errors)
    return results


def _include_parse_text(include_text: str, app_file: str | None) -> str:
    try:
        tokens = TokenList(include_text)
    except BodyError as e:
        raise FloemError(f"floem.include text, line {e.body_line}: {e.message}",
                         file=app_file) from None
    return render(tokens.tokens, asm_replacements(tokens))


def _unit_error(e: UnitError, bodies: dict[str, Body], app_file: str | None) -> FloemError:
    message = e.message
    if e.stubbed:
        message += (" (headers not found and read as empty: " + ", ".join(e.stubbed)
                    + "; declare the types they define in floem.include)")
    if e.element in bodies:
        body = bodies[e.element]
        last_line = len(body.code.rstrip().splitlines()) or 1
        if e.line and e.line > last_line:
            return body.error(message + " at the end of the body", last_line)
        return body.error(message, e.line)
    if e.file == INCLUDE_FILE:
        return FloemError(f"floem.include text, line {e.line}: {message}", file=app_file)
    if e.file == PRELUDE_FILE:
        return FloemError(f"State declarations, line {e.line}: {message}", file=app_file)
    return FloemError(message, file=e.file, line=e.line)


def _analyze_body(body: Body, forms: Forms, top: c_ast.Compound) -> BodyInfo:
    ports = PortVisitor(body, top)
    ports.visit(top)
    state = StateVisitor(body)
    state.visit(top)
    for port, reads in ports.reads.items():
        if len(reads) > 1:
            raise BodyError(f"input port '{port}' is read twice (body lines {reads[0].line} "
                            f"and {reads[1].line}); a port is read at most once",
                            reads[1].line)
    form = _check_form(body, forms, ports)
    if body.state_fields is not None:
        state.fields.kills = kills(top, {p.name for p in body.outputs})
    calls: dict[str, list[int]] = {}
    for call in ports.calls:
        calls.setdefault(call.port, []).append(call.line)
    switch = form == BodyForm.SWITCH
    return BodyInfo(
        element=body.element,
        reads={port: reads[0].line for port, reads in ports.reads.items()},
        form=form,
        calls=calls,
        always_fires={c.port for c in ports.calls if form == BodyForm.BLOCK and c.direct},
        switch_ports=[c.port for c in sorted(ports.calls, key=_case)] if switch else [],
        switch_has_else=switch and forms.outputs[0].cases[-1].is_else,
        fields=state.fields,
        persistent_used=state.persistent_used,
        body=body,
        consumed={port for port, reads in ports.reads.items() if reads[0].how == "consume"},
        persistent_written=state.persistent_written,
    )


def _check_form(body: Body, forms: Forms, ports: PortVisitor) -> BodyForm | None:
    """Check the output form rules; return the kind of the body's form."""
    found = forms.outputs
    if len(found) > 1:
        raise BodyError(f"a body has at most one output form (body lines {found[0].line} and "
                        f"{found[1].line})", found[1].line)
    form = ports.forms[0] if ports.forms else None
    names = ", ".join(p.name for p in body.outputs)
    if form is not None:
        if not body.outputs:
            raise BodyError("output form in an element with no output ports", form.line)
        if form.kind == BodyForm.MULTIPLE and len(body.outputs) > 1:
            raise BodyError(f"'output multiple;' needs exactly one output port, this element "
                            f"has {len(body.outputs)} ({names})", form.line)
        if not form.top_level:
            raise BodyError("an output form must be a statement at the top level of the body",
                            form.line)
    if form is None or form.kind != BodyForm.MULTIPLE:
        for call in ports.calls:
            if not call.in_form:
                raise BodyError(f"output port '{call.port}' called outside an output form: "
                                "fire ports in 'output { ... }' or 'output switch { ... }', "
                                "or declare 'output multiple;'", call.line)
    if form is None:
        if body.outputs:
            raise body.error(f"element has output ports ({names}) but its body has no output "
                             "form ('output { ... }', 'output switch { ... }' or "
                             "'output multiple;')")
        return None
    if form.kind == BodyForm.BLOCK:
        _check_block(ports, names)
    elif form.kind == BodyForm.SWITCH:
        _check_switch(ports, forms.outputs[0], names)
    return form.kind


def _not_a_port(call: OtherCall, names: str) -> BodyError:
    return BodyError(f"'{call.name}' is not an output port of this element (its ports: "
                     f"{names})", call.line)


def _looks_like_a_port(name: str, ports: list[str]) -> bool:
    """``name`` is spelled close to a port's name (a port misspelled, not a C function)."""
    return any((name.startswith(p) or p.startswith(name)) and abs(len(name) - len(p)) <= 2
               for p in ports) or bool(difflib.get_close_matches(name, ports, 1, 0.5))


def _check_block(ports: PortVisitor, names: str) -> None:
    if not ports.calls:         # firing nothing: a call spelled like a port is a typo
        for other in ports.others:
            if _looks_like_a_port(other.name, list(ports.outputs)):
                raise _not_a_port(other, names)
    first: dict[str, int] = {}
    for call in ports.calls:
        if call.port in first:
            raise BodyError(f"output port '{call.port}' is called twice in the output block "
                            f"(body lines {first[call.port]} and {call.line})", call.line)
        first[call.port] = call.line


def _case(call: Call) -> int:
    """The case of a switch holding ``call`` (`_check_switch`: each call is in one)."""
    assert call.case is not None
    return call.case


def _check_switch(ports: PortVisitor, switch: OutputForm, names: str) -> None:
    per_case: dict[int, list[Call]] = {k: [] for k in range(len(switch.cases))}
    for call in ports.calls:
        if call.case is None:
            raise BodyError(f"output port '{call.port}' called in a case condition",
                            call.line)
        per_case[call.case].append(call)
    for k, case in enumerate(switch.cases):
        calls = per_case[k]
        stray = [c for c in ports.others if c.case == k]
        if not calls and stray:
            raise _not_a_port(stray[0], names)
        if len(calls) != 1:
            raise BodyError(f"each case of an output switch calls exactly one output port; "
                            f"this one calls {len(calls)}", case.line)
        if not calls[0].direct:
            raise BodyError(f"output port '{calls[0].port}' must be called directly in its "
                            "case, not inside another statement", calls[0].line)
