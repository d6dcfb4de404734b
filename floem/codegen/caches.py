"""Expanded caches for code generation: the views templates/caches.c.j2 writes the lookup,
fill, update and set-end statements and the eviction and drain functions from."""
from __future__ import annotations

from dataclasses import dataclass

from floem.ir import CacheIR, ElementNode, ElementPlan, StateLayout
from floem.ir.cnames import c_global


@dataclass
class CacheView:
    """A cache with the per-packet state that holds its key and value."""

    cache: CacheIR
    state: StateLayout
    set_region: str = ""    # the function entering the set region (when the cache has one)

    @property
    def handle(self) -> str:
        """The global `floem_cache_t *` of the cache."""
        return c_global("cache", self.cache.name, "cache")

    def field_type(self, name: str) -> str:
        """C type of field ``name`` of the state."""
        return next(f.type.c for f in self.state.fields if f.name == name)


@dataclass(frozen=True)
class CacheStep:
    """A cache element as templates/caches.c.j2 writes its statements (by its role: a lookup,
    fill, update or set end)."""

    view: CacheView
    node: ElementNode
    plan: ElementPlan
