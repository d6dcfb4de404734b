"""The global C names the generated code makes of the program's names: one table that the
templates write them from and `floem.passes.plan_code` keeps elements from taking."""
from __future__ import annotations

#: For each kind of named thing (queue, cache, segment, persistent state), the suffixes of
#: the globals the generated C defines for one named NAME: ``NAME_<suffix>``.
GENERATED_GLOBALS: dict[str, tuple[str, ...]] = {
    "queue": ("inst", "sync", "payload", "bad_qid", "held"),
    "cache": ("cache", "evict", "drain"),
    "segment": ("thread", "result"),
    "state": ("state",),
}


def c_global(kind: str, name: str, suffix: str) -> str:
    """The generated C's global ``suffix`` of the ``kind`` named ``name`` (``q_inst``); one
    that `GENERATED_GLOBALS` does not list is an error of the code generator."""
    if suffix not in GENERATED_GLOBALS[kind]:
        raise ValueError(f"'{suffix}' is not in GENERATED_GLOBALS['{kind}']")
    return f"{name}_{suffix}"
