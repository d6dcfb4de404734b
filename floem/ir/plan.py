"""What the backend-planning pass decides for code generation, and the C names both share.

`plan_code` (the last pass) makes these records, in its `floem.ir.results.Plan`; code
generation only prints them.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

#: The hidden per-packet field carrying a traced packet's id across queues (trace_packets).
TRACE_FIELD = "_floem_trace"
#: The file the ``--trace-filter`` expression is in, for gcc (``#line``) and for errors.
TRACE_FILTER_FILE = "--trace-filter"
#: Field values one trace event holds at most (FLOEM_TRACE_VALUES, floem/trace.h).
TRACE_VALUES = 255


class QueueLayout(StrEnum):
    """How a queue's instances are laid out and handed over (runtime/include/floem/queue.h)."""

    TURNS = "turns"     # each entry's turn in its header: what the NIC's DMA moves
    RING = "ring"       # positions on lines of their own, published in batches: host threads


@dataclass(frozen=True)
class QueueSide:
    """How one process reaches one queue."""

    synced: bool            # a NIC end of a host-resident queue: through the sync layer
    manage_inline: bool     # no manager cores: the NIC thread runs the sync manager while waiting
    enqueues: bool          # an element of the process enqueues into the queue
    dequeues: bool          # an element of the process dequeues from it
    counts: bool            # the process prints the instances' counters (one side does)
    shared_shadow: bool     # several NIC threads share the sync shadow (atomic variant)

    def describe(self) -> str:
        """One line for the IR dump."""
        ends = [what for what, here in (("enqueues", self.enqueues), ("dequeues", self.dequeues))
                if here] or ["holds"]
        how = "through the sync layer" if self.synced else "directly"
        extra = [", manages the sync inline" if self.manage_inline else "",
                 ", shared shadow" if self.synced and self.shared_shadow else "",
                 ", prints its counters" if self.counts else ""]
        return f"{' and '.join(ends)} {how}{''.join(extra)}"


@dataclass(frozen=True)
class ElementCounters:
    """One element's packet counters in its process's counter array
    (runtime/include/floem/counters.h). Each output port has a counter, except the port of
    an element whose every run sends exactly one packet on it (None: it sent what came in);
    packets in are counted only where the feeding ports' counters cannot say (``runs``:
    after a queue, in a callable, at a join), and runs that sent nothing on only where some
    run may send on more than one packet (``ended``; otherwise in minus out, or none at all
    where every run sends exactly one packet on: ``never_ends``)."""

    has_inputs: bool                    # it has input ports (a source has none)
    runs: int | None                    # its own counter of runs (packets in)
    ended: int | None                   # its own counter of runs that sent nothing on
    fed_by: tuple[int, ...]             # without ``runs``: the counters of the ports feeding it
    outs: tuple[tuple[str, int | None], ...]    # each output port and its counter (None:
    #   the packets in)
    shared: bool                        # several threads may run it at once: atomic increments
    never_ends: bool = False            # every run sends exactly one packet on (an output
    #   switch with an else case): it ends none, read as 0 even while packets move

    def port(self, port: str) -> int | None:
        """Index of the counter of output ``port`` (None: it counts the packets in)."""
        return dict(self.outs)[port]

    def layout_line(self, element: str, segment: str) -> str:
        """Its line of the process's counter layout text: NAME SEGMENT IN ENDED OUTS."""
        packets_in = ("-" if not self.has_inputs else f"={self.runs}" if self.runs is not None
                      else "+" + ",".join(map(str, self.fed_by)))
        ended = ("-" if not self.has_inputs else f"={self.ended}" if self.ended is not None
                 else "0" if self.never_ends else "~")
        outs = ",".join(f"{p}:{'*' if i is None else i}" for p, i in self.outs) or "-"
        return f"{element} {segment} {packets_in} {ended} {outs}\n"


class TraceKind(StrEnum):
    """What a trace site records, the first word of its line in a trace file's site table
    (floem/trace.py reads them): an element's run (``enter``), a run that sent nothing on
    (``end``), a packet going into a queue (``enq``), and what an output port records
    (`TracedPort`: ``admit``, ``restore``, ``send``)."""

    ENTER = "enter"
    END = "end"
    ENQ = "enq"
    ADMIT = "admit"
    RESTORE = "restore"
    SEND = "send"


@dataclass(frozen=True)
class TracedPort:
    """What an output port of a traced element records (runtime/include/floem/trace.h):
    ``admit``, a packet enters the program here (a source, a callable's arguments, a queue
    that cannot carry its id) and gets an id if it is among the first traced and the
    ``--trace-filter`` selects it (or, ``pending``, is traced tentatively until a port
    further on ``decides``); ``restore``, a packet comes out of a queue with the id it went
    in with; ``send``, the packet goes on. ``fields``: the per-packet fields whose values it
    records, with their number kind."""

    kind: TraceKind
    site: int
    fields: tuple[tuple[str, str], ...] = ()
    once: bool = True               # admit: one packet per run of the element, not per output
    filter: str = ""                # admit: the --trace-filter lowered to C ("" for none)
    pending: bool = False           # admit: the filter is decided later in the segment
    decides: str = ""               # send: the filter, decided here for a pending packet


@dataclass(frozen=True)
class ElementTrace:
    """What one element records when a traced packet passes (plan_code): its run (``enter``,
    with ``enter_fields``), a run that sent nothing on (``end``), and per output port a
    `TracedPort`; an enqueue ``carries`` the packet's id into the queue's entry."""

    enter: int | None = None
    enter_fields: tuple[tuple[str, str], ...] = ()
    end: int | None = None
    carries: bool = False
    ports: tuple[tuple[str, TracedPort], ...] = ()
    untraced: bool = False          # a packet entry the --trace-filter cannot select

    def port(self, port: str) -> TracedPort | None:
        """What output ``port`` records (None: nothing)."""
        return dict(self.ports).get(port)

    def describe(self) -> str:
        """Its part of the element's line in the IR dump."""
        parts = [f"{what} {site}" for what, site in (("enter", self.enter), ("end", self.end))
                 if site is not None]
        for port, t in self.ports:
            fields = f" ({', '.join(name for name, _ in t.fields)})" if t.fields else ""
            how = (" filtered" if t.filter else " pending the filter" if t.pending
                   else " deciding the filter" if t.decides else "")
            parts.append(f"{port} {t.kind}{how} {t.site}{fields}")
        parts += ["carries the id"] if self.carries else []
        parts += ["admits no packet (--trace-filter)"] if self.untraced else []
        return f"trace: {', '.join(parts)}"


@dataclass(frozen=True)
class ProcessPlan:
    """What the C of one process needs besides its elements."""

    units: tuple[tuple[str, ...], ...] = ((),)  # the elements of each translation unit:
    #   the first (<process>.c) also holds the process's globals and lifecycle
    imports: tuple[tuple[str, ...], ...] = ((),)    # for each unit, the elements of the
    #   others it calls (their functions are declared there)
    one_unit_for: tuple[str, ...] = ()  # what floem.include defines that keeps a process of
    #   more than UNIT_ELEMENTS elements in one unit
    managers: int = 0                    # NIC cores running the sync managers
    threads_manage: bool = False         # no manager cores: NIC threads run the managers
    network: bool = False                # packet I/O is initialised
    net_queues: int = 1                  # NIC queues: the widest network-using segment's threads
    own_orders: bool = False             # every frame is sent or given back by the thread
    #   that received it (no queue in the process, network only in thread segments): its
    #   threads send in order, the runtime keeps no orders of datagrams (floem_net_keep_orders)
    queues: Mapping[str, QueueSide] = field(default_factory=dict)
    publishing: tuple[str, ...] = ()     # segments enqueuing into ring queues: they publish
    #   their entries at the end of each turn (or call), and before waiting for room
    counters: int = 0                    # element counters (0: built without them)
    counter_layout: str = ""             # their layout, one line per element
    kept_frames: int = 0                 # slots of the pool of frames kept by the port (0: none)
    kept_frame_timeout_ms: int = 0       # after which a kept frame is reclaimed
    counter_notes: tuple[tuple[int, str], ...] = ()     # (layout line, a
    #   report = True state its element uses): the state's line goes under that row
    trace_number: int = 0                # traced build: the process's number in trace ids
    trace_sites: tuple[str, ...] = ()    # what each trace site records

    def describe(self) -> list[str]:
        """Lines for the IR dump."""
        network = f"network with {self.net_queues} queue(s)" if self.network else "no network"
        network += ", frames finished by the threads that received them" if self.own_orders \
            else ""
        managing = ", threads run the sync managers" if self.threads_manage else ""
        counting = f", {self.counters} element counters" if self.counters else ""
        keeping = (f", keeps up to {self.kept_frames} frames for "
                   f"{self.kept_frame_timeout_ms} ms" if self.kept_frames else "")
        tracing = (f", traced as process {self.trace_number} with {len(self.trace_sites)} "
                   "trace sites" if self.trace_number else "")
        publishing = (f", ring entries published by {', '.join(self.publishing)}"
                      if self.publishing else "")
        units = (f", {len(self.units)} translation units of "
                 f"{', '.join(str(len(u)) for u in self.units)} elements"
                 if len(self.units) > 1 else "")
        units += (f", one translation unit: floem.include defines {', '.join(self.one_unit_for)}"
                  if self.one_unit_for else "")
        lines = [f"  plan: {self.managers} manager core(s){managing}, {network}{counting}"
                 f"{keeping}{tracing}{publishing}{units}"]
        lines += [f"  queue {name}: {side.describe()}" for name, side in self.queues.items()]
        return lines


@dataclass(frozen=True)
class ElementPlan:
    """The C of one element: its lowered body and the choices around it."""

    body: str = ""                  # the user's body as plain C ("" for compiler-made nodes)
    unused: tuple[str, ...] = ()    # its function's input values the body never reads (the
    #   C the compiler writes for queue and cache elements reads every value it gets)
    pointers: tuple[str, ...] = ()  # persistent states the body uses
    steers_by_qid: bool = False     # an enqueue choosing the instance from state->qid
    spreads_over: int = 0           # an enqueue of a cut queue: its thread t writes the
    #   instances t, t + spreads_over, ... in turn (spreads_over: its segment's threads)
    full_port: bool = False         # a lossy enqueue sends packets to "full" instead of dropping
    thread_source: bool = False     # the element a thread's loop calls
    begins_packets: bool = False    # what it sends on is a new packet: a thread's source, a
    #   callable's arguments, or the dequeue of a callable taking packets from a queue
    emits_packets: bool = False     # a thread source whose each output is a new packet
    fresh_state: bool = False       # ... whose state is a local of the output port (the
    #   source body never touches the state, and no field is read before it is written)
    out_of_line: bool = False       # never inlined into its caller (bounds inlining depth)
    shared: bool = False            # called from another translation unit of its process
    alone: bool = False             # its body adds to its states (floem_add) and one
    #   thread writes every persistent state it uses: a plain add, not an atomic one
    state_unused: bool = False      # its function never names the packet's state (the
    #   body, or the C the compiler writes for a queue or cache element)
    counters: ElementCounters | None = None     # its packet counters (None: not counted)
    trace: ElementTrace | None = None           # what it records of traced packets
    ports: Mapping[str, str] = field(default_factory=dict)  # output port -> C function firing it
    entries: Mapping[str, str] = field(default_factory=dict)    # a join's input port -> its C entry
    inputs_record: str = ""         # a join's thread-local record of the inputs it has

    def describe(self) -> str:
        """One line for the IR dump ("" when there is nothing to say)."""
        parts = [f"body {self.body.count(chr(10))} lines"] if self.body else []
        parts += [f"never reads {', '.join(self.unused)}"] if self.unused else []
        parts += [f"uses {', '.join(self.pointers)}"] if self.pointers else []
        parts += [f"spreads over instances by thread (of {self.spreads_over})"] \
            if self.spreads_over else []
        parts += [what for what, on in (("steers by qid", self.steers_by_qid),
                                        ("full port", self.full_port),
                                        ("thread source", self.thread_source),
                                        ("begins packets", self.begins_packets),
                                        ("each output a new packet", self.emits_packets),
                                        ("its state a local of the port", self.fresh_state),
                                        ("out of line", self.out_of_line),
                                        ("called from another unit", self.shared),
                                        ("adds plainly (its states' only writer)",
                                         self.alone),
                                        ("never names its state", self.state_unused)) if on]
        renamed = [f"{p} is {f}" for p, f in {**self.ports, **self.entries}.items()
                   if not f.endswith(f"_{p}")]     # a name the program had taken
        renamed += [f"inputs are {self.inputs_record}"] \
            if self.inputs_record and not self.inputs_record.endswith("_in") else []
        parts += [f"C names: {', '.join(renamed)}"] if renamed else []
        if self.counters is not None:
            c = self.counters
            own = [f"{what} {i}" for what, i in (("runs", c.runs), ("ended", c.ended))
                   if i is not None]
            own += [f"{port} {'= in' if i is None else i}" for port, i in c.outs]
            own += ["ends none"] if c.never_ends else []
            parts.append(f"counters: {', '.join(own) or 'none of its own'}"
                         f"{', atomically' if c.shared else ''}")
        if self.trace is not None:
            parts.append(self.trace.describe())
        return "; ".join(parts)


def join_slot(record: str, port: str, index: int) -> str:
    """C lvalue holding value ``index`` of input ``port`` in a join's inputs ``record``."""
    return f"{record}.{port}_{index}"
