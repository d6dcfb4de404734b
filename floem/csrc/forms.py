"""The Floem forms of a body, found on its tokens, and their plain-C spellings.

A body is C plus four forms that C cannot parse as they stand:

* ``(T a, T b) = inp();`` reads a multi-value port into several variables;
* ``output { ... }`` fires output ports at the end of the body;
* ``output switch { case C: a(x); ... else: b(); }`` fires one of them;
* ``output multiple;`` lets the body call its one output port anywhere.

`scan` finds them on the tokens (so comments and strings never confuse it).
`Forms.parse_text` spells them as C that pycparser reads with every line where
it was, so the AST can be checked and mapped back to body lines::

    (int a, int b) = inp();    ->  int a = __floem_tuple(); int b = __floem_tuple(inp());
    output { a(x); }           ->  __floem_output_block: { a(x); }
    output switch { case c: a(); else: b(); }
                               ->  __floem_output_switch: { if (c) { a(); } else { b(); } }
    output multiple;           ->  __floem_output_multiple: ;
    asm volatile ("pause");    ->  __floem_asm();

Input reads ``inp()`` and output calls ``out(x)`` are already C calls.
"""
from __future__ import annotations

import functools

from dataclasses import dataclass

from floem.csrc.model import BodyError, BodyForm, Port
from floem.csrc.tokens import TokenKind, TokenList, render

#: Label marking each output form in the parse text, by form kind.
FORM_LABELS = {BodyForm.BLOCK: "__floem_output_block", BodyForm.SWITCH: "__floem_output_switch",
               BodyForm.MULTIPLE: "__floem_output_multiple"}
#: Function wrapping the values of a multi-value read in the parse text.
TUPLE_MARKER = "__floem_tuple"
#: Call standing for an inline assembly statement in the parse text.
ASM_MARKER = "__floem_asm"
#: How the markers read in user terms, for error messages.
MARKER_SPELLING = {**{label: "output" for label in FORM_LABELS.values()},
                   TUPLE_MARKER: "=", ASM_MARKER: "asm"}

_CONTROL = ("if", "while", "for", "switch")
_ASM = ("asm", "__asm__", "__asm")
_ASM_QUALIFIERS = ("volatile", "__volatile__", "__volatile", "goto", "inline", "__inline__")


@dataclass
class TupleRead:
    """``(T a, T b) = port();``: token indexes of its parts."""

    port: str
    line: int
    open: int            # '(' of the tuple
    commas: list[int]    # ',' between items
    close: int           # ')' of the tuple
    assign: int          # '='
    call: int            # the port name
    end: int             # ';'

    def item_replacements(self, values: list[str]) -> dict[int, str]:
        """Turn the tuple into ``a = values[0]; b = values[1] ...`` (all but the last value)."""
        replace = {self.open: "", self.close: ""}
        for comma, value in zip(self.commas, values):
            replace[comma] = f" = {value};"
        return replace


@dataclass
class SwitchCase:
    """One ``case COND:`` or ``else:`` of an output switch."""

    keyword: int         # 'case' or 'else'
    colon: int
    is_else: bool
    line: int


@dataclass
class OutputForm:
    """One ``output ...`` form: its kind and token span."""

    kind: BodyForm
    line: int
    start: int           # the 'output' token
    end: int             # its closing '}' or ';'
    cases: list[SwitchCase]


@dataclass
class Forms:
    """The tokens of one body and the Floem forms in them."""

    tokens: TokenList
    tuples: list[TupleRead]
    outputs: list[OutputForm]

    def parse_text(self) -> str:
        """The body as plain C for pycparser, every token on its original line."""
        replace = asm_replacements(self.tokens)
        for t in self.tuples:
            replace.update(t.item_replacements([f"{TUPLE_MARKER}()"] * len(t.commas)))
            replace[t.assign] = f"= {TUPLE_MARKER}("
            replace[t.end] = ");"
        for form in self.outputs:
            replace.update(form_replacements(self.tokens, form, FORM_LABELS[form.kind] + ":"))
        return render(self.tokens.tokens, replace)


def scan(code: str, inputs: dict[str, Port]) -> Forms:
    """Tokenize a body and find its Floem forms; raises `BodyError` on malformed ones. The
    instances of an element class share one (no one changes it)."""
    return _scan(code, tuple((p.name, tuple(p.types)) for p in inputs.values()))


@functools.lru_cache(maxsize=1024)
def _scan(code: str, inputs: tuple[tuple[str, tuple[str, ...]], ...]) -> Forms:
    """`scan` of a body with input ports ``inputs`` (name, C types)."""
    ports = {name: Port(name, list(types)) for name, types in inputs}
    tl = TokenList(code)
    tuples = [t for i in tl.significant if (t := _tuple_at(tl, i, ports)) is not None]
    outputs = [f for i in tl.significant if (f := _output_form_at(tl, i)) is not None]
    return Forms(tl, tuples, outputs)


def _starts_statement(tl: TokenList, index: int) -> bool:
    """Can a statement start at significant token `index` (judging by what precedes it)?"""
    before = tl.prev(index)
    if before is None or tl.text_is(before, ";", "{", "}", ":", "else", "do"):
        return True
    return tl.text_is(before, ")") and tl.text_is(tl.prev(tl.opener[before]), *_CONTROL)


def _tuple_at(tl: TokenList, index: int, inputs: dict[str, Port]) -> TupleRead | None:
    if not tl.text_is(index, "(") or not _starts_statement(tl, index):
        return None
    close = tl.match[index]
    assign = tl.next(close)
    if not tl.text_is(assign, "="):
        return None
    call = tl.next(assign)
    if call is None or tl[call].kind != TokenKind.IDENT or tl[call].text not in inputs:
        return None
    call_open = tl.next(call)
    commas = [i for i in tl.between(index, close) if tl[i].text == ","]
    if not tl.text_is(call_open, "(") or not commas:
        return None
    port = inputs[tl[call].text]
    line = tl[call].line
    end = tl.next(tl.match[call_open])
    if not tl.text_is(end, ";"):
        raise BodyError(f"expected ';' after the read of input port '{port.name}'", line)
    for left, right in zip([index, *commas], [*commas, close]):
        if tl.next(left) == right:
            raise BodyError(f"empty item in the read of input port '{port.name}'", tl[right].line)
    if len(commas) + 1 != len(port.types):
        raise BodyError(f"input port '{port.name}' carries {_values(port)}, but "
                        f"{len(commas) + 1} variables receive them", line)
    return TupleRead(port.name, line, index, commas, close, assign, call, end)


def _values(port: Port) -> str:
    if not port.types:
        return "no value"
    count = "1 value" if len(port.types) == 1 else f"{len(port.types)} values"
    return f"{count} ({', '.join(port.types)})"


def _output_form_at(tl: TokenList, index: int) -> OutputForm | None:
    token = tl[index]
    if token.kind != TokenKind.IDENT or token.text != "output" or tl.is_member_name(index):
        return None
    word = tl.next(index)
    if tl.text_is(word, "{"):
        return OutputForm(BodyForm.BLOCK, token.line, index, tl.match[word], [])
    if tl.text_is(word, "switch"):
        brace = tl.next(word)
        if not tl.text_is(brace, "{"):
            raise BodyError("expected '{' after 'output switch'", token.line)
        end = tl.match[brace]
        return OutputForm(BodyForm.SWITCH, token.line, index, end, _switch_cases(tl, brace, end))
    if tl.text_is(word, "multiple"):
        semi = tl.next(word)
        if not tl.text_is(semi, ";"):
            raise BodyError("expected ';' after 'output multiple'", token.line)
        return OutputForm(BodyForm.MULTIPLE, token.line, index, semi, [])
    return None


def _switch_cases(tl: TokenList, brace: int, end: int) -> list[SwitchCase]:
    items = tl.between(brace, end)
    cases: list[SwitchCase] = []
    k = 0
    while k < len(items):
        token = tl[items[k]]
        is_case = token.text == "case" and token.kind == TokenKind.IDENT
        is_else = (token.text == "else" and token.kind == TokenKind.IDENT
                   and k + 1 < len(items) and tl.text_is(items[k + 1], ":"))
        if is_case or is_else:
            if cases and cases[-1].is_else:
                raise BodyError("'else:' must be the last case of an output switch", token.line)
            colon = k + 1 if is_else else _case_colon(tl, items, k)
            cases.append(SwitchCase(items[k], items[colon], is_else, token.line))
            k = colon
        elif not cases:
            raise BodyError("expected 'case COND:' or 'else:' in output switch", token.line)
        k += 1
    if not cases:
        raise BodyError("output switch has no cases", tl[brace].line)
    return cases


def _case_colon(tl: TokenList, items: list[int], k: int) -> int:
    """Position in `items` of the ':' ending the case at `k` (skipping `?:` colons)."""
    pending = 0
    for j in range(k + 1, len(items)):
        text = tl[items[j]].text
        if text == "?":
            pending += 1
        elif text == ":" and pending:
            pending -= 1
        elif text == ":":
            if j == k + 1:
                raise BodyError("'case' without a condition", tl[items[k]].line)
            return j
        elif text in (";", "case"):
            break
    raise BodyError("'case' without ':' in output switch", tl[items[k]].line)


def form_replacements(tl: TokenList, form: OutputForm, label: str) -> dict[int, str]:
    """Spell an output form as C: `label` replaces ``output``; a switch becomes if/else."""
    replace = {form.start: label}
    if form.kind in (BodyForm.SWITCH, BodyForm.MULTIPLE):
        replace[tl.after(form.start)] = ""
    for k, case in enumerate(form.cases):
        if case.is_else:
            replace[case.keyword] = "} else" if k else ""
            replace[case.colon] = " {" if k else "{"
        else:
            replace[case.keyword] = "} else if (" if k else "if ("
            replace[case.colon] = ") {"
    if form.kind == BodyForm.SWITCH:
        replace[form.end] = "} }"
    return replace


def asm_replacements(tl: TokenList) -> dict[int, str]:
    """Replace inline assembly statements by a call pycparser can read, keeping lines."""
    replace: dict[int, str] = {}
    for i in tl.significant:
        if tl[i].text not in _ASM or not _starts_statement(tl, i):
            continue
        group = tl.next(i)
        while tl.text_is(group, *_ASM_QUALIFIERS):
            group = tl.next(group)
        if not tl.text_is(group, "("):
            continue
        for j in range(i, tl.match[group] + 1):
            replace[j] = "\n" * tl[j].text.count("\n")
        replace[i] = f"{ASM_MARKER}()"
    return replace
