"""The cache construct: memoise a get region (and absorb a set region) of the graph."""
from __future__ import annotations

from floem.errors import Location
from floem.lang.element import Element, Input, Output
from floem.lang.location import caller_location
from floem.lang.registry import current_registry


class CacheEnd(Element):
    """One of a cache's four points (``get_start``, ``get_end``, ``set_start``, ``set_end``).

    The cache expansion pass replaces these with the lookup, fill, update and
    eviction logic of the cache's policy.
    """

    def configure(self, cache: Cache, point: str) -> None:
        self.inp = Input()
        self.out = Output()
        self.cache = cache
        self.point = point


class Cache:
    """A cache of the per-packet fields ``key`` (``keylen`` bytes) -> ``val`` (``vallen`` bytes).

    Wire a get query as ``... >> c.get_start >> <get region> >> c.get_end >> ...`` and a
    set query as ``... >> c.set_start >> <set region> >> c.set_end >> ...``. Scalar keys
    and values omit the length names. ``entries=None`` gives each of the ``buckets`` an
    unbounded chain. ``policy`` is `WRITE_THROUGH` or `WRITE_BACK`; ``write_miss`` is
    `WRITE_ALLOC` or `NO_WRITE_ALLOC`.
    """

    WRITE_THROUGH = "write_through"
    WRITE_BACK = "write_back"
    WRITE_ALLOC = "write_alloc"
    NO_WRITE_ALLOC = "no_write_alloc"
    POINTS = ("get_start", "get_end", "set_start", "set_end")

    def __init__(self, name: str | None = None, key: str = "key", keylen: str | None = None,
                 val: str = "val", vallen: str | None = None, buckets: int = 1024,
                 entries: int | None = 4, policy: str = WRITE_THROUGH,
                 write_miss: str = WRITE_ALLOC) -> None:
        self.loc: Location = caller_location()
        self.program = current_registry()
        self.name = self.program.claim_name(name, "cache", self.loc)
        if policy not in (self.WRITE_THROUGH, self.WRITE_BACK):
            raise self.loc.error(f"Cache policy must be Cache.WRITE_THROUGH or Cache.WRITE_BACK, "
                                 f"not {policy!r}")
        if write_miss not in (self.WRITE_ALLOC, self.NO_WRITE_ALLOC):
            raise self.loc.error(f"Cache write_miss must be Cache.WRITE_ALLOC or "
                                 f"Cache.NO_WRITE_ALLOC, not {write_miss!r}")
        for what, value in (("buckets", buckets), ("entries", entries)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 1):
                raise self.loc.error(f"Cache {what}= must be a positive integer, not {value!r}")
        self.key, self.keylen, self.val, self.vallen = key, keylen, val, vallen
        self.buckets = buckets
        self.entries = entries
        self.policy = policy
        self.write_miss = write_miss
        for generated in (f"{self.name}_evict", f"{self.name}_cache"):
            self.program.claim_name(generated, generated, self.loc)
        self.ends = {}
        for point in self.POINTS:
            end = CacheEnd(name=f"{self.name}_{point}", configure=[self, point])
            end.segment = None          # each point joins the segment it is connected in
            self.ends[point] = end
        self.program.register(self)

    @property
    def get_start(self) -> CacheEnd:
        """Where a get query enters the cache."""
        return self.ends["get_start"]

    @property
    def get_end(self) -> CacheEnd:
        """Where the get region's result comes back (and is cached)."""
        return self.ends["get_end"]

    @property
    def set_start(self) -> CacheEnd:
        """Where a set query enters the cache."""
        return self.ends["set_start"]

    @property
    def set_end(self) -> CacheEnd:
        """Where the set region ends."""
        return self.ends["set_end"]
