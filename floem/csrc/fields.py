"""Per-packet state fields and persistent states referenced by one body's AST.

A reference ``state->f`` (or ``state.f``) is classified by the expression around it:

======================================  =====  =====  ======
expression                              use    kill   write
======================================  =====  =====  ======
``x = state->f``, ``g(state->f.a)``     yes
``state->f = e;`` (top-level statement)        yes    yes
``state->f = e`` (nested)                             yes
``state->f.a = e``, ``state->arr[i] = e``             yes
``state->p->a = e``, ``*state->p = e``  yes           yes
``state->f += e``, ``state->f++``       yes           yes
``&state->f``                           yes           yes
``g(state->p)`` (pointer/array field)   yes           yes
``sizeof(state->f)``
======================================  =====  =====  ======

A top-level statement is one of the body itself or of its output block: it
runs on every execution. The bare ``state`` (passed whole) uses and writes
every field. Calls of the functions in `_READ_ONLY_CALLS` do not write their
pointer arguments, and those in `_WRITES_FIRST` write their first one only.
"""
from __future__ import annotations

from pycparser import c_ast

from floem.csrc.forms import FORM_LABELS
from floem.csrc.model import Body, BodyError, FieldUse
from floem.csrc.visiting import ParentVisitor, call_name

STATE = "state"

_READ_ONLY_CALLS = frozenset({
    "printf", "fprintf", "puts", "fputs", "fwrite", "write", "send", "sendto",
    "strlen", "strnlen", "strcmp", "strncmp", "strcasecmp", "strncasecmp", "memcmp",
    "strchr", "strrchr", "strstr", "memchr", "atoi", "atol", "atoll", "atof",
    "htons", "htonl", "ntohs", "ntohl", "free"})
_WRITES_FIRST = frozenset({
    "memcpy", "memmove", "memset", "strcpy", "strncpy", "strcat", "strncat",
    "sprintf", "snprintf", "read", "recv", "recvfrom", "fread"})
_INCREMENTS = frozenset({"++", "--", "p++", "p--"})
_UNEVALUATED = frozenset({"sizeof", "_Alignof"})


class StateVisitor(ParentVisitor):
    """Collects how one body uses the per-packet state and which persistent states it names."""

    def __init__(self, body: Body, top: c_ast.Compound) -> None:
        super().__init__()
        self.body = body
        self.fields = FieldUse()
        self.persistent_used: set[str] = set()
        self._ports = {p.name for p in body.inputs + body.outputs}
        self._local_state = False
        self._unevaluated = 0
        self._unconditional = [top] + [
            item.stmt for item in top.block_items or []
            if isinstance(item, c_ast.Label) and item.name == FORM_LABELS["block"]]

    def visit_Decl(self, node: c_ast.Decl) -> None:
        """A local named ``state`` is the user's own variable (only without per-packet state)."""
        member = isinstance(self.parents[-1], (c_ast.Struct, c_ast.Union, c_ast.ParamList))
        if node.name == STATE and not member:
            if self.body.state_fields is not None:
                raise BodyError("'state' names the per-packet state here: rename this "
                                "variable", node.coord.line)
            self._local_state = True
        self.generic_visit(node)

    def visit_NamedInitializer(self, node: c_ast.NamedInitializer) -> None:
        """``.name = expr``: the designator names a member, not a variable."""
        self.visit_children(node, [node.expr])

    def visit_UnaryOp(self, node: c_ast.UnaryOp) -> None:
        """``sizeof`` and ``_Alignof`` do not evaluate their operand."""
        unevaluated = node.op in _UNEVALUATED
        self._unevaluated += unevaluated
        self.generic_visit(node)
        self._unevaluated -= unevaluated

    def visit_StructRef(self, node: c_ast.StructRef) -> None:
        """``state->f``: a per-packet field; otherwise only the base is a reference."""
        base = node.name.name if isinstance(node.name, c_ast.ID) else None
        if base == STATE and not self._local_state:
            self._field(node)
        elif base in self.body.persistent and node.type == ".":
            raise BodyError(f"persistent state '{base}' is a pointer: write "
                            f"{base}->{node.field.name}", node.coord.line)
        else:
            self.visit_children(node, [node.name])

    def visit_ID(self, node: c_ast.ID) -> None:
        """A name: a persistent state, or the whole per-packet state."""
        if node.name in self.body.persistent:
            self.persistent_used.add(node.name)
        elif node.name == STATE and not self._local_state:
            self._check_state(node.coord.line)
            if not self._unevaluated:
                every = set(self.body.state_fields)
                self.fields.uses |= every
                self.fields.writes |= every

    def _check_state(self, line: int) -> None:
        if self.body.state_fields is None:
            raise BodyError("'state' used, but this element has no per-packet state "
                            "(create it inside a Flow with a PerPacket state)", line)

    def _field(self, ref: c_ast.StructRef) -> None:
        line = ref.coord.line
        self._check_state(line)
        name = ref.field.name
        if name not in self.body.state_fields:
            known = ", ".join(sorted(self.body.state_fields)) or "none"
            raise BodyError(f"the per-packet state has no field '{name}' (fields: {known})", line)
        if self._unevaluated:
            return
        node, steps, k = ref, [], len(self.parents) - 1
        while k >= 0 and (step := _step(self.parents[k], node)) is not None:
            steps.append(step)
            node, k = self.parents[k], k - 1
        parent = self.parents[k] if k >= 0 else None
        effect = self._effect(node, steps, parent, self.parents[k - 1] if k > 0 else None, name)
        for kind in effect:
            getattr(self.fields, kind).add(name)

    def _effect(self, node: c_ast.Node, steps: list[str], parent: c_ast.Node | None,
                grandparent: c_ast.Node | None, name: str) -> tuple[str, ...]:
        """Which of uses/kills/writes `node` (the field reached through `steps`) makes."""
        field_type = self.body.state_fields[name]
        is_array = "[" in field_type
        if isinstance(parent, c_ast.Assignment) and parent.lvalue is node:
            if parent.op != "=":
                return ("uses", "writes")
            if not steps:
                top_level = any(grandparent is c for c in self._unconditional)
                return ("kills", "writes") if top_level else ("writes",)
            return ("uses", "writes") if _reads_through(steps, is_array) else ("writes",)
        if isinstance(parent, c_ast.UnaryOp) and (parent.op in _INCREMENTS or parent.op == "&"):
            return ("uses", "writes")
        if (isinstance(parent, c_ast.ExprList) and isinstance(grandparent, c_ast.FuncCall)
                and not steps and (is_array or "*" in field_type)
                and _call_writes(grandparent, _position(parent, node), self._ports)):
            return ("uses", "writes")
        return ("uses",)


def _step(parent: c_ast.Node, node: c_ast.Node) -> str | None:
    """How `parent` reaches into `node` when `node` is its base: '.', '->', '[]', '*'."""
    if isinstance(parent, c_ast.StructRef) and parent.name is node:
        return parent.type
    if isinstance(parent, c_ast.ArrayRef) and parent.name is node:
        return "[]"
    if isinstance(parent, c_ast.UnaryOp) and parent.op == "*" and parent.expr is node:
        return "*"
    return None


def _reads_through(steps: list[str], is_array: bool) -> bool:
    """Does writing through `steps` read the field (a pointer in it) first?"""
    for k, step in enumerate(steps):
        if step in ("->", "*") or (step == "[]" and not (k == 0 and is_array)):
            return True
    return False


def _position(args: c_ast.ExprList, node: c_ast.Node) -> int:
    return next(k for k, arg in enumerate(args.exprs) if arg is node)


def _call_writes(call: c_ast.FuncCall, position: int, ports: set[str]) -> bool:
    """May `call` write through the pointer passed as argument `position`?"""
    name = call_name(call)
    if name in ports or name in _READ_ONLY_CALLS:
        return False
    return name not in _WRITES_FIRST or position == 0
