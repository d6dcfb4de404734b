"""C for expanded caches: the lookup, fill, update and set-end bodies and the eviction runner.

Scalar keys and values are copied through locals (the per-packet state is
packed, so its members' addresses are not taken); pointer keys and values
are used with their length fields.
"""
from __future__ import annotations

from dataclasses import dataclass

from floem.ir import CacheIR, ElementNode
from floem.lang.state import State


@dataclass
class CacheView:
    """A cache with the C spelling of its key and value in a given per-packet state."""

    cache: CacheIR
    state: type[State]

    @property
    def handle(self) -> str:
        """The global `floem_cache_t *` of the cache."""
        return f"{self.cache.name}_cache"

    def _field_type(self, name: str) -> str:
        return next(f.type.c for f in self.state.fields() if f.name == name)

    def locals(self, s: str = "state->", values: bool = True) -> list[str]:
        """Locals holding scalar keys/values (their bytes are what the cache stores)."""
        c = self.cache
        lines = []
        if c.keylen is None:
            lines.append(f"{self._field_type(c.key)} key = {s}{c.key};")
        if values and c.vallen is None:
            lines.append(f"{self._field_type(c.val)} val = {s}{c.val};")
        return lines

    def key_args(self, s: str = "state->") -> str:
        """C arguments: key bytes and their length."""
        c = self.cache
        if c.keylen is None:
            return "&key, sizeof key"
        return f"{s}{c.key}, (uint32_t){s}{c.keylen}"

    def val_args(self, s: str = "state->") -> str:
        """C arguments: value bytes and their length."""
        c = self.cache
        if c.vallen is None:
            return "&val, sizeof val"
        return f"{s}{c.val}, (uint32_t){s}{c.vallen}"

    def take_value(self, ref: str, length: str, s: str = "state->") -> list[str]:
        """Store the cached value found at ``ref`` (``length`` bytes) into the state."""
        c = self.cache
        if c.vallen is None:
            return [f"{self._field_type(c.val)} val;", f"memcpy(&val, {ref}, sizeof val);",
                    f"(void){length};", f"{s}{c.val} = val;"]
        return [f"{s}{c.val} = (void *){ref};", f"{s}{c.vallen} = {length};"]

    def steer(self, s: str = "state->") -> list[str]:
        """Send misses and evictions of a key to one queue instance."""
        n = self.cache.steer_instances
        if not n:
            return []
        return [f"{s}qid = (int)(floem_cache_hash({self.key_args(s)}) % {n});"]


def drain_call(v: CacheView) -> list[str]:
    """Send the write-backs fills left to this segment first (see `drain_function`)."""
    return [f"{v.cache.name}_drain();"] if v.cache.defer_fill_evictions else []


def lookup_body(v: CacheView, n: ElementNode) -> list[str]:
    """get_start: a hit skips the get region with the cached value; a miss enters it."""
    scalar = v.cache.vallen is None
    lines = drain_call(v) + v.locals(values=False) + ["uint32_t version, vallen;"]
    lines += [f"char found[sizeof state->{v.cache.val}];"] if scalar else ["const void *ref;"]
    lines += [f"bool hit = floem_cache_get({v.handle}, {v.key_args()}, "
              + ("found, sizeof found, NULL" if scalar else "NULL, 0, &ref")
              + ", &vallen, &version);",
              f"state->{v.cache.version_field} = version;"]
    lines += v.steer()
    lines.append("if (hit) {")
    lines += ["    " + x for x in v.take_value("found" if scalar else "ref", "vallen")]
    lines += [f"    {n.name}_hit(state);", "} else {", f"    {n.name}_miss(state);", "}"]
    return lines


def fill_body(v: CacheView, n: ElementNode) -> list[str]:
    """get_end: cache what the get region fetched, unless a set raced it (then return the set's)."""
    lines = v.locals() + ["const void *cur;", "uint32_t curlen;",
                          "floem_cache_evicted_t evicted = { 0 };",
                          f"if (floem_cache_fill({v.handle}, {v.key_args()}, {v.val_args()}, "
                          f"state->{v.cache.version_field}, &cur, &curlen, &evicted)) {{"]
    lines += ["    " + x for x in v.take_value("cur", "curlen")]
    evict = (f"floem_cache_defer({v.handle}, &evicted);" if v.cache.defer_fill_evictions
             else f"{v.cache.name}_evict(&evicted);")
    lines += ["}", evict, f"{n.name}_out(state);"]
    return lines


def update_body(v: CacheView, n: ElementNode) -> list[str]:
    """set_start: update the cache by policy, then the set region or straight past it."""
    c = v.cache
    write_back = c.policy == "write_back"
    only_if_present = c.write_miss == "no_write_alloc"
    lines = drain_call(v) + v.locals()
    lines += ["floem_cache_evicted_t evicted = { 0 };",
              f"bool present = floem_cache_set({v.handle}, {v.key_args()}, {v.val_args()}, "
              f"{str(write_back).lower()}, {str(only_if_present).lower()}, &evicted);",
              f"state->{c.evict_field} = 0;"]
    lines += v.steer() + [f"{c.name}_evict(&evicted);"]
    if not write_back:
        return lines + ["(void)present;", f"{n.name}_region(state);"]
    if not only_if_present:
        return lines + ["(void)present;", f"{n.name}_done(state);"]
    return lines + ["if (present)", f"    {n.name}_done(state);", "else",
                    f"    {n.name}_region(state);"]


def set_end_body(v: CacheView, n: ElementNode) -> list[str]:
    """set_end: an eviction stops here; a set query goes on."""
    return [f"if (!state->{v.cache.evict_field})", f"    {n.name}_out(state);"]


def evict_function(v: CacheView) -> str:
    """``<cache>_evict``: run the set region for a dirty entry pushed out of the cache."""
    c = v.cache
    state = v.state.c_type_name()
    lines = [f"static void {c.name}_evict(floem_cache_evicted_t *evicted)", "{",
             "    if (!evicted->present)", "        return;"]
    if "set_start" in c.points:
        lines += [f"    {state} fresh;", "    memset(&fresh, 0, sizeof fresh);"]
        for field, length, source in ((c.key, c.keylen, "key"), (c.val, c.vallen, "val")):
            if length is None:
                lines += [f"    {v._field_type(field)} {source};",
                          f"    memcpy(&{source}, evicted->{source}, sizeof {source});",
                          f"    fresh.{field} = {source};"]
            else:
                lines += [f"    fresh.{field} = evicted->{source};",
                          f"    fresh.{length} = evicted->{source}len;"]
        lines.append(f"    fresh.{c.evict_field} = 1;")
        lines += ["    " + x for x in v.steer("fresh.")]
        lines.append(f"    {c.points['set_start']}_region(&fresh);")
    lines += ["    floem_cache_evicted_free(evicted);", "}"]
    return "\n".join(lines)


def drain_function(v: CacheView) -> str:
    """``<cache>_drain``: run the write-backs fills on another segment deferred, oldest first.

    Only set_start's segment calls it (before its lookups and updates), holding the
    cache's drain lock until each is sent, so a later miss of the key follows its write-back.
    """
    c = v.cache
    return "\n".join([
        f"static void {c.name}_drain(void)", "{",
        f"    if (!floem_cache_has_deferred({v.handle}))", "        return;",
        "    floem_cache_evicted_t evicted;", "    uint64_t taken = 0;",
        f"    floem_cache_drain_begin({v.handle});",
        f"    while (floem_cache_take_deferred({v.handle}, &evicted)) {{",
        f"        {c.name}_evict(&evicted);", "        taken++;", "    }",
        f"    floem_cache_drain_end({v.handle}, taken);", "}"])
