"""Count-min sketch: approximate per-key totals (e.g. bytes per flow) in fixed memory.

A sketch of ``depth`` rows of ``width`` counters answers "how much for key
k?" with an estimate that is never below the true total and exceeds it by
more than ``e / width`` times the total of all amounts with probability at
most ``exp(-depth)``. Conservative update (raise only the counters that are
below the new estimate) keeps the same guarantee with smaller errors.
``library/c/sketch.h`` (``floem_cms_update``, ``floem_cms_estimate``) is
visible to bodies and ``floem.main`` code.
"""
from __future__ import annotations

from floem import Array, Element, Field, Input, Output, Pointer, SizeT, State, Uint, Void

from ._support import c_file, read_values
from .hash import HEADERS as _HASH_HEADERS, SOURCES as _HASH_SOURCES

HEADERS = _HASH_HEADERS + (c_file("sketch.h"),)
SOURCES = _HASH_SOURCES + (c_file("sketch.c"),)

_sketch_classes: dict[tuple[int, int], type[State]] = {}


def sketch_class(width: int, depth: int) -> type[State]:
    """The state class of a ``width`` x ``depth`` sketch (one class per shape).

    Fields: ``width``, ``depth``, ``total`` (sum of all amounts counted),
    ``lock`` (for conservative updates) and ``counts`` (row-major).
    """
    key = (width, depth)
    if key not in _sketch_classes:
        def init(self: State, w: int = width, d: int = depth) -> None:
            self.width = w
            self.depth = d

        _sketch_classes[key] = type(f"CountMinSketch_{width}x{depth}", (State,), {
            "__doc__": f"A {width} x {depth} count-min sketch.",
            "width": Field(Uint(32)), "depth": Field(Uint(32)), "total": Field(Uint(64)),
            "lock": Field("int"), "counts": Field(Array(Uint(64), width * depth)),
            "packed": False, "init": init})
    return _sketch_classes[key]


class CountMin(Element):
    """Add an amount (e.g. a packet's bytes) to a key's count in a count-min sketch.

    The sketch is a persistent state (see `sketch_class`) named ``sketch``
    (or automatically); ``main`` reads estimates with
    ``floem_cms_estimate(s->counts, s->width, s->depth, key, len)``. Threads
    may update it at once. ``conservative=True`` selects conservative update.

    By default ``inp`` carries the key and the amount, ``(void *key,
    size_t len, uint64_t amount)``, and ``out`` the key's estimate after the
    update (``uint64_t``). ``key=``, ``length=`` and ``amount=`` (C
    expressions, e.g. ``"state->flow"``) read them there instead, and ``inp``
    then carries nothing; ``into=`` (a C lvalue) stores the estimate there
    and ``out`` passes on what ``inp`` carried.

    Ports: ``inp``; ``out`` (see above).
    """

    c_headers = HEADERS
    c_sources = SOURCES

    def configure(self, width: int = 1024, depth: int = 4, conservative: bool = False,
                  key: str | None = None, length: str | None = None, amount: str | None = None,
                  into: str | None = None, sketch: str | None = None) -> None:
        if not (isinstance(width, int) and isinstance(depth, int) and width >= 1 and depth >= 1):
            raise self.loc.error(f"CountMin: width and depth must be positive integers, "
                                 f"not {width!r} and {depth!r}")
        given = [x is not None for x in (key, length, amount)]
        if any(given) and not all(given):
            raise self.loc.error("CountMin: give all of key=, length= and amount=, or none")
        self.width, self.depth, self.conservative = width, depth, int(bool(conservative))
        self.exprs = (key, length, amount) if all(given) else None
        self.into = into
        in_types = [] if self.exprs else [Pointer(Void), SizeT, Uint(64)]
        self.inp = Input(*in_types)
        self.out = Output(*(in_types if into is not None else [Uint(64)]))
        self.sketch = sketch_class(width, depth)(sketch, _loc=self.loc)

    def impl(self) -> None:
        read, names = read_values("inp", self.inp.types, "k")
        key, length, amount = self.exprs or names
        store = "" if self.into is None else f"{self.into} = estimate;"
        fire = "estimate" if self.into is None else ", ".join(names)
        self.run_c(f'''
            {read}
            uint64_t amount = {amount};
            uint64_t estimate = floem_cms_update(sketch->counts, {self.width}u, {self.depth}u,
                                                 &sketch->lock, {key}, {length}, amount,
                                                 {self.conservative});
            __atomic_fetch_add(&sketch->total, amount, __ATOMIC_RELAXED);
            {store}
            output {{ out({fire}); }}
        ''')
