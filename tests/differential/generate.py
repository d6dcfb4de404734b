"""Random valid Floem programs, rendered as app files, with what they must print.

A *program* (`Program`) is one independent dataflow graph: packets enter through a callable
segment `pK_push` that main calls once per packet, or from a thread segment `pK_source`
whose source element makes them (placeable on the NIC too), then go through thread
segments `pK_s1`, `pK_s2`, ... each starting at the dequeue of its own queue (several
channels and instances, small sizes), and for every segment that ends packets a result
queue drained by a callable `pK_collectJ`. Inside a segment, elements read and write
per-packet fields (scalars of every width and signedness, arrays) and port values, fan
out, join, branch with `output switch` (with and without `else:`), merge, read a
persistent table, count packets in a persistent counter (only where packets arrive in a
fixed order), steer by `state->qid`, and sometimes leave an input port whose value they
do not use unread. Three programs in ten also carry a *typed packet* (docs/slicing.md):
``state->pkt`` points at bytes laid out by a generated `State` (nested, sometimes a union
or not packed) that elements read and write member by member, in network byte order, and
now and then through the whole pointer, so that the bytes each queue sends (its window)
vary from program to program; two in ten carry a *frame* instead, a network buffer from
`NetAlloc` (`Program.port`) whose payload may wait by its port while its window crosses.
Every thread segment may be placed on the CPU or the NIC (``-D nic=SEG,SEG``), or declared
``target.AUTO`` (``-D auto=SEG,SEG``) for the compiler to cut; segments feeding one queue
move together (`Program.groups`), since a queue's producers share a device.

Everything is drawn from a `random.Random` seeded through the hypothesis strategy
`batches`, so a program is fully given by its seed and size (`Program.generate`). A *batch* of
programs is rendered into one app file (`render_app`), built once per placement; its main
calls each program in turn, collects its result rows, sorts them (rows of different
instances arrive in any order) and prints them. `Program.expected` is what a program
prints, computed by a model of the language's semantics, so the all-CPU build is checked
against it too.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from hypothesis import strategies as st

M64 = (1 << 64) - 1
#: Whole numbers up to this mask are exact in a float: what float and double fields hold.
REAL_MASK = (1 << 20) - 1
#: Entries of a persistent table (`Table.vals`).
TABLE_SIZE = 8
#: Packets main sends into each program.
PACKETS = 6


@dataclass(frozen=True)
class Scalar:
    """The type of one scalar of the per-packet state."""

    c: str                  # the C spelling
    floem: str              # how the app file writes it
    bits: int = 0
    signed: bool = False
    kind: str = "int"       # "int", "bool" or "real" (float, double: small whole numbers)

    def convert(self, value: int) -> int:
        """``value`` (a uint64_t) as the field holds it after ``assign``."""
        if self.kind == "bool":
            return value & 1
        if self.kind == "real":
            return value & REAL_MASK
        value &= (1 << self.bits) - 1
        if self.signed and value >> (self.bits - 1):
            value -= 1 << self.bits
        return value

    @property
    def size(self) -> int:
        """Bytes of the scalar."""
        if self.kind == "bool":
            return 1
        if self.kind == "real":
            return 4 if self.c == "float" else 8
        return self.bits // 8

    def assign(self, expr: str) -> str:
        """The C rvalue storing the uint64_t ``expr`` into a scalar of this type."""
        if self.kind == "real":
            return f"({self.c})(({expr}) & {REAL_MASK}ull)"
        if self.kind == "bool":
            return f"(bool)(({expr}) & 1ull)"
        return f"({self.c})({expr})"


SCALARS = [Scalar(f"{'int' if signed else 'uint'}{bits}_t",
                  f"{'Sint' if signed else 'Uint'}({bits})", bits, signed)
           for bits in (8, 16, 32, 64) for signed in (False, True)] + \
    [Scalar("bool", "Bool", kind="bool"), Scalar("float", "Float", kind="real"),
     Scalar("double", "Double", kind="real")]
UINT = {bits: Scalar(f"uint{bits}_t", f"Uint({bits})", bits) for bits in (16, 32, 64)}
INT = Scalar("int", "Int", 32, True)


@dataclass(frozen=True)
class FieldSpec:
    """A per-packet field: a scalar, an array of ``length`` scalars, or a nested State
    class ``nested`` with the scalar fields ``members``."""

    name: str
    scalar: Scalar | None
    length: int = 0
    nested: str = ""
    members: tuple[tuple[str, Scalar], ...] = ()

    def floem_type(self) -> str:
        """The field's type as the app file writes it."""
        if self.nested:
            return self.nested
        return f"Array({self.scalar.floem}, {self.length})" if self.length else self.scalar.floem

    def size(self) -> int:
        """Bytes of the field (packed)."""
        if self.nested:
            return sum(t.size for _, t in self.members)
        return self.scalar.size * (self.length or 1)

    def slots(self) -> list[Slot]:
        """Every scalar of the field."""
        if self.nested:
            return [Slot(self.name, f".{m}", t) for m, t in self.members]
        if self.length:
            return [Slot(self.name, f"[{i}]", self.scalar) for i in range(self.length)]
        return [Slot(self.name, "", self.scalar)]


@dataclass(frozen=True)
class Slot:
    """One scalar of the per-packet state: a field, an element of an array field, or a
    member of a nested state."""

    field: str
    suffix: str
    scalar: Scalar

    @property
    def key(self) -> tuple[str, str]:
        """How the model's state dictionary names it."""
        return (self.field, self.suffix)

    def c(self) -> str:
        """The C lvalue."""
        return f"state->{self.field}{self.suffix}"

    def statement(self, expr: Expr) -> str:
        """The C statement storing ``expr`` into the scalar."""
        return f"{self.c()} = {self.scalar.assign(expr.c())};"

    def store(self, env: Env, expr: Expr) -> None:
        """What the statement does, in the model."""
        env.state[self.key] = self.scalar.convert(expr.value(env))


# ----- typed packets -----

#: How the model's state names the bytes of the typed packet (docs/slicing.md): the bytes
#: themselves, replaced (never changed in place) on every write, so that copying the state
#: copies them.
PACKET = ("pkt", "")
#: Member widths of a packet layout (bytes) and how the app file writes them.
PACKET_WIDTHS = {1: "Uint(8)", 2: "Uint(16)", 4: "Uint(32)"}
#: Payload bytes of an entry with ``entry_size=256`` (the entry header is 8 bytes).
ENTRY_SIZE_PAYLOAD = 256 - 8


@dataclass
class LayoutMember:
    """A member of a packet layout: a uint8/16/32 (``width`` bytes), an array of
    ``length`` of them, or a nested layout."""

    name: str
    width: int = 0
    length: int = 0
    nested: Layout | None = None

    def align(self) -> int:
        """The C alignment of the member's type."""
        return self.nested.align() if self.nested else self.width

    def size(self) -> int:
        """The C size of the member's type."""
        return self.nested.size() if self.nested else self.width * (self.length or 1)

    def floem_type(self) -> str:
        """The member's type as the app file writes it."""
        if self.nested:
            return self.nested.name
        scalar = PACKET_WIDTHS[self.width]
        return f"Array({scalar}, {self.length})" if self.length else scalar


@dataclass
class Layout:
    """A `State` class describing a typed packet's bytes: packed or not, a struct or a
    union. Sizes and offsets follow C (gcc), computed here independently of the compiler,
    so that the model's bytes are what the C code touches."""

    name: str
    members: list[LayoutMember]
    packed: bool = True
    union: bool = False

    def align(self) -> int:
        """1 for a packed layout, else its widest member's alignment."""
        return 1 if self.packed else max(m.align() for m in self.members)

    def offsets(self) -> list[int]:
        """Where each member starts."""
        out, at = [], 0
        for m in self.members:
            if self.union:
                out.append(0)
                continue
            if not self.packed:
                at = -(-at // m.align()) * m.align()
            out.append(at)
            at += m.size()
        return out

    def size(self) -> int:
        """Bytes of the layout, with its trailing padding."""
        end = max(o + m.size() for o, m in zip(self.offsets(), self.members))
        return -(-end // self.align()) * self.align()

    def nested(self) -> list[Layout]:
        """The layouts nested in this one, innermost first (the order to declare them)."""
        out: list[Layout] = []
        for m in self.members:
            if m.nested:
                out += m.nested.nested() + [m.nested]
        return out

    def places(self, base: int = 0, prefix: str = "") -> Iterator[Place]:
        """Every member, at every depth (a whole array and each of its elements, a whole
        nested layout and its members), with its offset from the packet's start."""
        for m, offset in zip(self.members, self.offsets()):
            path = prefix + m.name
            yield Place(path, base + offset, m.size(), 0 if m.nested or m.length else m.width,
                        m.length)
            if m.nested:
                yield from m.nested.places(base + offset, path + ".")
            for i in range(m.length):
                yield Place(f"{path}[{i}]", base + offset + i * m.width, m.width, m.width)


@dataclass(frozen=True)
class Place:
    """A member of a packet: ``path`` after ``state->pkt->``, its first byte and size; a
    scalar (or array element) has a ``width`` (1, 2 or 4), an array a ``length``."""

    path: str
    offset: int
    size: int
    width: int = 0
    length: int = 0

    @property
    def element(self) -> int:
        """Bytes of an element of an array."""
        return self.size // self.length

    def access(self, form: str) -> str:
        """The C lvalue, through ``state->pkt`` as ``form`` says: ``->``, ``[0]`` or ``*``
        (all bounded: docs/slicing.md)."""
        return {"->": f"state->pkt->{self.path}", "[0]": f"state->pkt[0].{self.path}",
                "*": f"(*state->pkt).{self.path}"}[form]


@dataclass
class PacketSpec:
    """A program's typed packet: ``pkt = Field(Pointer(layout), size="state->plen")``,
    pointed at its own bytes ``pbuf`` in the per-packet state by the first element; or,
    with ``frame``, ``pkt = Frame(layout)``, a network buffer of ``length + step * pid``
    bytes (`NetAlloc`, `StoreFrame`) that an element then fills (``dt_fill``).
    ``read_rate``: how often an expression's leaf reads a member; ``unbounded``: how often
    an access goes through the whole pointer (``dt_peek(state->pkt, ...)``)."""

    layout: Layout
    length: int                      # plen, or the shortest frame: the layout and more bytes
    length_type: str                 # plen's type
    buffer_type: str                 # pbuf's: enough aligned bytes for the layout
    read_rate: float
    unbounded: float
    frame: bool = False
    step: int = 0                    # a frame's bytes more for each packet number
    #: How often a report hashes every byte of the packet (``dt_hash``), payload included.
    whole_hash: float = 0.0

    def places(self) -> list[Place]:
        """Every member of the layout."""
        return list(self.layout.places())

    def init(self) -> list[str]:
        """The statements giving the packet its first bytes: for a typed packet the bytes
        zeroed, the pointer and length set (the first element); for a frame, stored by
        then, bytes that depend on the packet's number (the element after `StoreFrame`)."""
        if self.frame:
            return ["dt_fill(state->pkt, state->pkt_len, state->pid);"]
        return ["memset(state->pbuf, 0, sizeof state->pbuf);",
                f"state->pkt = ({self.layout.name} *)(void *)state->pbuf;",
                f"state->plen = {self.length};"]

    def initial(self, pid: int) -> bytes:
        """The bytes ``init`` gives packet ``pid`` (what ``dt_fill`` writes)."""
        if not self.frame:
            return bytes(self.length)
        return bytes((i * 7 + pid * 13 + 1) & 0xFF for i in range(self.length + self.step * pid))

    def size(self) -> str:
        """The C expression of the packet's length."""
        return "state->pkt_len" if self.frame else "state->plen"


def _load(data: bytes, offset: int, size: int) -> int:
    """``size`` bytes at ``offset`` as a big-endian number (network order: what
    ``floem_ntoh16/32`` and ``dt_peek`` read on every platform)."""
    return int.from_bytes(data[offset:offset + size], "big")


def _stored(data: bytes, offset: int, size: int, value: int) -> bytes:
    """``data`` with ``value`` stored big-endian in ``size`` bytes at ``offset``."""
    return data[:offset] + (value & ((1 << 8 * size) - 1)).to_bytes(size, "big") + \
        data[offset + size:]


def _fnv(data: bytes) -> int:
    """FNV-1a of ``data`` (64 bits): what ``dt_hash`` computes."""
    h = 14695981039346656037
    for b in data:
        h = (h ^ b) * 1099511628211 & M64
    return h


def _member_value(c: str, width: int) -> str:
    """The uint64_t value of a member read as ``c`` (network order converted)."""
    return f"(uint64_t){c}" if width == 1 else f"(uint64_t)floem_ntoh{8 * width}({c})"


def _member_store(c: str, width: int, expr: str) -> str:
    """The statement storing uint64_t ``expr`` into the member ``c`` (network order)."""
    if width == 1:
        return f"{c} = (uint8_t)({expr});"
    return f"{c} = floem_hton{8 * width}((uint{8 * width}_t)({expr}));"


def _base(place: Place | None) -> tuple[str, int]:
    """The pointer a helper gets (the whole packet, or a member's address: bounded), and
    where it points."""
    if place is None:
        return "state->pkt", 0
    return (f"state->pkt->{place.path}" if place.length else f"&state->pkt->{place.path}",
            place.offset)


@dataclass
class PacketWrite:
    """A statement changing the packet: a member set from an expression (``set``), a byte
    member added to (``add``) or incremented (``inc``), an array element at a computed
    index set (``set_at``), bytes stored by the helper ``dt_poke`` through the whole
    pointer or a member's address (``poke``), or one member copied over another of the
    same size (``move``)."""

    kind: str
    place: Place | None = None
    form: str = "->"
    expr: Expr | None = None
    index: Expr | None = None
    offset: int = 0                  # poke: from the base's start
    width: int = 0                   # poke
    source: Place | None = None      # move

    def exprs(self) -> Iterator[Expr]:
        """The expressions the statement evaluates."""
        yield from (e for e in (self.index, self.expr) if e is not None)

    def statement(self, _: None = None) -> str:
        """The C statement."""
        p = self.place
        if self.kind == "set":
            return _member_store(p.access(self.form), p.width, self.expr.c())
        if self.kind == "add":
            return f"{p.access(self.form)} += (uint8_t)({self.expr.c()});"
        if self.kind == "inc":
            return f"{p.access(self.form)}++;"
        if self.kind == "set_at":
            at = f"state->pkt->{p.path}[({self.index.c()}) % {p.length}ull]"
            return _member_store(at, p.element, self.expr.c())
        if self.kind == "poke":
            base, _ = _base(p)
            return f"dt_poke({base}, {self.offset}u, {self.width}u, {self.expr.c()});"
        return (f"memmove(&state->pkt->{p.path}, &state->pkt->{self.source.path}, "
                f"sizeof state->pkt->{p.path});")

    def store(self, env: Env, _: None = None) -> None:
        """What the statement does, in the model."""
        data, p = env.state[PACKET], self.place
        if self.kind in ("set", "add", "inc"):
            value = 1 if self.kind == "inc" else self.expr.value(env)
            if self.kind != "set":
                value += _load(data, p.offset, 1)
            env.state[PACKET] = _stored(data, p.offset, p.width, value)
        elif self.kind == "set_at":
            at = p.offset + self.index.value(env) % p.length * p.element
            env.state[PACKET] = _stored(data, at, p.element, self.expr.value(env))
        elif self.kind == "poke":
            at = _base(p)[1] + self.offset
            env.state[PACKET] = _stored(data, at, self.width, self.expr.value(env))
        else:
            moved = data[self.source.offset:self.source.offset + p.size]
            env.state[PACKET] = data[:p.offset] + moved + data[p.offset + p.size:]


@dataclass
class Env:
    """What an expression sees while the model runs one element."""

    values: list[int]
    state: dict[tuple[str, str], int]
    segment: SegmentRun


@dataclass(frozen=True)
class Expr:
    """A uint64_t expression of an element body, and its value in the model."""

    op: str
    args: tuple = ()

    def c(self) -> str:
        """The C text."""
        a = self.args
        if self.op == "k":
            return f"{a[0]}ull"
        if self.op == "v":
            return f"v{a[0]}"
        if self.op == "slot":
            return f"(uint64_t){a[0].c()}"
        if self.op == "tbl":
            return f"(uint64_t)tbl->vals[({a[0].c()}) & {TABLE_SIZE - 1}ull]"
        if self.op == "base":
            return "tbl->base"
        if self.op == "cnt":
            return "cnt->n"
        if self.op == "core":
            return "(uint64_t)floem_core_id"
        if self.op == "pkt":
            return _member_value(a[0].access(a[1]), a[0].width)
        if self.op == "pkt_at":
            return _member_value(f"state->pkt->{a[0].path}[({a[1].c()}) % {a[0].length}ull]",
                                 a[0].element)
        if self.op == "peek":
            return f"dt_peek({_base(a[0])[0]}, {a[1]}u, {a[2]}u)"
        if self.op == "sizeof":
            return f"(uint64_t)sizeof state->pkt->{a[0].path}"
        if self.op == "hash":
            return f"dt_hash(state->pkt, {a[0]})"
        if self.op in (">>", "%"):
            return f"({a[0].c()} {self.op} {a[1]}{'ull' if self.op == '%' else ''})"
        return f"({a[0].c()} {self.op} {a[1].c()})"

    def value(self, env: Env) -> int:
        """The value (as a uint64_t) in ``env``."""
        a = self.args
        if self.op == "k":
            return a[0]
        if self.op == "v":
            return env.values[a[0]] & M64
        if self.op == "slot":
            return env.state[a[0].key] & M64
        if self.op == "tbl":
            return env.segment.table[a[0].value(env) & (TABLE_SIZE - 1)]
        if self.op == "base":
            return env.segment.base
        if self.op == "cnt":
            return env.segment.count
        if self.op == "core":
            return env.segment.core
        if self.op == "pkt":
            return _load(env.state[PACKET], a[0].offset, a[0].width)
        if self.op == "pkt_at":
            at = a[0].offset + a[1].value(env) % a[0].length * a[0].element
            return _load(env.state[PACKET], at, a[0].element)
        if self.op == "peek":
            return _load(env.state[PACKET], _base(a[0])[1] + a[1], a[2])
        if self.op == "sizeof":
            return a[0].size
        if self.op == "hash":
            return _fnv(env.state[PACKET])
        if self.op == ">>":
            return a[0].value(env) >> a[1]
        if self.op == "%":
            return a[0].value(env) % a[1]
        x, y = a[0].value(env), a[1].value(env)
        return {"+": x + y, "-": x - y, "*": x * y, "^": x ^ y, "&": x & y, "|": x | y}[self.op] & M64

    def substitute(self, value: Expr) -> Expr:
        """The expression with every port value (``v0``, ``v1``) replaced by ``value``."""
        if self.op == "v":
            return value
        return Expr(self.op, tuple(a.substitute(value) if isinstance(a, Expr) else a
                                   for a in self.args))

    def values_used(self) -> set[int]:
        """The port values (``v0``, ``v1``) the expression reads."""
        if self.op == "v":
            return {self.args[0]}
        return set().union(*(a.values_used() for a in self.args if isinstance(a, Expr)))

    def uses(self, op: str) -> bool:
        """Whether the expression contains ``op`` anywhere."""
        return self.op == op or any(a.uses(op) for a in self.args if isinstance(a, Expr))


@dataclass(frozen=True)
class Cond:
    """A case of an `output switch`: ``(E) % mod == rem``."""

    expr: Expr
    mod: int
    rem: int

    def c(self) -> str:
        """The C text."""
        return f"{self.expr.c()} % {self.mod}ull == {self.rem}ull"

    def holds(self, env: Env) -> bool:
        """Whether the case is taken in ``env``."""
        return self.expr.value(env) % self.mod == self.rem


@dataclass
class Elem:
    """One element instance: ports, field writes, and how it fires its outputs."""

    name: str
    inputs: list[tuple[str, str]]          # (port, type: "U64", "U32" or "NONE")
    outputs: list[tuple[str, str]]
    #: Statements in order: a per-packet field set from an expression, or a change of the
    #: typed packet (`PacketWrite`, its expressions its own).
    writes: list[tuple[Slot, Expr] | tuple[PacketWrite, None]] = field(default_factory=list)
    switch: bool = False
    #: (case or None, port, value or None): a block fires each in turn; a switch the first
    #: whose case holds (None: else).
    fires: list[tuple[Cond | None, str, Expr | None]] = field(default_factory=list)
    counts: bool = False
    report: Expr | None = None             # a collect's Report: the row's hash
    drops: bool = False                    # a Report that then gives the frame back (drop)
    source: bool = False                   # makes PACKETS packets, then sleeps
    #: Input ports the body leaves unread when it does not use their value (allowed: a port
    #: need not be read at all); the others it reads, discarding the value (``inp();``).
    unread: set[str] = field(default_factory=set)
    #: The element that gives the packet its first bytes (`PacketSpec.init`).
    packet: PacketSpec | None = None

    def exprs(self) -> Iterator[Expr]:
        """Every expression of the body."""
        for target, e in self.writes:
            yield from target.exprs() if isinstance(target, PacketWrite) else (e,)
        for c, _, e in self.fires:
            if c is not None:
                yield c.expr
            if e is not None:
                yield e
        if self.report is not None:
            yield self.report

    def uses(self, op: str) -> bool:
        """Whether the body uses ``op`` (``tbl``, ``base``, ``cnt``) in an expression."""
        return any(e.uses(op) for e in self.exprs())

    def body(self) -> str:
        """The C body."""
        used = set().union(*(e.values_used() for e in self.exprs()))
        lines = [f"uint64_t v{i} = {port}();" if i in used else f"{port}();"
                 for i, (port, types) in enumerate(self.inputs)
                 if types != "NONE" and (i in used or port not in self.unread)]
        if self.source:
            lines += ["static uint32_t next;", f"if (next == {PACKETS}) {{",
                      "    usleep(1000);       /* done: do not spin */", "    return;", "}",
                      "uint64_t v0 = next++;"]
        if self.packet is not None:
            lines += self.packet.init()
        if self.counts:
            lines.append("cnt->n += 1;")
        lines += [target.statement(e) for target, e in self.writes]
        if self.report is not None:
            lines.append(f"dt_row(state->pid, state->tag, state->res, {self.report.c()});")
            lines.append("output { out(1); drop(); }" if self.drops else "output { out(1); }")
        if self.switch:
            lines.append("output switch {")
            for c, port, e in self.fires:
                case = "else" if c is None else f"case {c.c()}"
                lines.append(f"    {case}: {port}({'' if e is None else e.c()});")
            lines.append("}")
        elif self.fires:
            calls = " ".join(f"{port}({'' if e is None else e.c()});" for _, port, e in self.fires)
            lines.append(f"output {{ {calls} }}")
        return "\n".join(lines)


@dataclass
class QueueSpec:
    """The input queue of a thread segment."""

    name: str
    channels: int
    inst: int
    size: int
    producers: set[int] = field(default_factory=set)    # segment indices
    #: Other arguments of `Queue`: lossy (rendered with room for every entry the queue
    #: receives, so that it never drops, whoever feeds it), a fixed entry_size, forced
    #: atomic sides.
    options: dict[str, object] = field(default_factory=dict)


@dataclass
class SegmentSpec:
    """A segment of a program: index 0 makes the packets (the callable `push`, or a thread
    segment `source`), the others start at their input queue."""

    index: int
    name: str
    threads: int = 1
    queue: QueueSpec | None = None
    ordered: bool = True
    table: list[int] = field(default_factory=list)
    base: int = 0
    elems: list[Elem] = field(default_factory=list)
    #: Destinations of each output port, in connection order: an element's input port,
    #: ("enq", queue index, channel) or ("result",).
    conns: dict[tuple[str, str], list[tuple]] = field(default_factory=dict)
    #: The element each channel of the input queue (or push's argument) feeds.
    entries: list[Elem] = field(default_factory=list)
    report: Elem | None = None
    sinks: int = 0
    #: Library elements (`NetAlloc`, `StoreFrame`) by name: how the app file makes each. They
    #: pass the packet on from ``out``, so the model goes straight on.
    library: dict[str, str] = field(default_factory=dict)

    @property
    def result_queue(self) -> str:
        """The name of the segment's result queue."""
        return f"{self.name}_results"

    def elem(self, name: str) -> Elem:
        """The element called ``name``."""
        return next(e for e in self.elems if e.name == name)


@dataclass
class SegmentRun:
    """The model's view of a segment while it runs a packet."""

    table: list[int]
    base: int
    count: int = 0
    core: int = 0


class Program:
    """One random program: its segments, queues and fields, and what it prints."""

    def __init__(self, index: int, seed: int, size: int, rng: random.Random) -> None:
        self.index = index
        self.seed = seed
        self.size = size
        self.fields: list[FieldSpec] = []
        self.segments: list[SegmentSpec] = []
        self._rng = rng
        #: Which unused port values are left unread: a stream of its own, so that the
        #: programs earlier seeds make (docs/testing.md, Findings) keep their graphs.
        self._unread_rng = random.Random(f"unread {seed}")
        #: The typed packet and every access to it: a stream of its own too, drawn beside
        #: the program's graph (whose draws it never changes).
        self._packet_rng = random.Random(f"packet {seed}")
        self.packet: PacketSpec | None = None
        self._count = 0
        self._budget = 0

    def __repr__(self) -> str:
        return f"Program.generate({self.index}, {self.seed}, {self.size})"

    # ----- generation -----

    @classmethod
    def generate(cls, index: int, seed: int, size: int) -> Program:
        """The program numbered ``index`` (its names start with ``pINDEX_``) drawn from
        ``seed``; ``size`` (1 to 3) bounds its segments, depth and elements. Drawn again
        (from the same random sequence) until it prints a row."""
        rng = random.Random(seed)
        while True:
            p = cls(index, seed, size, rng)
            p._draw()
            if any(p.rows().values()):
                return p

    def _draw(self) -> None:
        r = self._rng
        pre = f"p{self.index}_"
        self.fields = [FieldSpec("pid", UINT[32]), FieldSpec("tag", UINT[16]),
                       FieldSpec("res", UINT[64])]
        for i in range(r.randint(2, 5)):
            if r.random() < 0.15:
                members = tuple((f"m{j}", r.choice(SCALARS)) for j in range(r.randint(1, 3)))
                self.fields.append(FieldSpec(f"f{i}", None, nested=f"P{self.index}Inner{i}",
                                             members=members))
            else:
                self.fields.append(FieldSpec(f"f{i}", r.choice(SCALARS),
                                             r.choice([0, 0, 0, 2, 3])))
        self.packed = r.random() < 0.7
        self.layout = r.sample([f.name for f in self.fields], len(self.fields)) \
            if r.random() < 0.3 else []
        self.source = r.random() < 0.3
        kind = self._packet_rng.choices(["", "typed", "frame"], [5, 3, 2])[0]
        # A frame program's packets come from a thread segment, so that its network port
        # may move to the NIC (with every other program's: test_placement.placement).
        self.source = self.source or kind == "frame"
        self.segments = [SegmentSpec(0, pre + ("source" if self.source else "push"))]
        for j in range(1, r.randint(1, self.size + 1) + 1):
            q = QueueSpec(f"{pre}q{j}", r.randint(1, 3), r.choice([1, 1, 2, 3, 4]),
                          r.choice([1, 2, 3, 4, 8]))
            for option, value, p in (("lossless", False, 0.15), ("entry_size", 256, 0.2),
                                     ("enq_atomic", True, 0.15), ("deq_atomic", True, 0.15)):
                if r.random() < p:
                    q.options[option] = value
            if kind == "frame":
                q.options.pop("entry_size", None)      # frames of up to 700 bytes cross whole
            self.segments.append(SegmentSpec(j, f"{pre}s{j}", r.randint(1, min(3, q.inst)), q))
        if any(s.queue and s.queue.inst > 1 for s in self.segments):
            self.fields.append(FieldSpec("qid", INT))
            if self.layout:
                self.layout.insert(r.randrange(len(self.layout) + 1), "qid")
        self.packet = self._draw_packet(kind)
        if self.packet is not None and self.layout:
            for name in ("pkt",) if self.packet.frame else ("pkt", "plen", "pbuf"):
                self.layout.insert(self._packet_rng.randrange(len(self.layout) + 1), name)
        for seg in self.segments:
            if seg.queue is None or seg.queue.producers:
                self._generate_segment(seg)
        # A queue nothing enqueues into is an error: drop the segments nothing reached.
        self.segments = [s for s in self.segments if s.queue is None or s.queue.producers]

    def _draw_packet(self, kind: str) -> PacketSpec | None:
        """A typed packet (``kind`` "typed") or a frame ("frame") over a random layout,
        small enough that every queue with ``entry_size=256`` holds an entry sending every
        field and the whole packet (``--send-all-fields``, ``--trace``)."""
        r = self._packet_rng
        if not kind:
            return None
        room = 64
        if any(s.queue is not None and "entry_size" in s.queue.options for s in self.segments):
            # Besides the fields: plen, the trace field, pbuf and the packet's bytes (each as
            # long as the packet), its length and the alignment before it.
            fixed = sum(f.size() for f in self.fields) + 4 + 4
            room = min(room, (ENTRY_SIZE_PAYLOAD - fixed - 4 - 7) // 2)
        if room < 8:
            return None
        # A layout that is not packed needs aligned bytes: pbuf, in a state not packed (a
        # network buffer is aligned).
        layout = self._layout(f"P{self.index}Pkt", 0, room,
                              unpacked=not self.packed or kind == "frame")
        unbounded = 0.1 if r.random() < 0.35 else 0.0
        whole_hash = r.choice([0.0, 0.5])
        if kind == "frame":
            # Frames of a program grow by `step` bytes a packet: with 120, from under the
            # 512 bytes --slice-threshold keeps to over it.
            return PacketSpec(layout, layout.size() + r.choice([0, 3, 20]), "", "",
                              r.choice([0.1, 0.25]), unbounded, True, r.choice([0, 1, 7, 120]),
                              whole_hash)
        length = min(room, layout.size() + r.choice([0, 0, 1, 2, 5]))
        buffer = (f"Array(Uint(8), {length})" if layout.align() == 1
                  else f"Array(Uint(32), {-(-length // 4)})")
        return PacketSpec(layout, length, r.choice(["Uint(16)", "Uint(32)", "Int"]), buffer,
                          r.choice([0.1, 0.25]), unbounded, whole_hash=whole_hash)

    def _layout(self, name: str, depth: int, room: int, unpacked: bool) -> Layout:
        """A layout of at most ``room`` bytes: scalars, arrays and (two levels deep at most)
        nested layouts, which may be unions or not packed."""
        r = self._packet_rng
        layout = Layout(name, [], packed=not (unpacked and r.random() < 0.4),
                        union=r.random() < (0.3 if depth else 0.05))
        for j in range(r.randint(1 if depth else 2, 4)):
            member = "abcd"[j]
            kind = r.choices(["scalar", "array", "nested"], [5, 3, 2 if depth < 2 else 0])[0]
            if kind == "nested":
                layout.members.append(LayoutMember(member, nested=self._layout(
                    f"{name}_{member}", depth + 1, room, unpacked=True)))
            else:
                layout.members.append(LayoutMember(member, r.choice([1, 2, 4]),
                                                   r.randint(2, 4) if kind == "array" else 0))
            if layout.size() > room:
                layout.members.pop()
                break
        if not layout.members:
            layout.members.append(LayoutMember("a", 1))
        return layout

    def _packet_read(self, seg: SegmentSpec, values: int, computed: bool = True) -> Expr:
        """A read of the packet: a member (in one of the bounded forms), an array element
        at a computed index (``computed``), bytes through a member's address or, now and
        then, through the whole pointer (unbounded), or a member's size (no byte)."""
        r, packet = self._packet_rng, self.packet
        places = packet.places()
        if r.random() < packet.unbounded:
            width = r.choice([w for w in (1, 2, 4) if w <= packet.length])
            return Expr("peek", (None, r.randrange(packet.length - width + 1), width))
        kind = r.choices(["pkt", "pkt_at", "peek", "sizeof"], [12, 2 * computed, 2, 1])[0]
        arrays = [p for p in places if p.length]
        if kind == "pkt_at" and arrays:
            return Expr("pkt_at", (r.choice(arrays), self._expr(seg, values, 0, r, False)))
        if kind == "peek":
            place = r.choice(places)
            width = r.choice([w for w in (1, 2, 4) if w <= place.size])
            return Expr("peek", (place, r.randrange(place.size - width + 1), width))
        if kind == "sizeof":
            return Expr("sizeof", (r.choice(places),))
        return Expr("pkt", (r.choice([p for p in places if p.width]), self._form()))

    def _form(self) -> str:
        return self._packet_rng.choices(["->", "[0]", "*"], [8, 1, 1])[0]

    def _packet_write(self, seg: SegmentSpec, values: int) -> PacketWrite:
        """A change of the packet (`PacketWrite`); now and then through the whole pointer."""
        r, packet = self._packet_rng, self.packet
        places = packet.places()
        if r.random() < packet.unbounded:
            width = r.choice([w for w in (1, 2, 4) if w <= packet.length])
            return PacketWrite("poke", expr=self._expr(seg, values, rng=r), width=width,
                               offset=r.randrange(packet.length - width + 1))
        scalars = [p for p in places if p.width]
        kinds = {"set": 10, "add": 2 * any(p.width == 1 for p in scalars),
                 "inc": any(p.width == 1 for p in scalars),
                 "set_at": 2 * any(p.length for p in places), "poke": 2, "move": 2}
        kind = r.choices(list(kinds), list(kinds.values()))[0]
        if kind in ("add", "inc"):
            return PacketWrite(kind, r.choice([p for p in scalars if p.width == 1]),
                               self._form(),
                               None if kind == "inc" else self._expr(seg, values, rng=r))
        if kind == "set_at":
            return PacketWrite(kind, r.choice([p for p in places if p.length]),
                               index=self._expr(seg, values, 0, r, False),
                               expr=self._expr(seg, values, rng=r))
        if kind == "poke":
            place = r.choice(places)
            width = r.choice([w for w in (1, 2, 4) if w <= place.size])
            return PacketWrite(kind, place, expr=self._expr(seg, values, rng=r), width=width,
                               offset=r.randrange(place.size - width + 1))
        if kind == "move":
            dst = r.choice(places)
            sources = [p for p in places if p.size == dst.size and p.path != dst.path]
            if sources:
                return PacketWrite(kind, dst, source=r.choice(sources))
        place = r.choice(scalars)
        return PacketWrite("set", place, self._form(), self._expr(seg, values, rng=r))

    def _new(self, seg: SegmentSpec, inputs: list[tuple[str, str]],
             outputs: list[tuple[str, str]]) -> Elem:
        e = Elem(f"p{self.index}_e{self._count}", inputs, outputs)
        e.unread = {port for port, types in inputs
                    if types != "NONE" and self._unread_rng.random() < 0.5}
        self._count += 1
        seg.elems.append(e)
        return e

    def _connect(self, seg: SegmentSpec, src: tuple[str, str], dst: tuple) -> None:
        seg.conns.setdefault(src, []).append(dst)

    def _generate_segment(self, seg: SegmentSpec) -> None:
        r = self._rng
        q = seg.queue
        if q is not None:
            producers = q.producers
            seg.ordered = (seg.threads == 1 and q.inst == 1 and len(producers) == 1
                           and self.segment(next(iter(producers))).ordered)
        seg.table = [r.randrange(1 << 32) for _ in range(TABLE_SIZE)]
        seg.base = r.randrange(1 << 40)
        self._budget = 6 + 5 * self.size
        if q is None:
            frame = self.packet is not None and self.packet.frame
            start = self._new(seg, [] if self.source else [("inp", "U32")],
                              [("alloc", "SIZE") if frame else ("out", "U64")])
            start.source = self.source
            start.writes.append((self._slot("pid"), Expr("v", (0,))))
            self._writes(seg, start, values=1, packet=not frame)
            value = self._expr(seg, 1)
            seg.entries.append(start)
            if frame:
                src = self._frame_source(seg, start, value)
            else:
                start.packet = self.packet
                start.fires.append((None, "out", value))
                src = (start.name, "out")
            self._block(seg, src, self.size + 1, top=True)
        else:
            for _ in range(q.channels):
                load = self._new(seg, [("inp", "NONE")], [("out", "U64")])
                self._writes(seg, load, values=0)
                load.fires.append((None, "out", self._expr(seg, 0)))
                seg.entries.append(load)
                self._block(seg, (load.name, "out"), self.size + 1, top=True)
        if seg.sinks:
            frame = self.packet is not None and self.packet.frame
            seg.report = Elem(f"p{self.index}_report{seg.index}", [("inp", "NONE")],
                              [("out", "INT")] + [("drop", "NONE")] * frame)
            seg.report.report = self._hash(seg)
            seg.report.drops = frame

    def _frame_source(self, seg: SegmentSpec, start: Elem, value: Expr) -> tuple[str, str]:
        """``start`` -> `NetAlloc` -> `StoreFrame` -> an element filling the frame, which
        passes ``value`` on (``v0``, the packet's number, read from ``pid`` there): the
        port it does so from."""
        packet, pre = self.packet, f"p{self.index}_"
        start.fires.append((None, "alloc", Expr("+", (Expr("k", (packet.length,)), Expr(
            "*", (Expr("v", (0,)), Expr("k", (packet.step,))))))))
        seg.library[pre + "alloc"] = f'NetAlloc("{pre}alloc")'
        seg.library[pre + "store"] = f'StoreFrame("{pre}store")'
        fill = self._new(seg, [("inp", "NONE")], [("out", "U64")])
        fill.packet = packet
        self._packet_writes(seg, fill, values=0)
        fill.fires.append((None, "out", value.substitute(Expr("slot", (self._slot("pid"),)))))
        self._connect(seg, (start.name, "alloc"), (pre + "alloc", "inp"))
        self._connect(seg, (pre + "alloc", "out"), (pre + "store", "inp"))
        self._connect(seg, (pre + "store", "out"), (fill.name, "inp"))
        return (fill.name, "out")

    def _thread(self, seg: SegmentSpec) -> bool:
        """Whether ``seg`` runs as threads (not the callable push)."""
        return seg.index > 0 or self.source

    def segment(self, index: int) -> SegmentSpec:
        """The segment numbered ``index``."""
        return next(s for s in self.segments if s.index == index)

    def _slot(self, name: str) -> Slot:
        return next(f for f in self.fields if f.name == name).slots()[0]

    def _readable(self) -> list[Slot]:
        return [s for f in self.fields for s in f.slots()]

    def _writable(self) -> list[Slot]:
        return [s for f in self.fields if f.name not in ("pid", "tag", "res", "qid")
                for s in f.slots()]

    def _expr(self, seg: SegmentSpec, values: int, depth: int = 2,
              rng: random.Random | None = None, packet: bool = True) -> Expr:
        """An expression drawn from ``rng`` (the program's stream unless given); with a
        typed packet, a leaf is now and then replaced by a read of it (``packet``)."""
        r = rng or self._rng
        if depth == 0 or r.random() < 0.3:
            leaf = self._leaf(seg, values, r, packet)
            if packet and self.packet is not None \
                    and self._packet_rng.random() < self.packet.read_rate:
                return self._packet_read(seg, values)
            return leaf
        op = r.choice(["+", "-", "*", "^", "&", "|", ">>"])
        if op == ">>":
            return Expr(">>", (self._expr(seg, values, depth - 1, rng, packet), r.randint(1, 63)))
        return Expr(op, (self._expr(seg, values, depth - 1, rng, packet),
                         self._expr(seg, values, depth - 1, rng, packet)))

    def _leaf(self, seg: SegmentSpec, values: int, r: random.Random, packet: bool) -> Expr:
        kinds = {"k": 3, "slot": 6, "v": 4 * values, "tbl": 1, "base": 0.5,
                 "cnt": 1 if seg.ordered and self._thread(seg) else 0,
                 "core": 1 if self._thread(seg) else 0}
        kind = r.choices(list(kinds), list(kinds.values()))[0]
        if kind == "k":
            return Expr("k", (r.choice([0, 1, 3, 7, 255, r.randrange(1 << 32),
                                       r.randrange(1 << 64)]),))
        if kind == "slot":
            return Expr("slot", (r.choice(self._readable()),))
        if kind == "v":
            return Expr("v", (r.randrange(values),))
        if kind == "tbl":
            return Expr("tbl", (self._expr(seg, values, 0, r, packet),))
        return Expr(kind)

    def _writes(self, seg: SegmentSpec, e: Elem, values: int, packet: bool = True) -> None:
        """Field writes (and, with ``packet``, reads and writes of the packet too)."""
        r = self._rng
        if seg.ordered and self._thread(seg) and r.random() < 0.3:
            e.counts = True
        for _ in range(r.choice([0, 1, 1, 2])):
            e.writes.append((r.choice(self._writable()), self._expr(seg, values,
                                                                   packet=packet)))
        if packet:
            self._packet_writes(seg, e, values)

    def _packet_writes(self, seg: SegmentSpec, e: Elem, values: int) -> None:
        """Now and then a statement or two changing the packet, among ``e``'s writes."""
        if self.packet is not None:
            for _ in range(self._packet_rng.choice([0, 0, 1, 1, 2])):
                e.writes.insert(self._packet_rng.randrange(len(e.writes) + 1),
                                (self._packet_write(seg, values), None))

    def _cond(self, seg: SegmentSpec, values: int) -> Cond:
        mod = self._rng.randint(2, 4)
        return Cond(self._expr(seg, values), mod, self._rng.randrange(mod))

    def _hash(self, seg: SegmentSpec) -> Expr:
        """What a Report puts in a row besides pid, tag and res: some fields, mixed, and
        some of the typed packet's bytes."""
        r = self._rng
        slots = r.sample(self._writable(), r.randint(1, min(3, len(self._writable()))))
        h: Expr = Expr("k", (r.randrange(1 << 32),))
        reads = [Expr("slot", (s,)) for s in slots]
        if self.packet is not None:
            reads += [self._packet_read(seg, 0, computed=False)
                      for _ in range(self._packet_rng.choice([0, 1, 1, 2]))]
            if self._packet_rng.random() < self.packet.whole_hash:
                reads.append(Expr("hash", (self.packet.size(),)))
        for read in reads:
            h = Expr("+", (Expr("*", (h, Expr("k", (1000003,)))), read))
        return h

    def _block(self, seg: SegmentSpec, src: tuple[str, str], depth: int,
               top: bool = False) -> None:
        """Extend the graph from output port ``src`` (carrying one uint64_t); ``top``: from
        the segment's entry (which does not end at once in a leaf)."""
        r = self._rng
        self._budget -= 1
        later = [s for s in self.segments if s.index > seg.index]
        unfed = any(not s.queue.producers for s in later)
        kinds = {"sink": 3, "leaf": 0 if top else 1, "queue": (8 if unfed else 3) if later else 0}
        if depth > 0 and self._budget > 0:
            kinds.update(step=3, fanout=2, switch=2, merge=1, join=2, two=1)
            if self.packet is not None and self.packet.frame:
                # One frame, one owner: a packet enqueued twice would share its buffer (or
                # its kept frame, which only one copy can take back).
                kinds.update(fanout=0, two=0)
        kind = r.choices(list(kinds), list(kinds.values()))[0]
        if kind == "sink":
            sink = self._new(seg, [("inp", "U64")], [("out", "NONE")])
            self._connect(seg, src, (sink.name, "inp"))
            sink.writes.append((self._slot("res"), Expr("v", (0,))))
            seg.sinks += 1
            sink.writes.append((self._slot("tag"), Expr("k", (seg.sinks,))))
            if any(f.name == "qid" for f in self.fields):
                sink.writes.append((self._slot("qid"), Expr("k", (0,))))
            sink.fires.append((None, "out", None))
            self._connect(seg, (sink.name, "out"), ("result",))
        elif kind == "leaf":
            leaf = self._new(seg, [("inp", "U64")], [])
            self._connect(seg, src, (leaf.name, "inp"))
            self._writes(seg, leaf, values=1)
        elif kind == "queue":
            unfed = [s for s in later if not s.queue.producers]
            target = r.choice(unfed or later)
            q = target.queue
            q.producers.add(seg.index)
            out = self._new(seg, [("inp", "U64")], [("out", "NONE")])
            self._connect(seg, src, (out.name, "inp"))
            self._writes(seg, out, values=1)
            if any(f.name == "qid" for f in self.fields):
                steer = Expr("k", (0,)) if q.inst == 1 else Expr("%", (self._expr(seg, 1), q.inst))
                out.writes.append((self._slot("qid"), steer))
            out.fires.append((None, "out", None))
            self._connect(seg, (out.name, "out"), ("enq", target.index, r.randrange(q.channels)))
        elif kind == "step":
            step = self._new(seg, [("inp", "U64")], [("out", "U64")])
            self._connect(seg, src, (step.name, "inp"))
            self._writes(seg, step, values=1)
            step.fires.append((None, "out", self._expr(seg, 1)))
            self._block(seg, (step.name, "out"), depth - 1)
        elif kind == "fanout":
            for _ in range(r.randint(2, 3)):
                self._block(seg, src, depth - 1)
        elif kind == "two":
            two = self._new(seg, [("inp", "U64")], [("a", "U64"), ("b", "U64")])
            self._connect(seg, src, (two.name, "inp"))
            self._writes(seg, two, values=1)
            two.fires += [(None, "a", self._expr(seg, 1)), (None, "b", self._expr(seg, 1))]
            self._block(seg, (two.name, "a"), depth - 1)
            self._block(seg, (two.name, "b"), depth - 1)
        elif kind in ("switch", "merge"):
            ports = ["a", "b", "c"][:r.randint(2, 3)]
            sw = self._new(seg, [("inp", "U64")], [(p, "U64") for p in ports])
            self._connect(seg, src, (sw.name, "inp"))
            self._writes(seg, sw, values=1)
            sw.switch = True
            has_else = r.random() < 0.7
            for i, p in enumerate(ports):
                last = i == len(ports) - 1
                sw.fires.append((None if last and has_else else self._cond(seg, 1), p,
                                 self._expr(seg, 1)))
            if kind == "switch":
                for p in ports:
                    self._block(seg, (sw.name, p), depth - 1)
            else:
                merged = self._new(seg, [("inp", "U64")], [("out", "U64")])
                for p in ports:
                    self._connect(seg, (sw.name, p), (merged.name, "inp"))
                self._writes(seg, merged, values=1)
                merged.fires.append((None, "out", self._expr(seg, 1)))
                self._block(seg, (merged.name, "out"), depth - 1)
        else:   # join: two chains of steps (one may filter) from src into one element
            join = self._new(seg, [("a", "U64"), ("b", "U64")], [("out", "U64")])
            for port in ("a", "b"):
                at = src
                for _ in range(r.randint(0, 2)):
                    step = self._new(seg, [("inp", "U64")], [("out", "U64")])
                    self._connect(seg, at, (step.name, "inp"))
                    self._writes(seg, step, values=1)
                    if r.random() < 0.25:
                        step.switch = True
                        step.fires.append((self._cond(seg, 1), "out", self._expr(seg, 1)))
                    else:
                        step.fires.append((None, "out", self._expr(seg, 1)))
                    at = (step.name, "out")
                self._connect(seg, at, (join.name, port))
            self._writes(seg, join, values=2)
            join.fires.append((None, "out", self._expr(seg, 2)))
            self._block(seg, (join.name, "out"), depth - 1)

    # ----- placement -----

    def groups(self) -> list[list[str]]:
        """The thread segments that must share a device (they feed one queue), each group
        listed once; groups holding a producer on the CPU for good (push) are left out."""
        parent = {s.index: s.index for s in self.segments}

        def find(i: int) -> int:
            while parent[i] != i:
                i = parent[i]
            return i
        for s in self.segments:
            if s.queue is not None:
                first, *rest = sorted(s.queue.producers) or [None]
                for o in rest:
                    parent[find(o)] = find(first)
        pinned = None if self.source else find(0)
        out: dict[int, list[str]] = {}
        for s in self.segments:
            if find(s.index) != pinned:
                out.setdefault(find(s.index), []).append(s.name)
        return list(out.values())

    def port(self) -> str | None:
        """The segment holding the program's packet I/O (a frame program's `NetAlloc`)."""
        return self.segments[0].name if self.packet is not None and self.packet.frame else None

    def threads(self, names: list[str]) -> int:
        """How many threads the segments ``names`` run."""
        return sum(s.threads for s in self.segments if s.name in names)

    # ----- the model -----

    def expected(self) -> str:
        """What the program prints: its rows sorted, then the count line."""
        rows = sorted(row for seg_rows in self.rows().values() for row in seg_rows)
        lines = [f"p{self.index} {' '.join(str(v) for v in row)}" for row in rows]
        return "\n".join(lines + [f"p{self.index}: {len(rows)} rows"]) + "\n"

    def rows(self) -> dict[int, list[tuple[int, int, int, int]]]:
        """The result rows each segment makes (pid, tag, res, hash), in the model's order."""
        return self._simulate()[0]

    def entries(self) -> dict[int, int]:
        """How many entries each thread segment's input queue receives."""
        return {i: len(e) for i, e in self._simulate()[1].items()}

    def _simulate(self) -> tuple[dict[int, list[tuple[int, int, int, int]]],
                                 dict[int, list[tuple[dict, int, int]]]]:
        inputs: dict[int, list[tuple[dict, int, int]]] = {s.index: [] for s in self.segments}
        rows: dict[int, list[tuple[int, int, int, int]]] = {}
        for seg in self.segments:
            run = SegmentRun(seg.table, seg.base)
            rows[seg.index] = []
            if seg.index == 0:
                packets = [(self._zero(), 0, 0, pid) for pid in range(PACKETS)]
            else:
                packets = [(dict(s), ch, inst, None) for s, ch, inst in inputs[seg.index]]
            for state, channel, inst, pid in packets:
                run.core = inst % seg.threads
                self._packet(seg, run, state, seg.entries[channel], pid, inputs, rows[seg.index])
        return rows, inputs

    def _zero(self) -> dict[tuple[str, str], int | bytes]:
        return {s.key: 0 for f in self.fields for s in f.slots()}

    def _packet(self, seg: SegmentSpec, run: SegmentRun, state: dict, entry: Elem,
                pid: int | None, inputs: dict, rows: list) -> None:
        """Run one packet (or dequeued entry) through ``seg`` from ``entry``."""
        joins: dict[str, dict[str, int]] = {}
        qid = ("qid", "")

        def deliver(dst: tuple, value: int | None) -> None:
            if dst[0] == "result":
                env = Env([], state, run)
                rows.append((state[("pid", "")], state[("tag", "")], state[("res", "")],
                             seg.report.report.value(env)))
            elif dst[0] == "enq":
                target = self.segment(dst[1])
                inst = state.get(qid, 0)
                assert 0 <= inst < target.queue.inst, "the generator steers into range"
                inputs[dst[1]].append((dict(state), dst[2], inst))
            elif dst[0] in seg.library:
                for d in seg.conns.get((dst[0], "out"), []):
                    deliver(d, None)
            else:
                elem = seg.elem(dst[0])
                if len(elem.inputs) > 1:
                    got = joins.setdefault(elem.name, {})
                    got[dst[1]] = value
                    if len(got) == len(elem.inputs):
                        del joins[elem.name]
                        run_elem(elem, [got[p] for p, _ in elem.inputs])
                else:
                    run_elem(elem, [value])

        def run_elem(elem: Elem, values: list) -> None:
            env = Env(values, state, run)
            if elem.packet is not None:
                state[PACKET] = elem.packet.initial(state[("pid", "")])
            if elem.counts:
                run.count += 1
            for target, e in elem.writes:
                target.store(env, e)
            for cond, port, e in elem.fires:
                if cond is not None and not cond.holds(env):
                    continue
                value = None if e is None else e.value(env)
                for dst in seg.conns.get((elem.name, port), []):
                    deliver(dst, value)
                if elem.switch:
                    return

        run_elem(entry, [pid] if pid is not None else [None])


# ----- rendering -----

APP_HEADER = '''"""Generated by tests/differential/generate.py: {what} (docs/testing.md)."""
from floem import (Array, Bool, CallableSegment, Double, Element, Field, Float, Flow, Frame,
                   Input, Int, Output, PerPacket, Persistent, Pointer, Queue, Segment, Sint,
                   SizeT, State, Uint, include, main, param, target)
from floem.library import DropFrame, NetAlloc, StoreFrame, packets

NIC = set(filter(None, param("nic", "", help="segments placed on the NIC, comma-separated").split(",")))
AUTO = set(filter(None, param("auto", "", help="segments the compiler may cut (target.AUTO)").split(",")))
TYPES = {{"NONE": (), "U64": (Uint(64),), "U32": (Uint(32),), "INT": (Int,), "SIZE": (SizeT,)}}


def device(name):
    """Where segment `name` runs: on the NIC when -D nic=... names it, cut by the compiler
    when -D auto=... does."""
    return target.AUTO if name in AUTO else target.NIC if name in NIC else target.CPU


class Table(State):
    """A persistent table, read-only: one per segment that reads one."""

    vals = Field(Array(Uint(32), {table}))
    base = Field(Uint(64))

    def init(self, vals=(0,) * {table}, base=0):
        self.vals = list(vals)
        self.base = base


class Counter(State):
    """A persistent packet counter, only in segments whose packets come in a fixed order."""

    n = Field(Uint(64))


class Node(Element):
    """An element whose ports and C body are given when it is created."""
{headers}
    def configure(self, body, ins, outs):
        for port, types in ins.items():
            setattr(self, port, Input(*TYPES[types]))
        for port, types in outs.items():
            setattr(self, port, Output(*TYPES[types]))
        self.body = body

    def impl(self):
        self.run_c(self.body)


class TableNode(Node):
    tbl = Persistent(Table)


class CountNode(Node):
    tbl = Persistent(Table)
    cnt = Persistent(Counter)


include(r\'\'\'
typedef struct {{ unsigned long long v[4]; }} dt_row_t;
static dt_row_t dt_rows[{rows}] __attribute__((unused));
static int dt_nrows __attribute__((unused));

static inline void dt_row(uint64_t pid, uint64_t tag, uint64_t res, uint64_t h)
{{
    if (dt_nrows < {rows}) {{
        dt_row_t *r = &dt_rows[dt_nrows++];
        r->v[0] = pid;
        r->v[1] = tag;
        r->v[2] = res;
        r->v[3] = h;
    }}
}}

/* A packet's bytes read or written as one big-endian number of `size` bytes at `off`: a
 * parser's view of raw bytes, the same on every platform. */
static inline uint64_t dt_peek(const void *p, unsigned off, unsigned size)
{{
    const uint8_t *b = (const uint8_t *)p + off;
    uint64_t v = 0;
    for (unsigned i = 0; i < size; i++)
        v = v << 8 | b[i];
    return v;
}}

static inline void dt_poke(void *p, unsigned off, unsigned size, uint64_t v)
{{
    uint8_t *b = (uint8_t *)p + off;
    for (unsigned i = size; i-- > 0; v >>= 8)
        b[i] = (uint8_t)v;
}}

/* Every byte of a packet: FNV-1a of them, and a fill that depends on the packet's number. */
static inline uint64_t dt_hash(const void *p, size_t n)
{{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const uint8_t *)p)[i]) * 1099511628211ull;
    return h;
}}

static inline void dt_fill(void *p, size_t n, uint64_t pid)
{{
    for (size_t i = 0; i < n; i++)
        ((uint8_t *)p)[i] = (uint8_t)(i * 7 + pid * 13 + 1);
}}

static inline int dt_compare(const void *a, const void *b)
{{
    const dt_row_t *x = a, *y = b;
    for (int i = 0; i < 4; i++)
        if (x->v[i] != y->v[i])
            return x->v[i] < y->v[i] ? -1 : 1;
    return 0;
}}

static inline void dt_print(int prog)
{{
    qsort(dt_rows, dt_nrows, sizeof dt_rows[0], dt_compare);
    for (int i = 0; i < dt_nrows; i++)
        printf("p%d %llu %llu %llu %llu\\n", prog, dt_rows[i].v[0], dt_rows[i].v[1],
               dt_rows[i].v[2], dt_rows[i].v[3]);
    printf("p%d: %d rows\\n", prog, dt_nrows);
    fflush(stdout);         /* a run that hangs later still shows how far it got */
    dt_nrows = 0;
}}
\'\'\')
'''
#: Result rows one program may make (the C buffer's size).
MAX_ROWS = 4096


def _indent(text: str, n: int) -> str:
    return "\n".join((" " * n + line) if line else line for line in text.split("\n"))


def _port(queue: str, side: str, channels: int, channel: int) -> str:
    return f"{queue}.{side}" + (f"[{channel}]" if channels > 1 else "")


class _Renderer:
    """The app-file text of one program (its part of an app)."""

    def __init__(self, p: Program) -> None:
        self.p = p
        self.rows = {i: len(r) for i, r in p.rows().items()}
        self.entries = p.entries()

    def module(self) -> list[str]:
        p = self.p
        out = [f"# ----- program {p.index} (seed {p.seed}, size {p.size}) -----", ""]
        for f in p.fields:
            if f.nested:
                out += [f"class {f.nested}(State):"]
                out += [f"    {m} = Field({t.floem})" for m, t in f.members]
                out += ["", ""]
        if p.packet is not None:
            for layout in p.packet.layout.nested() + [p.packet.layout]:
                out += [f"class {layout.name}(State):"]
                out += [f"    {m.name} = Field({m.floem_type()})" for m in layout.members]
                out += ["    packed = False"] * (not layout.packed)
                out += ["    union = True"] * layout.union
                out += ["", ""]
        out.append(f"class P{p.index}(State):")
        out += [f"    {f.name} = Field({f.floem_type()})" for f in p.fields]
        if p.packet is not None and p.packet.frame:
            out.append(f"    pkt = Frame({p.packet.layout.name})")
        elif p.packet is not None:
            out += [f'    pkt = Field(Pointer({p.packet.layout.name}), size="state->plen")',
                    f"    plen = Field({p.packet.length_type})",
                    f"    pbuf = Field({p.packet.buffer_type})"]
        if p.layout:
            out.append(f"    layout = {p.layout}")
        if not p.packed:
            out.append("    packed = False")
        out.append("")
        for seg in p.segments:
            if seg.queue is not None:
                q = seg.queue
                # A lossy queue has room for every entry it receives (its channels share
                # each instance's entries), so it never drops and the model stays exact.
                size = max(q.size, self.entries[seg.index]) if "lossless" in q.options \
                    else q.size
                options_text = "".join(f", {k}={v}" for k, v in q.options.items())
                out.append(f'{q.name} = Queue("{q.name}", channel={q.channels}, inst={q.inst}, '
                           f'size={size}{options_text})')
            if seg.report is not None:
                out.append(f'{seg.result_queue} = Queue("{seg.result_queue}", '
                           f'size={max(1, self.rows[seg.index])})')
            if self._tables(seg):
                out.append(f'{seg.name}_tbl = Table("{seg.name}_tbl", init=[{seg.table}, '
                           f'{seg.base}])')
            if self._counts(seg):
                out.append(f'{seg.name}_cnt = Counter("{seg.name}_cnt")')
        out += ["", "", f"class Prog{p.index}(Flow):", f"    state = PerPacket(P{p.index})", "",
                "    def impl(self):"]
        for seg in p.segments:
            out += self._segment(seg)
            if seg.report is not None:
                out += self._collect(seg)
        for seg in p.segments:
            if seg.index == 0 and not p.source:
                out.append(f'        {seg.name}("{seg.name}")')
            else:
                cores = list(range(seg.threads))
                out.append(f'        {seg.name}("{seg.name}", device=device("{seg.name}"), '
                           f'cores={cores})')
            if seg.report is not None:
                out.append(f'        {self._collect_name(seg)}("{self._collect_name(seg)}", '
                           f'default_return="0")')
        out += ["", "", f"Prog{p.index}()", "", ""]
        return out

    def _tables(self, seg: SegmentSpec) -> bool:
        return any(e.uses("tbl") or e.uses("base") for e in seg.elems) or self._counts(seg)

    def _counts(self, seg: SegmentSpec) -> bool:
        return any(e.counts or e.uses("cnt") for e in seg.elems)

    def _collect_name(self, seg: SegmentSpec) -> str:
        return f"p{self.p.index}_collect{seg.index}"

    def _create(self, seg: SegmentSpec, e: Elem) -> list[str]:
        if e.counts or e.uses("cnt"):
            cls, states = "CountNode", f"states=[{seg.name}_tbl, {seg.name}_cnt], "
        elif e.uses("tbl") or e.uses("base"):
            cls, states = "TableNode", f"states=[{seg.name}_tbl], "
        else:
            cls, states = "Node", ""
        ins = ", ".join(f'"{p}": "{t}"' for p, t in e.inputs)
        outs = ", ".join(f'"{p}": "{t}"' for p, t in e.outputs)
        return [f'{e.name} = {cls}("{e.name}", {states}body=r\'\'\'', _indent(e.body(), 4),
                f"\'\'\', ins={{{ins}}}, outs={{{outs}}})"]

    def _segment(self, seg: SegmentSpec) -> list[str]:
        if seg.index == 0 and not self.p.source:
            head = [f"        class {seg.name}(CallableSegment):",
                    "            def configure(self):",
                    "                self.inp = Input(Uint(32))", ""]
        else:
            head = [f"        class {seg.name}(Segment):"]
        body: list[str] = []
        for e in seg.elems:
            body += self._create(seg, e)
        body += [f"{name} = {make}" for name, make in seg.library.items()]
        q = seg.queue
        for ch, e in enumerate(seg.entries):
            if e.inputs:
                src = "self.inp" if q is None else _port(q.name, "deq", q.channels, ch)
                body.append(f"{src} >> {e.name}.inp")
        for (name, port), dsts in seg.conns.items():
            for d in dsts:
                if d[0] == "result":
                    dst = f"{seg.result_queue}.enq"
                elif d[0] == "enq":
                    tq = self.p.segment(d[1]).queue
                    dst = _port(tq.name, "enq", tq.channels, d[2])
                else:
                    dst = f"{d[0]}.{d[1]}"
                body.append(f"{name}.{port} >> {dst}")
        return head + ["            def impl(self):"] + [_indent(line, 16) for line in body] + [""]

    def _collect(self, seg: SegmentSpec) -> list[str]:
        name = self._collect_name(seg)
        r = seg.report
        return ([f"        class {name}(CallableSegment):",
                "            def configure(self):",
                "                self.inp = Input(Int)",
                "                self.out = Output(Int)", "",
                "            def impl(self):",
                _indent("\n".join(self._create(seg, r)), 16),
                f"                self.inp >> {seg.result_queue}.qid",
                f"                {seg.result_queue} >> {r.name}"
                + (f"\n                {r.name}.out >> self.out" if r.drops else " >> self.out")]
                + [f'                {r.name}.drop >> DropFrame("{name}_frames")'] * r.drops
                + [""])

    def main(self) -> list[str]:
        p = self.p
        collects = [self._collect_name(s) + "(0)" for s in p.segments if s.report is not None]
        total = sum(self.rows.values())
        out = [f"/* program {p.index}: {total} rows */"]
        if not p.source:
            out += [f"for (uint32_t i = 0; i < {PACKETS}; i++)", f"    p{p.index}_push(i);"]
        if collects:
            drain = " + ".join(collects)
            out += [f"for (int got = 0; got < {total}; ) {{",
                    f"    int n = {drain};",
                    "    if (n == 0)",
                    "        usleep(100);",
                    "    got += n;",
                    "}",
                    f"while ({drain} > 0)     /* more rows than expected: printed too */",
                    "    ;"]
        out.append(f"dt_print({p.index});")
        return out


def render_app(programs: list[Program]) -> str:
    """One app file holding ``programs``; its main runs them one after another."""
    what = ", ".join(f"program {p.index} (seed {p.seed}, size {p.size})" for p in programs)
    # Members of typed packets are in network order: floem_ntoh16/32 and floem_hton16/32.
    headers = "\n    c_headers = packets.HEADERS\n" if any(p.packet for p in programs) else ""
    text = APP_HEADER.format(what=what, table=TABLE_SIZE, rows=MAX_ROWS, headers=headers)
    renderers = [_Renderer(p) for p in programs]
    for r in renderers:
        text += "\n" + "\n".join(r.module())
    body = [line for r in renderers for line in r.main()]
    text += "\nmain(r\'\'\'\n" + _indent("\n".join(body), 4) + "\n\'\'\')\n"
    return text


def expected_output(programs: list[Program]) -> str:
    """What the app of ``programs`` prints."""
    return "".join(p.expected() for p in programs)


def batch(seed: int, size: int) -> list[Program]:
    """``size`` programs numbered 0 to size - 1, their seeds and sizes drawn from ``seed``."""
    rng = random.Random(seed)
    return [Program.generate(i, rng.randrange(2 ** 32), rng.randint(1, 3)) for i in range(size)]


def batches(size: int) -> st.SearchStrategy[list[Program]]:
    """Batches of ``size`` random programs (one seed each: hypothesis's favourite values,
    0 among them, still make batches of different programs of every size)."""
    return st.builds(batch, st.integers(0, 2 ** 32 - 1), st.just(size))
