"""Batching (Floem paper, section 8): send N small items through a queue as one entry.

A `Batcher` collects ``n`` items in a buffer and emits them together; put it
right before a queue whose per-packet state has a variable-size field for
the items. A `Debatcher` after the queue hands them on one at a time::

    class Batch(State):
        count = Field(Int)
        items = Field(Pointer(Uint(64)), size="state->count * sizeof(uint64_t)")

    ... >> Batcher(n=8, items="state->items", count="state->count") >> q
    q >> Debatcher(items="state->items", count="state->count") >> ...

One queue entry then carries eight items: fewer entries, fewer DMA
transfers across PCIe, and more bytes per transfer. The entry must have room
for ``n`` items (variable-size fields get 256 bytes unless the queue's
``entry_size`` says more).
"""
from __future__ import annotations

from floem import Element, Input, Int, Output, Pointer, Uint
from floem.lang.types import TypeLike, as_type


class Batcher(Element):
    """Collect ``n`` items of type ``ty``; emit them as one batch when the ``n``-th arrives.

    Each thread fills its own buffer; a batch is valid until that thread's
    next item arrives (a queue enqueue copies it at once). Items of a batch
    not yet full wait for more.

    By default ``out`` carries ``(ty *items, int count)``; with ``items`` and
    ``count`` (C lvalues, e.g. per-packet fields) the batch is stored there
    and ``out`` carries nothing.

    Ports: ``inp`` (``ty``); ``out`` (see above).
    """

    def configure(self, n: int, ty: TypeLike = Uint(64), items: str | None = None,
                  count: str | None = None) -> None:
        if not isinstance(n, int) or n < 1:
            raise self.loc.error(f"Batcher: n must be a positive integer, not {n!r}")
        if (items is None) != (count is None):
            raise self.loc.error("Batcher: give both items= and count=, or neither")
        self.n, self.ty = n, as_type(ty)
        self.items, self.count = items, count
        self.inp = Input(self.ty)
        self.out = Output() if items is not None else Output(Pointer(self.ty), Int)

    def impl(self) -> None:
        if self.items is not None:
            store, fire = f"{self.items} = (void *)batch; {self.count} = {self.n};", ""
        else:
            store, fire = "", f"batch, {self.n}"
        self.run_c(f'''
            static _Thread_local {self.ty.declare(f"batch[{self.n}]")};
            static _Thread_local int filled;
            batch[filled++] = inp();
            int full = filled == {self.n};
            if (full) {{
                filled = 0;
                {store}
            }}
            output switch {{ case full: out({fire}); }}
        ''')


class Debatcher(Element):
    """Split a batch back into items: ``out`` fires once per item, in order.

    The batch arrives on ``inp`` as ``(ty *items, int count)``, or is read
    from ``items`` and ``count`` (C expressions, e.g. per-packet fields;
    ``inp`` then carries nothing).

    Ports: ``inp`` (see above); ``out`` (``ty``).
    """

    def configure(self, ty: TypeLike = Uint(64), items: str | None = None,
                  count: str | None = None) -> None:
        if (items is None) != (count is None):
            raise self.loc.error("Debatcher: give both items= and count=, or neither")
        self.ty = as_type(ty)
        self.items, self.count = items, count
        self.inp = Input() if items is not None else Input(Pointer(self.ty), Int)
        self.out = Output(self.ty)

    def impl(self) -> None:
        if self.items is not None:
            read = f"inp(); const {self.ty.c} *items = {self.items}; int count = {self.count};"
        else:
            read = f"({Pointer(self.ty).c} items, int count) = inp();"
        self.run_c(f'''
            {read}
            output multiple;
            for (int k = 0; k < count; k++)
                out(items[k]);
        ''')
