"""C for lowered queues: entry structs and the enqueue, dequeue, save and release bodies.

An entry of channel ``c`` of queue ``q`` is ``struct q_entry<c>``: the
channel's live fixed-size fields, a ``<f>_len`` for each live variable-size
field, then the variable-size bytes, one field after the other.
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
    """C definitions of the entry structs of the channels that carry something."""
    out = []
    for ch in chans:
        if ch.empty:
            continue
        members = [f"    {f.type.declare(f.name)};" for f in ch.fixed]
        members += [f"    uint32_t {f.name}_len;" for f in ch.variable]
        carries = ", ".join(f.name for f in ch.fixed + ch.variable)
        out.append(f"/* {ch.queue.name} channel {ch.index} carries {carries}. */\n"
                   f"struct {ch.struct} {{\n" + "\n".join(members) + "\n} __attribute__((packed));")
    return out


def payload_expr(chans: list[Channel]) -> str:
    """C expression: payload bytes one entry needs (largest channel, with variable room)."""
    sizes = []
    for ch in chans:
        if ch.empty:
            continue
        extra = f" + {DEFAULT_VARIABLE_BYTES}" if ch.variable else ""
        sizes.append(f"sizeof(struct {ch.struct}){extra}")
    if not sizes:
        return "0"
    expr = sizes[0]
    for s in sizes[1:]:
        expr = f"FLOEM_MAX({expr}, {s})"
    return expr


def enqueue_body(ir: ProgramIR, n: ElementNode, ch: Channel) -> list[str]:
    """Statements of an enqueue element: pick the instance, reserve, copy live fields, commit."""
    q = ch.queue
    has_qid = n.state_class is not None and any(f.name == "qid" for f in n.state_class.fields())
    lines = [f"uint32_t qid = {'(uint32_t)state->qid' if has_qid else '0'};",
             f"if (qid >= {q.instances}) {{",
             f"    __atomic_fetch_add(&{q.name}_bad_qid, 1, __ATOMIC_RELAXED);",
             "    return;",
             "}",
             f"floem_queue_t *q = {q.name}_inst[qid];"]
    for f in ch.variable:
        lines.append(f"size_t {f.name}_len = (size_t)({f.size});")
    if ch.variable:
        total = " + ".join(f"{f.name}_len" for f in ch.variable)
        lines += [f"if (sizeof(struct {ch.struct}) + {total} > {q.name}_payload) {{",
                  "    floem_enq_drop(q);",
                  "    return;",
                  "}"]
    mp = "true" if q.multi_producer else "false"
    lines.append("void *entry;")
    if q.lossless:
        lines += [f"while ((entry = floem_enq_reserve(q, {mp})) == NULL) {{",
                  "    if (!floem_running()) {",
                  "        floem_enq_drop(q);",
                  "        return;",
                  "    }",
                  "}"]
    else:
        lines += [f"if ((entry = floem_enq_reserve(q, {mp})) == NULL) {{",
                  "    floem_enq_drop(q);",
                  "    return;",
                  "}"]
    if not ch.empty:
        lines.append(f"struct {ch.struct} *e = entry;")
        lines += _copies(ch, "e->{f}", "state->{f}")
        offset = f"sizeof(struct {ch.struct})"
        for f in ch.variable:
            lines += [f"e->{f.name}_len = (uint32_t){f.name}_len;",
                      f"memcpy((char *)entry + {offset}, state->{f.name}, {f.name}_len);"]
            offset += f" + {f.name}_len"
    lines.append(f"floem_enq_commit(q, entry, {ch.index});")
    return lines


def dequeue_body(ir: ProgramIR, n: ElementNode, q: QueueIR, threads: int) -> list[str]:
    """Statements of a dequeue: take the oldest entry of this thread's (or qid's) instance."""
    mc = "true" if q.multi_consumer else "false"
    if "qid" in n.inputs:
        lines = [f"if (qid_0 < 0 || qid_0 >= {q.instances})",
                 "    return;",
                 f"floem_queue_t *q = {q.name}_inst[qid_0];"]
    else:
        lines = [f"static _Thread_local int next = -1;",
                 "if (next < 0)",
                 "    next = floem_core_id;",
                 f"if (next >= {q.instances}) {{",
                 "    floem_idle = 1;",
                 "    return;",
                 "}",
                 f"floem_queue_t *q = {q.name}_inst[next];",
                 f"next += {threads};",
                 f"if (next >= {q.instances})",
                 "    next = floem_core_id;"]
    lines += ["uint16_t channel;",
              f"void *entry = floem_deq_acquire(q, {mc}, &channel);",
              "if (entry == NULL) {",
              "    floem_idle = 1;",
              "    return;",
              "}",
              f"{q.name}_held.q = q;",
              f"{q.name}_held.entry = entry;",
              "switch (channel) {"]
    for c in range(q.channels):
        lines.append(f"case {c}: {n.name}_out{c}(state); break;")
    lines.append("}")
    return lines


def save_body(ch: Channel) -> list[str]:
    """Statements of a save: fill the per-packet state from the held entry."""
    if ch.empty:
        return []
    lines = [f"const struct {ch.struct} *e = {ch.queue.name}_held.entry;"]
    lines += _copies(ch, "state->{f}", "e->{f}")
    offset = f"sizeof(struct {ch.struct})"
    for f in ch.variable:
        lines.append(f"state->{f.name} = (void *)((char *){ch.queue.name}_held.entry + {offset});")
        offset += f" + e->{f.name}_len"
    return lines


def _copies(ch: Channel, dst: str, src: str) -> list[str]:
    lines = []
    for f in ch.fixed:
        if f.type.array_len is not None:
            lines.append(f"memcpy({dst.format(f=f.name)}, {src.format(f=f.name)}, "
                         f"sizeof({dst.format(f=f.name)}));")
        else:
            lines.append(f"{dst.format(f=f.name)} = {src.format(f=f.name)};")
    return lines
