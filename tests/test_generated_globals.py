"""Every global the generated C names after a queue, cache, segment or persistent state is
one that no element may be named (`floem.ir.cnames.GENERATED_GLOBALS`, which
`plan_code` reserves): across programs with every kind of queue, state and cache, a global
the templates define that the table lacks, or a table entry no program's C defines, fails."""
from __future__ import annotations

import glob
import os
import re

import pytest

from conftest import PROGRAMS, ROOT
from floem.api import load_app
from floem.builder import check_program
from floem.codegen.emit import generate
from floem.ir import BuildOptions, ProgramIR
from floem.ir.cnames import GENERATED_GLOBALS, c_global
from floem.passes.plan_code import _checked_globals

#: Queues of every kind (lossy, steered, full port, variable fields, across processes and
#: to and from the NIC), persistent, per-packet and NIC states, caches with write-back
#: and deferred evictions, thread and callable segments.
APPS = sorted(glob.glob(os.path.join(PROGRAMS, "*.py"))
              + glob.glob(os.path.join(ROOT, "tests", "cache", "*_app.py")))
#: A build with the trace option defines its tables too.
OPTIONS = [{}, {"trace": True}]


def defined_globals(c: str) -> set[str]:
    """The names the file-scope declarations of generated C text define: its lines starting
    in column 0 with a declaration (variables, functions, typedefs), not struct tags."""
    names = set()
    for line in c.split("\n"):
        if not re.match(r"[A-Za-z_]", line) or re.match(r'extern "C"|(struct|union) \w+ \{', line):
            continue
        line = re.sub(r"__attribute__\(\(.*?\)\)", "", line)
        line = re.sub(r'"(?:\\.|[^"\\])*"', "", line)
        line = re.sub(r"\{[^{}]*\}", "", line)
        declared = re.search(r"(\w+)\s*;" if line.startswith("typedef") else r"(\w+)\s*[(\[=;]",
                             line)
        if declared:
            names.add(declared.group(1))
    return names


def owners(ir: ProgramIR) -> dict[str, list[str]]:
    """The program's names of each kind of `GENERATED_GLOBALS`."""
    return {"queue": list(ir.queues), "cache": list(ir.caches), "segment": list(ir.segments),
            "state": list(ir.states)}


def generated(app: str, options: dict) -> tuple[ProgramIR, set[str]]:
    """The program of ``app`` after the passes, and the globals its generated C defines."""
    ir = check_program(load_app(app), BuildOptions(**options))
    files = [f for f in generate(ir) if f.name.endswith((".c", ".h"))]
    return ir, set().union(*(defined_globals(f.text) for f in files))


def test_every_global_named_after_a_program_name_is_reserved_from_elements() -> None:
    made = set()
    for app in APPS:
        for options in OPTIONS:
            ir, defined = generated(app, options)
            taken = ir.names() | _checked_globals(ir)
            for plan in ir.plan.elements.values():
                taken |= {*plan.ports.values(), *plan.entries.values(), plan.inputs_record}
            for kind, names in owners(ir).items():
                derived = {g for g in defined for name in names if g.startswith(f"{name}_")}
                unknown = derived - taken
                assert not unknown, (f"{os.path.relpath(app, ROOT)} {options}: the generated C "
                                     f"defines {sorted(unknown)}, named after a {kind}, which "
                                     "GENERATED_GLOBALS does not list")
                made |= {(kind, suffix) for name in names for suffix in GENERATED_GLOBALS[kind]
                         if c_global(kind, name, suffix) in defined}
    listed = {(kind, suffix) for kind, suffixes in GENERATED_GLOBALS.items()
              for suffix in suffixes}
    assert listed - made == set(), "GENERATED_GLOBALS lists globals no program's C defines"


def test_a_suffix_the_table_does_not_list_is_refused() -> None:
    with pytest.raises(ValueError, match="GENERATED_GLOBALS"):
        c_global("queue", "q", "unlisted")
