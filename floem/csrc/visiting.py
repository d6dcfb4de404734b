"""A pycparser `NodeVisitor` that knows where it is, and facts about positions."""
from __future__ import annotations

from pycparser import c_ast


class ParentVisitor(c_ast.NodeVisitor):
    """Visits like `c_ast.NodeVisitor`, keeping the ancestors of the node visited."""

    def __init__(self) -> None:
        self.parents: list[c_ast.Node] = []

    def generic_visit(self, node: c_ast.Node) -> None:
        """Visit every child of `node`, with `node` as their parent."""
        self.visit_children(node, [child for _, child in node.children()])

    def visit_children(self, node: c_ast.Node, children: list[c_ast.Node | None]) -> None:
        """Visit some children of `node` only, with `node` as their parent."""
        self.parents.append(node)
        for child in children:
            if child is not None:
                self.visit(child)
        self.parents.pop()


def call_name(node: c_ast.FuncCall) -> str | None:
    """The name a call calls directly (``f(x)``), or None (``(*p)(x)``)."""
    return node.name.name if isinstance(node.name, c_ast.ID) else None


def arguments(node: c_ast.FuncCall) -> list[c_ast.Node]:
    """The argument expressions of a call."""
    return list(node.args.exprs) if node.args is not None else []


def is_statement(node: c_ast.Node, parent: c_ast.Node | None) -> bool:
    """Is `node` a whole statement of `parent` (not part of an expression)?"""
    if isinstance(parent, c_ast.Compound):
        return True
    if isinstance(parent, c_ast.If):
        return node is parent.iftrue or node is parent.iffalse
    if isinstance(parent, (c_ast.For, c_ast.While, c_ast.DoWhile, c_ast.Label)):
        return node is parent.stmt
    if isinstance(parent, (c_ast.Case, c_ast.Default)):
        return any(node is s for s in parent.stmts)
    return False
