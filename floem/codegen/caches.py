"""Expanded caches for code generation: the view templates/caches.c.j2 writes the lookup,
fill, update and set-end bodies and the eviction and drain functions from."""
from __future__ import annotations

from dataclasses import dataclass

from floem.codegen.render import fragment
from floem.ir import CacheIR, ElementNode, ElementPlan, StateLayout
from floem.ir.cnames import c_global

_MACROS = "caches.c.j2"


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


def lookup_body(v: CacheView, n: ElementNode, plan: ElementPlan) -> list[str]:
    """get_start: a hit skips the get region with the cached value; a miss enters it."""
    return fragment(_MACROS, "lookup", v, n, plan)


def fill_body(v: CacheView, n: ElementNode, plan: ElementPlan) -> list[str]:
    """get_end: cache what the get region fetched, unless a set raced it (then return the set's)."""
    return fragment(_MACROS, "fill", v, n, plan)


def update_body(v: CacheView, n: ElementNode, plan: ElementPlan) -> list[str]:
    """set_start: update the cache by policy, then the set region or straight past it."""
    return fragment(_MACROS, "update", v, n, plan)


def set_end_body(v: CacheView, n: ElementNode, plan: ElementPlan) -> list[str]:
    """set_end: an eviction stops here; a set query goes on."""
    return fragment(_MACROS, "set_end", v, n, plan)


def evict_function(v: CacheView) -> str:
    """``<cache>_evict``: run the set region for a dirty entry pushed out of the cache."""
    return "\n".join(fragment(_MACROS, "evict_function", v))


def drain_function(v: CacheView) -> str:
    """``<cache>_drain``: run the write-backs fills on another segment deferred, oldest first."""
    return "\n".join(fragment(_MACROS, "drain_function", v))
