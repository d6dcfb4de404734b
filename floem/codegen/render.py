"""The jinja2 environment every generated file and C fragment is rendered from."""
from __future__ import annotations

import functools
from typing import Any

import jinja2

from floem.ir.cnames import GENERATED_GLOBALS, c_global
from floem.ir.plan import TRACE_FIELD

TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("floem.codegen", "templates"),
    trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)
#: The hidden per-packet field holding a traced packet's id across a queue.
TEMPLATES.globals["TRACE_FIELD"] = TRACE_FIELD

#: ``{{ q.name|queue_global("inst") }}``: the global C names of `GENERATED_GLOBALS`, one filter
#: per kind (``queue_global``, ``cache_global``, ...).
for _kind in GENERATED_GLOBALS:
    TEMPLATES.filters[f"{_kind}_global"] = functools.partial(c_global, _kind)


def render(template: str, **values: Any) -> str:
    """The text of template file ``template``."""
    return TEMPLATES.get_template(template).render(**values)


def fragment(template: str, macro: str, *args: Any) -> list[str]:
    """The non-blank lines a macro of ``template`` writes (a C statement list or definition)."""
    text = str(getattr(TEMPLATES.get_template(template).module, macro)(*args))
    return [line for line in text.split("\n") if line.strip()]
