"""A network sequencer: stamp each packet of a group with its group's next sequence number.

As in NOPaxos/Eris-style network sequencing, every group (a multicast group,
a shard) has its own counter; each packet is stamped with the next number of
its group, 1, 2, 3, ... The counters are a persistent state, updated with
one atomic increment per packet, so any number of threads (``cores=[...]``)
stamp without gaps or duplicates within a group; ``main`` reads
``s->last[g]``, the last number given in group ``g``.
"""
from __future__ import annotations

from floem import Array, Element, Field, Input, Output, State, Uint

from ._support import read_values

_group_classes: dict[int, type[State]] = {}


def sequencer_class(groups: int) -> type[State]:
    """The state class of a sequencer of ``groups`` groups: ``last[g]``, 0 before any packet."""
    if groups not in _group_classes:
        _group_classes[groups] = type(f"SequencerGroups_{groups}", (State,), {
            "__doc__": f"The last sequence number given in each of {groups} groups.",
            "last": Field(Array(Uint(64), groups)), "packed": False})
    return _group_classes[groups]


class Sequencer(Element):
    """Stamp each packet with the next sequence number of its group, atomically.

    The group (``uint32_t``, in ``[0, groups)``) arrives on ``inp``, or is
    read from ``group`` (a C expression, e.g. ``"state->group"``; ``inp`` then
    carries nothing). ``out`` carries what ``inp`` carried followed by the
    sequence number (``uint64_t``), or, with ``into`` (a C lvalue, e.g.
    ``"state->seq"``), just what ``inp`` carried, the number being stored
    there. A packet whose group is out of range takes ``drop`` (carrying what
    ``inp`` carried) and consumes no number. ``counters`` names the
    persistent state (see `sequencer_class`) for ``main``.

    Ports: ``inp`` (``uint32_t`` group, or nothing with ``group=``);
    ``out``; ``drop``.
    """

    def configure(self, groups: int = 1, group: str | None = None, into: str | None = None,
                  counters: str | None = None) -> None:
        if not isinstance(groups, int) or groups < 1:
            raise self.loc.error(f"Sequencer: groups must be a positive integer, not {groups!r}")
        self.groups, self.group, self.into = groups, group, into
        in_types = [] if group is not None else [Uint(32)]
        self.inp = Input(*in_types)
        self.out = Output(*(in_types if into is not None else in_types + [Uint(64)]))
        self.drop = Output(*in_types)
        self.counters = sequencer_class(groups)(counters, _loc=self.loc)

    def impl(self) -> None:
        read, names = read_values("inp", self.inp.types, "g")
        group = self.group if self.group is not None else names[0]
        store = "" if self.into is None else f"{self.into} = seq;"
        fire = names if self.into is not None else names + ["seq"]
        self.run_c(f'''
            {read}
            uint32_t group = {group};
            int ok = group < {self.groups}u;
            uint64_t seq = 0;
            if (ok) {{
                seq = __atomic_add_fetch(&counters->last[group], 1, __ATOMIC_RELAXED);
                {store}
            }}
            output switch {{
                case ok: out({", ".join(fire)});
                else: drop({", ".join(names)});
            }}
        ''')
