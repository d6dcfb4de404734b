"""Every C text the compiler writes, as jinja2 templates, and the environment they are
rendered in: the generated programs' files (code generation) and the declarations of the
program's states that the C front end parses element bodies against (``parse_bodies``,
``trace_packets``), one text for both."""
from __future__ import annotations

import functools
from typing import Any

import jinja2

from floem.ir.cnames import GENERATED_GLOBALS, c_global
from floem.ir.plan import TRACE_FIELD

TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("floem", "templates"),
    trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)
#: The hidden per-packet field holding a traced packet's id across a queue.
TEMPLATES.globals["TRACE_FIELD"] = TRACE_FIELD

#: ``{{ q.name|queue_global("inst") }}``: the global C names of `GENERATED_GLOBALS`, one filter
#: per kind (``queue_global``, ``cache_global``, ...).
for _kind in GENERATED_GLOBALS:
    TEMPLATES.filters[f"{_kind}_global"] = functools.partial(c_global, _kind)


def c_lines(text: str, indent: int = 0) -> str:
    """``{{ macro(...)|c_lines(4) }}``: the non-blank lines a macro wrote (C statements or a
    definition), each indented by ``indent`` spaces."""
    return "\n".join(" " * indent + line for line in str(text).split("\n") if line.strip())


TEMPLATES.filters["c_lines"] = c_lines


def keep_compiled(directory: str) -> None:
    """Keep the templates compiled to Python in ``directory`` (the build cache's), so that a
    process compiles each once, not every time it starts."""
    if TEMPLATES.bytecode_cache is None:
        TEMPLATES.bytecode_cache = jinja2.FileSystemBytecodeCache(directory)


def render(template: str, **values: Any) -> str:
    """The text of template file ``template``."""
    return TEMPLATES.get_template(template).render(**values)


def render_macro(template: str, macro: str, *args: Any) -> str:
    """The text macro ``macro`` of ``template`` writes with ``args`` (for a pass making C
    of its own: a cut's stash and unstash bodies)."""
    return str(getattr(TEMPLATES.get_template(template).module, macro)(*args))
