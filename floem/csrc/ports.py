"""Input reads, output calls and output forms in one body's AST.

Works on the parse text of `floem.csrc.forms`: reads are calls ``inp()`` (in a
multi-value read, wrapped as ``__floem_tuple(inp())``), output calls are calls
``out(x)``, and each output form is a label ``__floem_output_<kind>:`` whose
statement holds its calls (a switch holds an if/else chain, one branch a case).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pycparser import c_ast

from floem.csrc.forms import FORM_LABELS, TUPLE_MARKER
from floem.csrc.model import Body, BodyError, BodyForm, Port
from floem.csrc.visiting import ParentVisitor, arguments, call_name, is_statement

_KIND_OF_LABEL = {label: kind for kind, label in FORM_LABELS.items()}


@dataclass
class Read:
    """One ``inp()``: how its value is taken."""

    line: int
    how: str             # "value", "tuple" or "consume"


@dataclass
class Call:
    """One call of an output port."""

    port: str
    line: int
    in_form: bool        # inside the output block or switch
    case: int | None     # switch: index of the case holding it (None: in a condition)
    direct: bool         # a whole statement of the block or case, not nested deeper


@dataclass
class OtherCall:
    """A whole statement of an output block or case that calls a function other than a
    port (a misspelled port, or a C function called for its effect)."""

    name: str
    line: int
    case: int | None     # switch: index of the case holding it


@dataclass
class FormNode:
    """One output form as the AST sees it."""

    kind: BodyForm
    line: int
    top_level: bool
    holders: list[c_ast.Node] = field(default_factory=list)  # block: its body; switch: each case


class PortVisitor(ParentVisitor):
    """Collects the reads, output calls and output forms of one body."""

    def __init__(self, body: Body, top: c_ast.Compound) -> None:
        super().__init__()
        self.inputs: dict[str, Port] = {p.name: p for p in body.inputs}
        self.outputs: dict[str, Port] = {p.name: p for p in body.outputs}
        self.top = top
        self.reads: dict[str, list[Read]] = {}
        self.calls: list[Call] = []
        self.others: list[OtherCall] = []
        self.forms: list[FormNode] = []
        self._form: FormNode | None = None

    def visit_Label(self, node: c_ast.Label) -> None:
        """An output form: note it and visit its statement inside it."""
        kind = _KIND_OF_LABEL.get(node.name)
        if kind is None:
            self.generic_visit(node)
            return
        form = FormNode(kind, node.coord.line, self.parents[-1] is self.top)
        form.holders = _switch_branches(node.stmt) if kind == BodyForm.SWITCH else [node.stmt]
        self.forms.append(form)
        outer, self._form = self._form, form
        self.generic_visit(node)
        self._form = outer

    def visit_FuncCall(self, node: c_ast.FuncCall) -> None:
        """A read of an input port or a call of an output port."""
        name = call_name(node)
        if name in self.inputs:
            self._read(node, self.inputs[name])
        elif name in self.outputs:
            self._call(node, self.outputs[name])
        elif name is not None and self._form is not None and self._form.kind != BodyForm.MULTIPLE:
            inside = self._holding(self._form)
            if inside is not None and self.parents[-1] is self._form.holders[inside]:
                case = inside if self._form.kind == BodyForm.SWITCH else None
                self.others.append(OtherCall(name, node.coord.line, case))
        self.generic_visit(node)

    def _holding(self, form: FormNode) -> int | None:
        """The index of the block or case of ``form`` the node visited is in, or None."""
        return next((k for k, holder in enumerate(form.holders)
                     if any(holder is p for p in self.parents)), None)

    def _read(self, node: c_ast.FuncCall, port: Port) -> None:
        line = node.coord.line
        if arguments(node):
            raise BodyError(f"input port '{port.name}' takes no arguments: read it as "
                            f"{port.name}()", line)
        parent = self.parents[-1]
        if (isinstance(parent, c_ast.ExprList) and len(self.parents) > 1
                and isinstance(self.parents[-2], c_ast.FuncCall)
                and call_name(self.parents[-2]) == TUPLE_MARKER):
            how = "tuple"
        elif is_statement(node, parent):
            how = "consume"
        elif len(port.types) == 1:
            how = "value"
        else:
            raise BodyError(_value_read_error(port), line)
        self.reads.setdefault(port.name, []).append(Read(line, how))

    def _call(self, node: c_ast.FuncCall, port: Port) -> None:
        line = node.coord.line
        given = len(arguments(node))
        if given != len(port.types):
            wanted = len(port.types)
            raise BodyError(f"output port '{port.name}' carries {wanted} "
                            f"value{'s' if wanted != 1 else ''}, but is called with {given} "
                            f"argument{'s' if given != 1 else ''}", line)
        form = self._form
        if form is None or form.kind == BodyForm.MULTIPLE:
            self.calls.append(Call(port.name, line, False, None, False))
            return
        inside = self._holding(form)
        direct = inside is not None and self.parents[-1] is form.holders[inside]
        case = inside if form.kind == BodyForm.SWITCH else None
        self.calls.append(Call(port.name, line, True, case, direct))


def _value_read_error(port: Port) -> str:
    if not port.types:
        return f"input port '{port.name}' carries no value: consume it with {port.name}();"
    names = ", ".join(f"{t} v{k}" for k, t in enumerate(port.types))
    return (f"input port '{port.name}' carries {len(port.types)} values: read them with "
            f"({names}) = {port.name}();")


def _switch_branches(stmt: c_ast.Node) -> list[c_ast.Compound]:
    """The statement of each case of an output switch (spelled as an if/else chain)."""
    items = (stmt.block_items or []) if isinstance(stmt, c_ast.Compound) else []
    node = items[0] if items else None
    branches: list[c_ast.Compound] = []
    while isinstance(node, c_ast.If):
        branches.append(node.iftrue)
        node = node.iffalse
    if isinstance(node, c_ast.Compound):
        branches.append(node)
    return branches
