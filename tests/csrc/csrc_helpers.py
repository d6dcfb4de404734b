"""Shared helpers for the C-body front end tests: bodies and a gcc syntax check."""
from __future__ import annotations

import subprocess
from pathlib import Path

from floem.csrc import Body, BodyInfo, Port, analyze

APP = "/work/apps/demo app.py"
APP_LINE = 20


def make_body(code: str, inputs: dict[str, list[str]] | None = None,
              outputs: dict[str, list[str]] | None = None,
              fields: dict[str, str] | None = None,
              persistent: dict[str, str] | None = None, element: str = "el",
              persistent_fields: dict[str, dict[str, str]] | None = None) -> Body:
    """A body of element `element` written at line `APP_LINE` of `APP`."""
    return Body(element=element, code=code, app_file=APP, app_line=APP_LINE,
                inputs=[Port(n, t) for n, t in (inputs or {}).items()],
                outputs=[Port(n, t) for n, t in (outputs or {}).items()],
                state_fields=fields, persistent=persistent or {},
                persistent_fields=persistent_fields or {})


def info_of(code: str, **kwargs: object) -> BodyInfo:
    """Analyse one body alone."""
    body = make_body(code, **kwargs)
    return analyze([body])[body.element]


def gcc_check(source: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run gcc -fsyntax-only with every warning an error on `source`."""
    path = tmp_path / "lowered.c"
    path.write_text(source)
    return subprocess.run(["gcc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                           str(path)], capture_output=True, text=True, check=False)
