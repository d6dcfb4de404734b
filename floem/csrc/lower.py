"""`lower`: one analysed body as plain C for the element's generated function.

The original text is rewritten token by token, so comments and layout stay
and the user recognises the body in the generated C::

    int x = inp();                  int x = inp_arg;
    output { out(x + 1); }    ->    { out_fire(state, x + 1); }    (moved to the end)
    state.count++;                  state->count++;

``#line`` directives at the start and around the moved output form point gcc
at the app-file lines of the body.
"""
from __future__ import annotations

import functools

from floem.csrc.fields import STATE
from floem.csrc.forms import Forms, form_replacements, scan
from floem.csrc.model import BodyForm, BodyInfo
from floem.csrc.tokens import TokenKind, identifiers, render


def lower(info: BodyInfo, read_exprs: dict[str, list[str]], output_funcs: dict[str, str],
          call_args: str = "state") -> str:
    """The body as plain C to paste inside the element's generated C function.

    `read_exprs` gives, per input port the body reads, the C expression of each
    value; `output_funcs` the function firing each output port called, which
    takes `call_args` first (e.g. ``"state"``; ``""`` for nothing). The result
    ends with a newline; the caller resets ``#line`` after it.
    """
    return lower_named(info, read_exprs, output_funcs, call_args)[0]


def lower_named(info: BodyInfo, read_exprs: dict[str, list[str]], output_funcs: dict[str, str],
                call_args: str = "state") -> tuple[str, frozenset[str]]:
    """`lower`, and the identifiers (and keywords) the lowered body names: those of the
    body's tokens left as they are and of what replaced the others (as
    ``identifiers(lower(...))``, without reading the new text again)."""
    body = info.body
    forms = scan(body.code, {p.name: p for p in body.inputs})
    tl = forms.tokens
    replace = _reads(info, forms, read_exprs) | _calls_and_state(info, forms, output_funcs,
                                                                  call_args)
    form = forms.outputs[0] if forms.outputs else None
    if form is not None:
        replace.update(form_replacements(tl, form, ""))
        if form.kind == BodyForm.MULTIPLE:
            replace[form.end] = ""
    named = frozenset(t.text for i, t in enumerate(tl.tokens)
                      if t.kind == TokenKind.IDENT and i not in replace)
    return _lowered(info, forms, replace), named.union(*map(identifiers, replace.values()))


def _lowered(info: BodyInfo, forms: Forms, replace: dict[int, str]) -> str:
    """The text of the body's tokens with ``replace``, its output form moved last."""
    body = info.body
    tl = forms.tokens
    directive = _LineDirective(body.app_file, body.app_line)
    form = forms.outputs[0] if forms.outputs else None
    if form is None or form.kind == BodyForm.MULTIPLE:
        return directive(1) + _line_end(render(tl.tokens, replace))
    brace = tl.after(form.start) if form.kind == BodyForm.BLOCK else tl.after(tl.after(form.start))
    before = render(tl.tokens, replace, 0, form.start)
    moved = render(tl.tokens, replace, brace, form.end + 1)
    rest = render(tl.tokens, replace, form.end + 1)
    text = directive(1) + _line_end(before) if before.strip() else ""
    if rest.strip():
        text += directive(tl[form.end].line) + _line_end(rest)
    indent = " " * (tl[form.start].column - 1)     # where the `output` keyword stood
    return text + directive(tl[brace].line) + indent + _line_end(moved)


def _calls_and_state(info: BodyInfo, forms: Forms, output_funcs: dict[str, str],
                     call_args: str) -> dict[int, str]:
    """Replacements for output calls ``out(x)`` and for ``state.f``."""
    tl = forms.tokens
    outputs = {p.name for p in info.body.outputs}
    replace: dict[int, str] = {}
    for i in tl.significant:
        token = tl[i]
        if token.kind != TokenKind.IDENT or tl.is_member_name(i):
            continue
        after = tl.next(i)
        if token.text in outputs and tl.text_is(after, "("):
            if token.text not in output_funcs:
                raise ValueError(f"lower({info.element}): no function for output port "
                                 f"'{token.text}'")
            replace[i] = output_funcs[token.text]
            has_args = tl.next(after) != tl.match[after]
            replace[after] = f"({call_args}, " if call_args and has_args else f"({call_args}"
        elif token.text == STATE and info.body.state_fields is not None \
                and tl.text_is(after, "."):
            replace[after] = "->"
    return replace


def _reads(info: BodyInfo, forms: Forms, read_exprs: dict[str, list[str]]) -> dict[int, str]:
    """Replacements for the input reads: tuples, ``inp()`` values and consumed reads."""
    tl = forms.tokens
    ports = {p.name: p for p in info.body.inputs}
    replace: dict[int, str] = {}
    tuple_values: dict[int, str] = {}
    for t in forms.tuples:
        values = [_parenthesized(v) for v in _exprs(info, read_exprs, ports[t.port].types, t.port)]
        replace.update(t.item_replacements(values))
        tuple_values[t.call] = values[-1]
    for i in tl.significant:
        name = tl[i].text
        call = tl.next(i)
        if tl[i].kind != TokenKind.IDENT or name not in ports or tl.is_member_name(i) \
                or not tl.text_is(call, "("):
            continue
        values = [_parenthesized(v) for v in _exprs(info, read_exprs, ports[name].types, name)]
        if i in tuple_values:
            replace[i] = tuple_values[i]
        elif name in info.consumed:
            replace[i] = "(" + ", ".join([f"(void){v}" for v in values] or ["(void)0"]) + ")"
        else:
            replace[i] = values[0]
        replace[call] = replace[tl.match[call]] = ""
    return replace


def _exprs(info: BodyInfo, read_exprs: dict[str, list[str]], types: list[str],
           port: str) -> list[str]:
    values = read_exprs.get(port)
    if values is None or len(values) != len(types):
        raise ValueError(f"lower({info.element}): input port '{port}' needs {len(types)} "
                         f"read expression(s), got {values!r}")
    return values


def _parenthesized(expr: str) -> str:
    return expr if expr.isidentifier() else f"({expr})"


def _line_end(text: str) -> str:
    """`text` ending with one newline, without trailing blanks on its last line."""
    text = text.rstrip(" \t")
    return text if text.endswith("\n") else text + "\n"


class _LineDirective:
    """``#line`` directives into one app file, from body lines."""

    def __init__(self, app_file: str, app_line: int) -> None:
        self.app_line = app_line
        self.file = _c_string(app_file)

    def __call__(self, body_line: int) -> str:
        return f"#line {self.app_line + body_line - 1} {self.file}\n"


@functools.lru_cache(maxsize=64)
def _c_string(text: str) -> str:
    """`text` as a C string literal."""
    out = []
    for byte in text.encode():
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'
