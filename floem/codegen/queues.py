"""C for lowered queues: entry structs and the enqueue, dequeue, save and release bodies.

An entry of channel ``c`` of queue ``q`` is ``struct q_entry<c>``: the
channel's live fixed-size fields, a ``<f>_len`` for each live variable-size
field, then the variable-size bytes, one field after the other, each starting
at a multiple of 8 bytes from the payload (so a pointer to a struct that is
not packed can point at them).
"""
from __future__ import annotations

from dataclasses import dataclass

from floem.ir import ElementNode, ProgramIR, QueueIR
from floem.lang.state import Field

DEFAULT_VARIABLE_BYTES = 256


@dataclass
class Channel:
    """What one channel's entries carry."""

    queue: QueueIR
    index: int
    fixed: list[Field]
    variable: list[Field]

    @property
    def struct(self) -> str:
        """The C struct tag of the entry, e.g. ``q1_entry0``."""
        return f"{self.queue.name}_entry{self.index}"

    @property
    def empty(self) -> bool:
        """True when the channel carries no field at all."""
        return not self.fixed and not self.variable


def channels(ir: ProgramIR, q: QueueIR) -> list[Channel]:
    """The channels of ``q`` with their fields split into fixed and variable-size."""
    state = ir.node(q.dequeuer).state_class
    by_name = {f.name: f for f in state.fields()} if state else {}
    result = []
    for c, names in enumerate(q.fields):
        fields = [by_name[n] for n in names]
        result.append(Channel(q, c, [f for f in fields if not f.size],
                              [f for f in fields if f.size]))
    return result


def entry_structs(chans: list[Channel]) -> list[str]:
    """C definitions of the entry structs of the channels that carry something.

    With a fixed ``entry_size``, a static assertion checks each struct fits.
    """
    out = []
    for ch in chans:
        if ch.empty:
            continue
        members = [f"    {f.type.declare(f.name)};" for f in ch.fixed]
        members += [f"    uint32_t {f.name}_len;" for f in ch.variable]
        carries = ", ".join(f.name for f in ch.fixed + ch.variable)
        text = (f"/* {ch.queue.name} channel {ch.index} carries {carries}. */\n"
                f"struct {ch.struct} {{\n" + "\n".join(members) + "\n} __attribute__((packed));")
        if ch.queue.entry_size:
            text += (f"\n_Static_assert(sizeof(struct {ch.struct}) + FLOEM_QUEUE_ENTRY_HEADER_BYTES"
                     f" <= {ch.queue.entry_size}, \"queue {ch.queue.name}: entry_size="
                     f"{ch.queue.entry_size} is too small for channel {ch.index}\");")
        out.append(text)
    return out


def variable_room(ch: Channel) -> int:
    """Bytes an entry of ``ch`` keeps after its fixed part: variable bytes and their alignment."""
    return DEFAULT_VARIABLE_BYTES + 8 * len(ch.variable) if ch.variable else 0


def payload_expr(chans: list[Channel]) -> str:
    """C expression: payload bytes one entry needs (largest channel, with variable room)."""
    sizes = []
    for ch in chans:
        if ch.empty:
            continue
        extra = f" + {variable_room(ch)}" if ch.variable else ""
        sizes.append(f"sizeof(struct {ch.struct}){extra}")
    if not sizes:
        return "0"
    expr = sizes[0]
    for s in sizes[1:]:
        expr = f"FLOEM_MAX({expr}, {s})"
    return expr


@dataclass(frozen=True)
class Access:
    """How one side of a process reaches a queue's instances.

    ``synced``: a NIC end of a host-resident queue, through the synchronization
    layer (entries in wire byte order); otherwise the queue runtime directly.
    ``manage``: call the sync manager inline while waiting (no manager cores).
    """

    synced: bool = False
    manage: bool = False

    @property
    def handle(self) -> str:
        """C type of an instance handle."""
        return "floem_sync_t" if self.synced else "floem_queue_t"

    def table(self, q: QueueIR) -> str:
        """C array of the instance handles of ``q``."""
        return f"{q.name}_sync" if self.synced else f"{q.name}_inst"

    def reserve(self, multi: bool) -> str:
        """C expression: a free entry of instance handle ``q``, or NULL."""
        return "floem_sync_enq_reserve(q)" if self.synced else \
            f"floem_enq_reserve(q, {'true' if multi else 'false'})"

    def commit(self, channel: int) -> str:
        """C statement publishing ``entry`` on ``channel``."""
        return f"floem_{'sync_' if self.synced else ''}enq_commit(q, entry, {channel});"

    def drop(self) -> str:
        """C statement counting a dropped packet."""
        return f"floem_{'sync_' if self.synced else ''}enq_drop(q);"

    def acquire(self, multi: bool) -> str:
        """C expression: the oldest entry of ``q`` (its channel into ``channel``), or NULL."""
        return "floem_sync_deq_acquire(q, &channel)" if self.synced else \
            f"floem_deq_acquire(q, {'true' if multi else 'false'}, &channel)"

    def release(self, q: QueueIR) -> str:
        """C statement handing the held entry of ``q`` back to the producer."""
        return (f"floem_{'sync_' if self.synced else ''}deq_release("
                f"{q.name}_held.q, {q.name}_held.entry);")


def enqueue_body(n: ElementNode, ch: Channel, access: Access, full_port: bool) -> list[str]:
    """Statements of an enqueue element: pick the instance, reserve, copy live fields, commit.
    ``full_port``: a lossy queue whose full port is connected sends the packet there when
    its instance is full, instead of dropping and counting it."""
    q = ch.queue
    has_qid = n.state_class is not None and any(f.name == "qid" for f in n.state_class.fields())
    if has_qid:                     # instance state->qid, counted when out of range
        lines = ["uint32_t qid = (uint32_t)state->qid;",
                 f"if (qid >= {q.instances}) {{",
                 f"    __atomic_fetch_add(&{q.name}_bad_qid, 1, __ATOMIC_RELAXED);",
                 "    return;",
                 "}",
                 f"{access.handle} *q = {access.table(q)}[qid];"]
    else:
        lines = [f"{access.handle} *q = {access.table(q)}[0];"]
    end = f"sizeof(struct {ch.struct})"
    for f in ch.variable:
        lines += [f"size_t {f.name}_len = (size_t)({f.size});",
                  f"size_t {f.name}_at = FLOEM_ALIGN8({end});"]
        end = f"{f.name}_at + {f.name}_len"
    if ch.variable:
        lines += [f"if ({end} > {q.name}_payload) {{",
                  f"    {access.drop()}",
                  "    return;",
                  "}"]
    lines.append("void *entry;")
    if q.lossless:
        lines += [f"while ((entry = {access.reserve(q.multi_producer)}) == NULL) {{",
                  "    if (!floem_running()) {",
                  f"        {access.drop()}",
                  "        return;",
                  "    }"]
        lines += ["    floem_sync_manage(q);"] if access.manage else []
        lines += ["    floem_full_wait();", "}"]
    else:
        full = [f"    {n.name}_full(state);"] if full_port else [f"    {access.drop()}"]
        lines += [f"if ((entry = {access.reserve(q.multi_producer)}) == NULL) {{",
                  *full,
                  "    return;",
                  "}"]
    if not ch.empty:
        lines.append(f"struct {ch.struct} *e = entry;")
        lines += _copies(ch.fixed, "e->", "state->", access.synced)
        for f in ch.variable:
            length = f"(uint32_t){f.name}_len"
            lines += [f"e->{f.name}_len = {_wire(length, access.synced)};",
                      f"memcpy((char *)entry + {f.name}_at, state->{f.name}, {f.name}_len);"]
    lines.append(access.commit(ch.index))
    return lines


def dequeue_body(n: ElementNode, q: QueueIR, threads: int, access: Access) -> list[str]:
    """Statements of a dequeue: take the oldest entry of this thread's (or qid's) instance."""
    if "qid" in n.inputs:
        lines = [f"if (qid_0 < 0 || qid_0 >= {q.instances})",
                 "    return;",
                 f"{access.handle} *q = {access.table(q)}[qid_0];"]
    else:
        lines = ["static _Thread_local int next = -1;",
                 "if (next < 0)",
                 "    next = floem_core_id;",
                 f"if (next >= {q.instances}) {{",
                 "    floem_idle = 1;",
                 "    return;",
                 "}",
                 f"{access.handle} *q = {access.table(q)}[next];",
                 f"next += {threads};",
                 f"if (next >= {q.instances})",
                 "    next = floem_core_id;"]
    lines += ["uint16_t channel;",
              f"void *entry = {access.acquire(q.multi_consumer)};",
              "if (entry == NULL) {",
              "    floem_idle = 1;"]
    lines += ["    floem_sync_manage(q);"] if access.manage else []
    lines += ["    return;",
              "}",
              f"{q.name}_held.q = q;",
              f"{q.name}_held.entry = entry;",
              "switch (channel) {"]
    for c in range(q.channels):
        lines.append(f"case {c}: {n.name}_out{c}(state); break;")
    lines.append("}")
    return lines


def save_body(ch: Channel, access: Access) -> list[str]:
    """Statements of a save: fill the per-packet state from the held entry."""
    if ch.empty:
        return []
    lines = [f"const struct {ch.struct} *e = {ch.queue.name}_held.entry;", "(void)e;"]
    lines += _copies(ch.fixed, "state->", "e->", access.synced)
    end = f"sizeof(struct {ch.struct})"
    for f in ch.variable:
        lines.append(f"state->{f.name} = (void *)((char *){ch.queue.name}_held.entry + "
                     f"FLOEM_ALIGN8({end}));")
        end = f"FLOEM_ALIGN8({end}) + {_wire(f'e->{f.name}_len', access.synced)}"
    return lines


def release_body(q: QueueIR, access: Access) -> list[str]:
    """Statements of a release: hand the held entry back to the producer."""
    return [access.release(q), f"{q.name}_held.entry = NULL;"]


def _wire(expr: str, wire: bool) -> str:
    return f"floem_wire({expr})" if wire else expr


def _copies(fields: list[Field], dst: str, src: str, wire: bool) -> list[str]:
    """Copy fields ``src<f>`` to ``dst<f>``; in wire order, scalars are converted one by one."""
    lines = []
    for f in fields:
        d, s = f"{dst}{f.name}", f"{src}{f.name}"
        if f.state_class is not None and wire:
            lines += _copies(f.state_class.fields(), d + ".", s + ".", wire)
        elif f.type.array_len is not None:
            if wire and not f.type.c.endswith("*") and f.type.c not in _BYTES:
                lines.append(f"for (size_t i = 0; i < {f.type.array_len}; i++) "
                             f"{d}[i] = floem_wire({s}[i]);")
            else:
                lines.append(f"memcpy({d}, {s}, sizeof({d}));")
        else:                               # a pointer means nothing elsewhere: not converted
            lines.append(f"{d} = {_wire(s, wire and not f.type.c.endswith('*'))};")
    return lines


_BYTES = {"char", "signed char", "unsigned char", "uint8_t", "int8_t", "bool"}


def wire_function(cls: type) -> str:
    """``floem_wire_<S>(S *s)``: convert a State between NIC and wire byte order, in place.

    NIC code reading host-resident state with ``dma_read`` calls it after the
    read and before ``dma_write``; on a little-endian NIC it does nothing.
    """
    name = cls.c_type_name()
    lines = [f"static inline void floem_wire_{name}({name} *s)", "{", "    (void)s;"]
    for f in cls.fields():
        if f.state_class is not None:
            lines.append(f"    floem_wire_{f.state_class.c_type_name()}(&s->{f.name});")
        elif f.type.array_len is not None and f.type.c not in _BYTES and not f.type.c.endswith("*"):
            lines.append(f"    for (size_t i = 0; i < {f.type.array_len}; i++) "
                         f"s->{f.name}[i] = floem_wire(s->{f.name}[i]);")
        elif f.type.array_len is None and not f.type.c.endswith("*"):
            lines.append(f"    s->{f.name} = floem_wire(s->{f.name});")
    lines.append("}")
    return "\n".join(lines)
