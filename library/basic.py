"""Basic elements: drop, print, constants, counting, injecting and probing values.

Elements that pass values through take ``ty``: one type (``Int``), a list of
types (``[SizeT, Pointer(Void)]``: a port carrying several values) or, where
it makes sense, ``None`` (a port carrying no value, accepting any output).

Elements keeping persistent state (`Counter`, `Probe`, and the counters of
other library elements) work on both devices, with one rule on the NIC: a
state that only NIC elements use lives in NIC memory, but one that ``main``
also reads lives in host memory, which NIC code reaches only by DMA (the
NIC process faults on it). Read such results on the CPU side of a queue.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from floem import Array, Element, Field, Input, Int, Output, Persistent, State, Uint
from floem.ir.scalars import SCALARS
from floem.lang.types import Type, TypeLike

from ._support import c_file, read_values, type_list

#: C strings, printed as text (any other pointer prints as an address).
_STRINGS = ("char *", "const char *")


def printf_format(t: Type) -> str:
    """The printf conversion for a value of type ``t``; ValueError when there is none."""
    scalar = SCALARS.get(t.c)
    if scalar is not None:
        return scalar.conversion
    if t.c in _STRINGS:
        return "%s"
    if t.c.endswith("*"):
        return "%p"
    raise ValueError(f"no printf format for {t.c}; give fmt=")


def _print_call(types: Sequence[Type], names: Sequence[str], label: str, fmt: str | None) -> str:
    """One ``printf`` of the values ``names`` (of ``types``) after ``label``, ending the line."""
    if fmt is None:
        fmt = " ".join(printf_format(t) for t in types)
    args = [f"(void *){n}" if t.c.endswith("*") and t.c not in _STRINGS else n
            for t, n in zip(types, names)]
    prefix = label.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%") + " " \
        if label else ""
    text = '"' + prefix + fmt + '\\n"'
    return "printf(" + ", ".join([text] + args) + ");"


class _Printing(Element):
    """Shared configuration of `Print` and `Display`."""

    def _setup(self, ty: Any, label: str, fmt: str | None) -> None:
        self.types = type_list(ty)
        if not self.types:
            raise self.loc.error(f"{type(self).__name__}: give the type(s) of the values to print")
        try:
            self.read, self.names = read_values("inp", self.types)
            self.print = _print_call(self.types, self.names, label, fmt)
        except ValueError as e:
            raise self.loc.error(f"{type(self).__name__}: {e}") from None


class Print(_Printing):
    """Print each value that passes on a line of stdout (after ``label``), and pass it on.

    The format follows the type (``%d``, ``%" PRIu64 "``, ``%zu``, ``%g``,
    ``%s`` for ``char *``, ``%p`` for other pointers); ``fmt`` replaces it
    (a printf format for all the values). One ``printf`` per packet, so lines
    of several threads do not mix.

    Ports: ``inp`` (``ty``); ``out`` (``ty``).
    """

    def configure(self, ty: TypeLike | list[TypeLike] = Int, label: str = "",
                  fmt: str | None = None) -> None:
        self._setup(ty, label, fmt)
        self.inp = Input(*self.types)
        self.out = Output(*self.types)

    def impl(self) -> None:
        self.run_c(f'''
            {self.read}
            {self.print}
            output {{ out({", ".join(self.names)}); }}
        ''')


class Display(_Printing):
    """Like `Print`, but a leaf: print each value and stop.

    Ports: ``inp`` (``ty``).
    """

    def configure(self, ty: TypeLike | list[TypeLike] = Int, label: str = "",
                  fmt: str | None = None) -> None:
        self._setup(ty, label, fmt)
        self.inp = Input(*self.types)

    def impl(self) -> None:
        self.run_c(f'''
            {self.read}
            {self.print}
        ''')


class Drop(Element):
    """Consume whatever arrives and do nothing (Click's Discard); frees nothing.

    Ports: ``inp`` (any values).
    """

    def configure(self) -> None:
        self.inp = Input()

    def impl(self) -> None:
        self.run_c("inp();")


class Identity(Element):
    """Pass values on unchanged.

    Ports: ``inp`` (``ty``); ``out`` (``ty``).
    """

    def configure(self, ty: TypeLike | list[TypeLike] | None = Int) -> None:
        self.types = type_list(ty)
        self.inp = Input(*self.types)
        self.out = Output(*self.types)

    def impl(self) -> None:
        read, names = read_values("inp", self.types)
        self.run_c(f"{read} output {{ out({', '.join(names)}); }}")


class Constant(Element):
    """Whatever arrives, output a configured C value (an expression of type ``ty``).

    ``Constant(value="42")``, ``Constant(value="1.5", ty=Double)``,
    ``Constant(value='"hello"', ty="char *")``. The expression is evaluated for each
    packet, so it may read the per-packet state (``"state->len"``).

    Ports: ``inp`` (any values); ``out`` (``ty``).
    """

    def configure(self, value: str | int | float, ty: TypeLike = Int) -> None:
        self.value = str(value)
        self.inp = Input()
        self.out = Output(ty)

    def impl(self) -> None:
        self.run_c(f"inp(); output {{ out({self.value}); }}")


class Counts(State):
    """What a `Counter` saw: packets, and bytes when it was told where the size is."""

    packets = Field(Uint(64))
    bytes = Field(Uint(64))
    packed = False


class Counter(Element):
    """Count the packets that pass (and their bytes), then pass them on.

    The counts are in a `Counts` persistent state; give one to read it from
    ``main``: ``hits = Counts("hits")``, ``Counter(states=[hits])``, then
    ``hits->packets`` in ``main``. Several threads may count at once
    (``floem_add``: atomic increments, plain ones where one thread is the state's
    only writer). ``size=k`` adds the ``k``-th value of each packet
    (an integer, e.g. a frame's size) to ``bytes``.

    Ports: ``inp`` (``ty``, default: none, accepting anything); ``out`` (``ty``).
    """

    counts = Persistent(Counts)

    def configure(self, ty: TypeLike | list[TypeLike] | None = None,
                  size: int | None = None) -> None:
        self.types = type_list(ty)
        if size is not None and not 0 <= size < len(self.types):
            raise self.loc.error(f"Counter: size={size} names no value of {self.types}")
        self.size = size
        self.inp = Input(*self.types)
        self.out = Output(*self.types)

    def impl(self) -> None:
        read, names = read_values("inp", self.types)
        add_bytes = "" if self.size is None else \
            f"floem_add(&counts->bytes, (uint64_t){names[self.size]});"
        self.run_c(f'''
            {read}
            floem_add(&counts->packets, 1);
            {add_bytes}
            output {{ out({", ".join(names)}); }}
        ''')


class Inject(Element):
    """A source: emit ``gen`` for i = 0, 1, ..., count - 1, then idle.

    ``gen`` is a C expression of ``long i`` giving a value of type ``ty``
    (``Inject(gen="i * i", count=100)``). Several threads of the segment share
    the sequence: each i is emitted exactly once. Once done, each call sleeps
    ``idle_us`` microseconds instead of spinning.

    Ports: ``out`` (``ty``).
    """

    def configure(self, gen: str = "i", count: int = 1, ty: TypeLike = Int,
                  idle_us: int = 1000) -> None:
        if count < 0:
            raise self.loc.error(f"Inject: count must be >= 0, not {count}")
        self.gen, self.count, self.idle_us = gen, count, idle_us
        self.out = Output(ty)

    def impl(self) -> None:
        self.run_c(f'''
            static long next;
            if (__atomic_load_n(&next, __ATOMIC_RELAXED) >= {self.count}L) {{
                usleep({self.idle_us});
                return;
            }}
            const long i = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
            if (i >= {self.count}L)
                return;
            output {{ out({self.gen}); }}
        ''')


_probe_logs: dict[tuple[str, int], type[State]] = {}


def probe_log_class(ty: TypeLike, n: int) -> type[State]:
    """The state class recording the last ``n`` values of type ``ty`` (one per type and size)."""
    t = type_list(ty)[0]
    key = (t.c, n)
    if key not in _probe_logs:
        name = "ProbeLog_" + re.sub(r"\W", "_", t.c.replace("*", "p")) + f"_{n}"
        _probe_logs[key] = type(name, (State,), {
            "__doc__": f"The last {n} {t.c} values a Probe saw; count is how many it saw.",
            "count": Field(Uint(64)), "values": Field(Array(t, n)), "packed": False})
    return _probe_logs[key]


class Probe(Element):
    """Record the last ``n`` values that pass, then pass them on.

    The record is a persistent state named ``log`` (or an automatic name)
    with ``count`` (values seen so far) and ``values`` (a ring of ``n``);
    ``main`` reads it, e.g. ``floem_probe_last(seen, 0)`` for the latest
    value of ``Probe(log="seen")`` (``library/c/basic.h``). Several threads
    may record at once; read when they are quiet.

    Ports: ``inp`` (``ty``); ``out`` (``ty``).
    """

    c_headers = (c_file("basic.h"),)

    def configure(self, ty: TypeLike = Int, n: int = 16, log: str | None = None) -> None:
        if n < 1:
            raise self.loc.error(f"Probe: n must be >= 1, not {n}")
        self.n = n
        self.inp = Input(ty)
        self.out = Output(ty)
        self.log = probe_log_class(ty, n)(log, _loc=self.loc)

    def impl(self) -> None:
        self.run_c(f'''
            {read_values("inp", self.inp.types)[0]}
            uint64_t slot = __atomic_fetch_add(&log->count, 1, __ATOMIC_RELAXED);
            log->values[slot % {self.n}] = v0;
            output {{ out(v0); }}
        ''')
