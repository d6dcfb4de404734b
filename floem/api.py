"""The Python API's entry points above the language: load an app file, build and run the
current program. The CLI and `floem explore` use them; ``floem.build`` and ``floem.run``
are the last two."""
from __future__ import annotations

import ast
import os
import runpy
import sys
import traceback
from typing import Any

from floem.builder import build_program, run_program
from floem.errors import FloemError
from floem.ir import BuildOptions
from floem.lang import params
from floem.lang.program import Program, current_program, loaded_program, reset_default_program
from floem.lang.segment import Segment


def load_app(path: str, given: dict[str, str] | None = None) -> Program:
    """Execute an app file with the ``-D`` parameter values ``given``; return the program
    it built."""
    if not os.path.exists(path):
        raise FloemError(f"no such app file: {path}")
    if os.path.isdir(path):
        raise FloemError(f"{path} is a directory: give the app file (a Python file) in it")
    app = os.path.abspath(path)
    reset_default_program()
    params.set_given(given or {})
    _forget_shadowed_modules(os.path.dirname(app))
    sys.path.insert(0, os.path.dirname(app))
    try:
        made = runpy.run_path(app, run_name="__floem_app__")
    except SyntaxError as e:
        raise FloemError(f"Python syntax error: {e.msg}", e.filename or app, e.lineno) from None
    except FloemError:
        params.check_values()
        raise
    except Exception as e:
        params.check_values()
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if not f.filename.startswith(os.path.dirname(os.path.abspath(__file__)))]
        where = frames[-1] if frames else None
        raise FloemError(f"the app raised {type(e).__name__}: {e}",
                         where.filename if where else app,
                         where.lineno if where else None) from None
    finally:
        sys.path.remove(os.path.dirname(app))
    params.check_given(app)
    program = loaded_program()
    program.app_file = app
    program.params = {p.name: p.value for p in params.declared()}
    program.warnings += _segments_never_made(app, made, program)
    return program


def _segments_never_made(app: str, made: dict[str, Any], program: Program) -> list[str]:
    """A warning for each segment class the app file defines and never instantiates (nor
    derives another class from): its elements are not in the program."""
    classes = [c for c in made.values() if isinstance(c, type) and issubclass(c, Segment)
               and c.__module__ == "__floem_app__"]
    used = {type(s) for s in program.segments}
    bases = {b for c in classes for b in c.__mro__[1:]}
    lines = {node.name: node.lineno for node in ast.walk(_syntax(app))
             if isinstance(node, ast.ClassDef)}
    return [f"{app}:{lines.get(c.__name__, 1)}: segment class '{c.__name__}' is defined but "
            f"never instantiated, so its elements are not in the program (make one: "
            f"{c.__name__}(\"name\"))" for c in classes if c not in used and c not in bases]


def _syntax(app: str) -> ast.Module:
    """The app file's syntax tree (it ran, so it parses)."""
    with open(app) as f:
        return ast.parse(f.read())


def _forget_shadowed_modules(directory: str) -> None:
    """Drop the modules imported earlier under the name of a module in ``directory``, so
    that an app's ``import nf`` finds the ``nf.py`` beside it, not a module of that name
    another app (or the caller) imported before, and runs it again with this load's ``-D``
    values (a module beside the app may declare parameters too). The standard library's
    are kept."""
    for name in list(sys.modules):
        top = name.split(".")[0]
        mine = os.path.join(directory, top)
        if top not in sys.stdlib_module_names and (os.path.exists(mine + ".py")
                                                   or os.path.isdir(mine)):
            del sys.modules[name]


def build(out_dir: str | None = None, dump_after: str | None = None, report_file: bool = False,
          **opts: Any) -> Any:
    """Compile the current program into ``out_dir`` with the build options ``opts``
    (`BuildOptions` fields); returns a `BuildResult` naming every file."""
    return build_program(current_program(), BuildOptions.from_keywords(**opts), out_dir,
                         dump_after, report_file)


def run(timeout: float | None = None, **opts: Any) -> Any:
    """Build the current program into the cache and run it; returns a `RunResult`
    (stdout, stderr, returncode)."""
    return run_program(current_program(), timeout=timeout, **opts)
