"""The generated functions of a process as typed view models: what each C function is
called, what it takes and which statements it runs, for templates/process.c.j2 and
templates/functions.c.j2 to spell.

Every element instance is one function named after it; each output port is a dispatcher
calling the elements connected to it in program order; each input port of a join is an
entry function storing the port's values until the join has them all.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from floem.codegen.caches import CacheStep
from floem.codegen.queues import QueueEnd
from floem.ir import EdgeKind, ElementNode, PersistentState, PortTypes, ProgramIR, Role, SegmentIR
from floem.ir.cnames import c_global
from floem.ir.plan import ElementCounters, ElementPlan, ElementTrace, TracedPort


@dataclass(frozen=True)
class Param:
    """One C parameter (or struct member): its type and name."""

    type: str
    name: str


@dataclass(frozen=True)
class Function:
    """A generated C function's signature. ``hidden``: defined in one translation unit of
    its process for the others (not exported from a library); else ``static`` or public."""

    name: str
    params: list[Param]
    returns: str = "void"
    static: bool = True
    inline: bool = False
    noinline: bool = False
    hidden: bool = False


@dataclass(frozen=True)
class Call:
    """A call passing the packet and the first ``values`` values a dispatcher got."""

    function: str
    values: int


@dataclass
class ElementFunction:
    """The function of one element instance, in the order its statements run.

    ``pointers``: the persistent states the body reaches, by the name it uses;
    ``state_unused``: it never names the packet's state; ``unused``: the input values it
    never reads (a port need not be read); ``body``: the lowered C the user wrote
    (``#line`` to the app file); ``plumbing``: the queue or cache element whose statements
    the compiler writes (templates/queues.c.j2, caches.c.j2); ``forward``: an argument
    element's call of its output port; ``return_slot``: a return element's slot
    (``return_value``: it stores a value); ``orders``: elements ordered after this
    one, called with the packet once it is done; ``counters``: where its packet counters
    are (None: not counted); ``trace``: what it records of traced packets (None: a build
    without tracing, or queue plumbing); ``alone``: its body adds to its states' counters
    (``floem_add``) as their only writer, so plainly."""

    node: ElementNode
    function: Function
    where: str
    pointers: list[tuple[str, PersistentState]]
    state_unused: bool
    unused: tuple[str, ...] = ()
    body: str = ""
    plumbing: QueueEnd | CacheStep | None = None
    forward: Call | None = None
    return_slot: str = ""
    return_value: bool = False
    orders: list[str] = field(default_factory=list)
    counters: ElementCounters | None = None
    trace: ElementTrace | None = None
    alone: bool = False


@dataclass
class Dispatcher:
    """An output port's function: calls the elements connected to the port.

    ``used``: how many of its values some call passes (the rest are unused);
    ``packet_begin``: the port starts a packet (ElementPlan.begins_packets); ``new_packet``:
    the element emits packets of its own, so the state is made fresh after each
    (``next_seq``: the join sequence number moves on; ``clear_state``: the per-packet
    state is zeroed, when some field is read before it is written); ``fresh_state``: the
    type of the packet's state when it is a local of this function, passed on in place of
    the source's (empty: the state comes in); ``counter``: the index
    of the port's packet counter (None: not counted), ``shared``: counted atomically,
    ``tracked``: the element counts its runs that send nothing on, so the port tells it;
    ``trace``: what the port records of traced packets (None: nothing)."""

    owner: str
    port: str
    function: Function
    calls: list[Call]
    used: int
    packet_begin: bool
    new_packet: bool
    next_seq: bool
    clear_state: bool
    fresh_state: str = ""
    counter: int | None = None
    shared: bool = False
    tracked: bool = False
    trace: TracedPort | None = None


@dataclass
class JoinEntry:
    """An input port of a join: stores the port's values, calls the join when the
    other ports have theirs for the same packet."""

    element: str
    record: str             # the join's thread-local record of its inputs
    port: str
    function: Function
    values: int
    others: list[str]


def values(types: PortTypes, prefix: str) -> list[Param]:
    """Parameters ``prefix0, prefix1, ...`` of the given types."""
    return [Param(t.c, f"{prefix}{i}") for i, t in enumerate(types)]


def state_param(n: ElementNode) -> Param:
    """The packet's per-packet state, the first parameter of every element function."""
    return Param(f"{n.packet_state.name} *" if n.packet_state else "void *", "state")


def input_params(n: ElementNode, port: str | None) -> list[Param]:
    """The parameters carrying the values of input ``port`` (all inputs when None)."""
    ports = [port] if port else list(n.inputs)
    return [v for p in ports for v in values(n.inputs[p], f"{p}_")]


def element_signature(n: ElementNode, plan: ElementPlan) -> Function:
    """An element's function (planned as ``plan``): the state, and its input values (none for
    a join, whose entry functions take them; an argument element takes the callable's
    arguments)."""
    if n.role == Role.ARGS:
        params = values(next(iter(n.outputs.values())), "arg")
    else:
        params = [] if n.join else input_params(n, None)
    return Function(n.name, [state_param(n)] + params, static=not plan.shared,
                    noinline=plan.out_of_line, hidden=plan.shared)


def dispatcher_signature(n: ElementNode, plan: ElementPlan, port: str) -> Function:
    """The function firing output ``port`` of ``n`` (planned as ``plan``)."""
    return Function(plan.ports[port], [state_param(n)] + values(n.outputs[port], "v"),
                    inline=True)


def join_entry_signature(n: ElementNode, plan: ElementPlan, port: str) -> Function:
    """The entry function of input ``port`` of join ``n`` (planned as ``plan``)."""
    return Function(plan.entries[port], [state_param(n)] + input_params(n, port),
                    static=not plan.shared, hidden=plan.shared)


def prototypes(ir: ProgramIR, nodes: list[ElementNode]) -> list[Function]:
    """Every element, dispatcher and join entry function of ``nodes``."""
    result = []
    for n in nodes:
        plan = ir.element_plan(n.name)
        result.append(element_signature(n, plan))
        result.extend(dispatcher_signature(n, plan, p) for p in n.outputs)
        if n.join:
            result.extend(join_entry_signature(n, plan, p) for p in n.inputs)
    return result


def shared_functions(ir: ProgramIR, n: ElementNode) -> list[Function]:
    """The functions of ``n`` that another translation unit calls: its element function and
    a join's entries (its port dispatchers stay in its unit)."""
    plan = ir.element_plan(n.name)
    return [element_signature(n, plan)] + \
        [join_entry_signature(n, plan, p) for p in n.inputs if n.join]


def return_slot(segment: str) -> str:
    """The thread-local record holding callable ``segment``'s return value."""
    return c_global("segment", segment, "result")


def element_function(ir: ProgramIR, n: ElementNode,
                     plumbing: QueueEnd | CacheStep | None) -> ElementFunction:
    """The function of ``n``; ``plumbing``: a queue or cache element's (None for the
    others)."""
    plan = ir.element_plan(n.name)
    e = ElementFunction(
        node=n, function=element_signature(n, plan),
        where=f"{os.path.basename(n.loc.file)}:{n.loc.line}",
        pointers=[(attr, n.persistent[attr]) for attr in plan.pointers],
        state_unused=plan.state_unused, unused=plan.unused, body=plan.body, plumbing=plumbing,
        orders=[e.dst for e in ir.out_edges(n.name, kind=EdgeKind.ORDER)],
        counters=plan.counters, trace=plan.trace, alone=plan.alone)
    if n.role == Role.ARGS:
        out = next(iter(n.outputs))
        e.forward = Call(plan.ports[out], len(n.outputs[out]))
    elif n.role == Role.RETURN:
        e.return_slot, e.return_value = return_slot(n.segment), bool(n.inputs["inp"])
    return e


def dispatchers(ir: ProgramIR, n: ElementNode, joins_here: bool) -> list[Dispatcher]:
    """The functions of ``n``'s output ports; ``joins_here``: the process has a join, so
    packets carry sequence numbers."""
    result = []
    plan = ir.element_plan(n.name)
    counters = plan.counters
    for port, types in n.outputs.items():
        calls = []
        for e in ir.out_edges(n.name, port):
            target = ir.node(e.dst)
            function = ir.element_plan(e.dst).entries[e.in_port] if target.join else e.dst
            calls.append(Call(function, len(target.inputs[e.in_port])))
        result.append(Dispatcher(
            owner=n.name, port=port, function=dispatcher_signature(n, plan, port), calls=calls,
            used=min(len(types), max((c.values for c in calls), default=0)),
            packet_begin=plan.begins_packets, new_packet=plan.emits_packets,
            next_seq=plan.emits_packets and joins_here,
            clear_state=plan.emits_packets and bool(ir.liveness.read_first[n.segment]),
            fresh_state=n.packet_state.name if plan.fresh_state and n.packet_state else "",
            counter=counters.port(port) if counters else None,
            shared=bool(counters and counters.shared),
            tracked=bool(counters and counters.ended is not None),
            trace=plan.trace.port(port) if plan.trace else None))
    return result


def join_entries(ir: ProgramIR, n: ElementNode) -> list[JoinEntry]:
    """The entry functions of join ``n``'s input ports."""
    plan = ir.element_plan(n.name)
    return [JoinEntry(n.name, plan.inputs_record, port, join_entry_signature(n, plan, port),
                      len(n.inputs[port]),
                      [p for p in n.inputs if p != port]) for port in n.inputs]


def callable_signature(ir: ProgramIR, seg: SegmentIR) -> Function:
    """The C function a callable segment is for its callers: its arguments, its return."""
    types = next(iter(ir.node(seg.source).outputs.values()))
    return Function(seg.name, values(types, "arg"), returns=return_type(ir, seg) or "void",
                    static=False)


def return_element(ir: ProgramIR, seg: SegmentIR) -> ElementNode | None:
    """The segment's return element, if it has one."""
    return next((ir.node(n) for n in seg.elements if ir.node(n).role == Role.RETURN), None)


def return_type(ir: ProgramIR, seg: SegmentIR) -> str:
    """The C type a callable segment returns ("" for none)."""
    ret = return_element(ir, seg)
    return ret.inputs["inp"][0].c if ret is not None and ret.inputs["inp"] else ""


