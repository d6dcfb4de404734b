"""The per-packet fields a body overwrites on every path before the packet goes on.

A field is killed when every path from the start of the body to each place the packet
leaves it runs a plain assignment ``state->f = e`` (a statement, an operand of a comma
expression, or the value of another plain assignment) first::

    state->f = 1;                                        kills f
    if (c) state->f = 1; else state->f = 2;              kills f (both branches)
    switch (c) { case 0: state->f = 1; break;
                 default: state->f = 2; }                kills f (every case, a default)
    do { state->f = 1; } while (c);                      kills f (runs at least once)
    if (c) state->f = 1;                                 does not (the other path skips it)
    while (c) { state->f = 1; }                          does not (may run zero times)
    out(); state->f = 1;       (output multiple)         does not (the packet left first)

The packet leaves at each call of an output port; an output block or switch runs at the
end of the body, as the generated code runs it. A body without output ports leaves at its
end and at each ``return``. A body with a ``goto``, or with a ``case`` label that is not a
statement of its switch's block (Duff's device), kills nothing.
"""
from __future__ import annotations

from pycparser import c_ast

from floem.csrc.fields import state_field
from floem.csrc.forms import FORM_LABELS
from floem.csrc.model import BodyForm
from floem.csrc.visiting import call_name

#: The output forms the generated code runs at the end of the body, wherever they stand.
_RUN_LAST = frozenset({FORM_LABELS[BodyForm.BLOCK], FORM_LABELS[BodyForm.SWITCH]})
_LOOPS = (c_ast.While, c_ast.For, c_ast.DoWhile)
_CASES = (c_ast.Case, c_ast.Default)

#: The fields surely assigned where a path reaches a point; None where no path does.
Reached = set[str] | None


def kills(top: c_ast.Compound, outputs: set[str]) -> set[str]:
    """The fields body ``top`` (its statement with output ports ``outputs``) assigns on
    every path before each place the packet leaves it."""
    walk = _Walk(returns_leave=not outputs)
    try:
        walk.scan(top, outputs)
    except _Unstructured:
        return set()
    items = top.block_items or []
    last = [item for item in items if isinstance(item, c_ast.Label) and item.name in _RUN_LAST]
    end = walk.sequence([item for item in items if item not in last] + last, set())
    if not outputs:
        walk.exits.append(end)
    return _meet(*walk.exits) or set()


class _Unstructured(Exception):
    """The body jumps where following its statements in order cannot tell."""


class _Walk:
    """Follows the statements of one body forward, noting the fields assigned where the
    packet leaves (``exits``) and where a ``break`` or ``continue`` jumps."""

    def __init__(self, returns_leave: bool) -> None:
        self.returns_leave = returns_leave
        self.calling: set[int] = set()              # ids of the nodes holding an output call
        self.exits: list[Reached] = []
        self.breaks: list[list[Reached]] = []       # per enclosing loop or switch, innermost last
        self.continues: list[list[Reached]] = []    # per enclosing loop, innermost last

    def scan(self, node: c_ast.Node, outputs: set[str], switch_block: bool = False) -> bool:
        """Note the nodes under ``node`` holding an output call, and whether ``node`` does;
        raise `_Unstructured` at a ``goto`` or a case label that is not a statement of its
        switch's block (``switch_block``: ``node`` is such a block)."""
        if isinstance(node, c_ast.Goto):
            raise _Unstructured()
        calls = isinstance(node, c_ast.FuncCall) and call_name(node) in outputs
        for _, child in node.children():
            if isinstance(child, _CASES) and not switch_block:
                raise _Unstructured()
            block = isinstance(node, c_ast.Switch) and isinstance(child, c_ast.Compound)
            calls = self.scan(child, outputs, block) or calls
        if calls:
            self.calling.add(id(node))
        return calls

    def sequence(self, items: list[c_ast.Node], reached: Reached) -> Reached:
        """Run ``items`` in order (those after a jump are reached by no path: no goto)."""
        for item in items:
            if reached is None:
                break
            reached = self.statement(item, reached)
        return reached

    def statement(self, node: c_ast.Node, reached: set[str]) -> Reached:
        """The fields assigned when ``node`` completes, given those assigned before it."""
        if isinstance(node, c_ast.Compound):
            return self.sequence(node.block_items or [], reached)
        if isinstance(node, c_ast.Label):
            return self.statement(node.stmt, reached)
        if isinstance(node, c_ast.If):
            self.expression(node.cond, reached)
            otherwise = reached if node.iffalse is None else self.statement(node.iffalse, reached)
            return _meet(self.statement(node.iftrue, reached), otherwise)
        if isinstance(node, c_ast.Switch):
            return self.switch(node, reached)
        if isinstance(node, _LOOPS):
            return self.loop(node, reached)
        if isinstance(node, (c_ast.Break, c_ast.Continue)):
            targets = self.breaks if isinstance(node, c_ast.Break) else self.continues
            if targets:
                targets[-1].append(reached)
            return None
        if isinstance(node, c_ast.Return):
            self.expression(node.expr, reached)
            if self.returns_leave:
                self.exits.append(reached)
            return None
        return self.expression(node, reached)

    def expression(self, node: c_ast.Node | None, reached: set[str]) -> set[str]:
        """An expression (or declaration) evaluated whole: the packet leaves at each output
        call in it before any of its assignments counts."""
        if node is None:
            return reached
        if id(node) in self.calling:
            self.exits.append(reached)
        return reached | _assigned(node)

    def switch(self, node: c_ast.Switch, reached: set[str]) -> Reached:
        """Each case is entered from the switch (a case fallen into has assigned more);
        the switch completes by a ``break``, at the end of its last case, and, without a
        ``default``, by matching no case."""
        self.expression(node.cond, reached)
        items = (node.stmt.block_items or []) if isinstance(node.stmt, c_ast.Compound) else []
        cases = [item for item in items if isinstance(item, _CASES)]
        self.breaks.append([])
        ends = [self.sequence(case.stmts or [], reached) for case in cases]
        breaks = self.breaks.pop()
        unmatched = [] if any(isinstance(c, c_ast.Default) for c in cases) else [reached]
        return _meet(ends[-1] if ends else reached, *breaks, *unmatched)

    def loop(self, node: c_ast.While | c_ast.For | c_ast.DoWhile, reached: set[str]) -> Reached:
        """A ``do`` loop's body runs at least once, as does that of a ``for`` without a
        condition (left only by a ``break``); any other loop may run zero times."""
        if isinstance(node, c_ast.For):
            reached = self.expression(node.init, reached)
        self.expression(node.cond, reached)
        self.breaks.append([])
        self.continues.append([])
        end = self.statement(node.stmt, reached)
        if isinstance(node, c_ast.For):
            self.expression(node.next, reached)
        breaks, continues = self.breaks.pop(), self.continues.pop()
        if isinstance(node, c_ast.DoWhile):
            return _meet(end, *continues, *breaks)
        if node.cond is None:
            return _meet(*breaks)
        return reached


def _meet(*points: Reached) -> Reached:
    """The fields assigned on every path reaching any of ``points``; None if none is."""
    reached = [p for p in points if p is not None]
    return set.intersection(*reached) if reached else None


def _assigned(node: c_ast.Node) -> set[str]:
    """The fields expression ``node`` surely assigns whole with ``=``."""
    if isinstance(node, c_ast.Assignment):
        field = state_field(node.lvalue)
        inner = _assigned(node.rvalue)
        return inner | {field} if node.op == "=" and field is not None else inner
    if isinstance(node, c_ast.ExprList):
        return set().union(*(_assigned(e) for e in node.exprs))
    return set()
