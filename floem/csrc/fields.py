"""Per-packet state fields and persistent states referenced by one body's AST.

A reference ``state->f`` (or ``state.f``) is classified by the expression around it:

======================================  =====  =====
expression                              use    write
======================================  =====  =====
``x = state->f``, ``g(state->f.a)``     yes
``state->f = e``                               yes
``state->f.a = e``, ``state->arr[i] = e``      yes
``state->p->a = e``, ``*state->p = e``  yes    yes
``state->f += e``, ``state->f++``       yes    yes
``&state->f``                           yes    yes
``g(state->p)`` (pointer/array field)   yes    yes
``sizeof(state->f)``
======================================  =====  =====

Which plain assignments run on every path, and so kill their field, is
`floem.csrc.kills`'s to say. The bare ``state`` (passed whole) uses and writes
every field. Calls of the functions in `_READ_ONLY_CALLS` do not write their
pointer arguments, and those in `_WRITES_FIRST` write their first one only.

A persistent state ``t`` is written where ``t->f`` would write a per-packet
field (``t->n = 1``, ``t->n++``, ``&t->n``, ``g(t->arr)``, a member whose type
the body does not know passed to a function) and wherever the pointer ``t``
itself is used other than to reach a member (``g(t)``, ``T *p = t``).
"""
from __future__ import annotations

from pycparser import c_ast

from floem.csrc.model import Body, BodyError, ByteUse, FieldUse, Member, PacketView, Range
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
#: The type taken for a member of a persistent state whose type the body is not given.
_UNKNOWN_TYPE = "void *"


class StateVisitor(ParentVisitor):
    """Collects how one body uses the per-packet state and which persistent states it names."""

    def __init__(self, body: Body) -> None:
        super().__init__()
        self.body = body
        self.fields = FieldUse()
        self.persistent_used: set[str] = set()
        self.persistent_written: set[str] = set()
        self._ports = {p.name for p in body.inputs + body.outputs}
        self._local_state = False
        self._unevaluated = 0

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
        """``state->f``: a per-packet field; ``t->f``: a member of persistent state ``t``;
        otherwise only the base is a reference."""
        base = node.name.name if isinstance(node.name, c_ast.ID) else None
        if base == STATE and not self._local_state:
            self._field(node)
        elif base in self.body.persistent:
            if node.type == ".":
                raise BodyError(f"persistent state '{base}' is a pointer: write "
                                f"{base}->{node.field.name}", node.coord.line)
            self.persistent_used.add(base)
            if self._unevaluated:
                return
            member = self.body.persistent_fields.get(base, {}).get(node.field.name)
            outer, steps, _, parent, grandparent = self._context(node)
            if "writes" in self._effect(outer, steps, parent, grandparent,
                                        member or _UNKNOWN_TYPE):
                self.persistent_written.add(base)
        else:
            self.visit_children(node, [node.name])

    def visit_ID(self, node: c_ast.ID) -> None:
        """A name: a persistent state, or the whole per-packet state."""
        if node.name in self.body.persistent:      # the pointer itself, not a member
            self.persistent_used.add(node.name)
            if not self._unevaluated:
                self.persistent_written.add(node.name)
        elif node.name == STATE and not self._local_state:
            fields = self._state_fields(node.coord.line)
            if not self._unevaluated:
                every = set(fields)
                self.fields.uses |= every
                self.fields.writes |= every

    def _state_fields(self, line: int) -> dict[str, str]:
        """The per-packet fields, for a use of the state at `line`."""
        if self.body.state_fields is None:
            raise BodyError("'state' used, but this element has no per-packet state "
                            "(create it inside a Flow with a PerPacket state)", line)
        return self.body.state_fields

    def _field(self, ref: c_ast.StructRef) -> None:
        line = ref.coord.line
        fields = self._state_fields(line)
        name = ref.field.name
        if name not in fields:
            known = ", ".join(sorted(fields)) or "none"
            raise BodyError(f"the per-packet state has no field '{name}' (fields: {known})", line)
        if self._unevaluated:
            return
        node, steps, chain, parent, grandparent = self._context(ref)
        for kind in self._effect(node, steps, parent, grandparent, fields[name]):
            getattr(self.fields, kind).add(name)
        if name in self.body.packets:
            self._bytes(name, chain, parent, grandparent, line)

    def _context(self, ref: c_ast.StructRef) -> tuple[c_ast.Node, list[str], list[c_ast.Node],
                                                       c_ast.Node | None, c_ast.Node | None]:
        """Where member reference ``ref`` (being visited) stands: the outermost access
        reaching through it (``ref`` itself when none does), the steps of those accesses
        ('.', '->', '[]', '*') and the accesses themselves (innermost first), and the
        parent and grandparent of the outermost one."""
        node, steps, chain, k = ref, [], [], len(self.parents) - 1
        while k >= 0 and (step := _step(self.parents[k], node)) is not None:
            steps.append(step)
            node, k = self.parents[k], k - 1
            chain.append(node)
        parent = self.parents[k] if k >= 0 else None
        grandparent = self.parents[k - 1] if k > 0 else None
        return node, steps, chain, parent, grandparent

    def _bytes(self, name: str, chain: list[c_ast.Node], parent: c_ast.Node | None,
               grandparent: c_ast.Node | None, line: int) -> None:
        """Record the bytes of typed packet ``name`` that ``state->name`` followed by
        ``chain`` (the member accesses, innermost first) reads and writes."""
        use = self.fields.bytes.setdefault(name, ByteUse())
        if not chain:
            if isinstance(parent, c_ast.Assignment) and parent.op == "=" \
                    and state_field(parent.lvalue) == name:
                return                        # the pointer itself is set: no byte is touched
            use.unbounded = use.unbounded or (line, f"state->{name} is used as a whole "
                                              "pointer (passed on, copied or computed with)")
            return
        view = self.body.packets[name]
        if view is None:
            use.unbounded = use.unbounded or (line, f"a member of what state->{name} points "
                                              "at has a size the compiler does not know")
            return
        span = _member_span(view, chain)
        if span is None:
            use.unbounded = use.unbounded or (line, f"state->{name} is indexed by something "
                                              "other than 0")
            return
        if isinstance(span, str):
            raise BodyError(f"state->{name} has no member '{span}'", line)
        outer = chain[-1]
        reads, writes = True, False
        if isinstance(parent, c_ast.Assignment) and parent.lvalue is outer:
            reads, writes = parent.op != "=", True
        elif isinstance(parent, c_ast.UnaryOp) and (parent.op in _INCREMENTS or parent.op == "&"):
            writes = True
        elif (isinstance(parent, c_ast.ExprList) and isinstance(grandparent, c_ast.FuncCall)
              and view_is_array(view, chain)
              and _call_writes(grandparent, _position(parent, outer), self._ports)):
            writes = True
        if reads:
            use.reads.add(span)
        if writes:
            use.writes.add(span)

    def _effect(self, node: c_ast.Node, steps: list[str], parent: c_ast.Node | None,
                grandparent: c_ast.Node | None, field_type: str) -> tuple[str, ...]:
        """Which of uses/writes `node` (a member of type `field_type` reached through
        `steps`) makes."""
        is_array = "[" in field_type
        if isinstance(parent, c_ast.Assignment) and parent.lvalue is node:
            if parent.op != "=":
                return ("uses", "writes")
            return ("uses", "writes") if _reads_through(steps, is_array) else ("writes",)
        if isinstance(parent, c_ast.UnaryOp) and (parent.op in _INCREMENTS or parent.op == "&"):
            return ("uses", "writes")
        if (isinstance(parent, c_ast.ExprList) and isinstance(grandparent, c_ast.FuncCall)
                and not steps and (is_array or "*" in field_type)
                and _call_writes(grandparent, _position(parent, node), self._ports)):
            return ("uses", "writes")
        return ("uses",)


def state_field(node: c_ast.Node) -> str | None:
    """The per-packet field ``node`` is (``state->f`` or ``state.f``), or None."""
    if isinstance(node, c_ast.StructRef) and isinstance(node.name, c_ast.ID) \
            and node.name.name == STATE:
        return node.field.name
    return None


def _member_path(chain: list[c_ast.Node]) -> tuple[list[str], list[c_ast.Node]] | None:
    """The member names ``chain`` follows from the packet's start, and the subscripts and
    dereferences after the last member; None when the packet itself is indexed by
    anything but 0 (``state->p[i]``)."""
    path: list[str] = []
    first = chain[0]
    if isinstance(first, c_ast.StructRef):
        path.append(first.field.name)
    elif isinstance(first, c_ast.ArrayRef):
        if not _constant(first.subscript) == 0:
            return None
    rest = chain[1:]
    while rest and isinstance(rest[0], c_ast.StructRef) and rest[0].type == "." \
            and (path or isinstance(first, (c_ast.ArrayRef, c_ast.UnaryOp))):
        path.append(rest[0].field.name)
        rest = rest[1:]
    return path, rest


def _member_span(view: PacketView, chain: list[c_ast.Node]) -> Range | str | None:
    """The bytes the access ``chain`` reaches (a whole member, or one element of an array
    member indexed by a constant); a member name that does not exist; None when unbounded."""
    found = _member_path(chain)
    if found is None:
        return None
    path, rest = found
    if not path:
        return (0, view.size)
    member: Member | None = None
    for k in range(1, len(path) + 1):
        member = view.members.get(tuple(path[:k]))
        if member is None:
            return ".".join(path[:k])
    assert member is not None
    if rest and isinstance(rest[0], c_ast.ArrayRef) and member.element_size:
        index = _constant(rest[0].subscript)
        if index is not None and 0 <= index < member.size // member.element_size:
            start = member.offset + index * member.element_size
            return (start, start + member.element_size)
    return (member.offset, member.offset + member.size)


def view_is_array(view: PacketView, chain: list[c_ast.Node]) -> bool:
    """Does ``chain`` end at an array member (which a call receives as a pointer)?"""
    found = _member_path(chain)
    if found is None or not found[0] or found[1]:
        return False
    member = view.members.get(tuple(found[0]))
    return member is not None and member.element_size is not None


def _constant(node: c_ast.Node) -> int | None:
    """The value of an integer constant expression made of one literal, else None."""
    if isinstance(node, c_ast.Constant) and node.type in ("int", "unsigned int", "long int",
                                                          "unsigned long int"):
        try:
            return int(node.value.rstrip("uUlL"), 0)
        except ValueError:
            return None
    return None


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
