"""The one exception users see: a program mistake with its location."""
from __future__ import annotations

import re
from dataclasses import dataclass


class FloemError(Exception):
    """A mistake in a Floem program, located in the app file.

    The message names the app file and line (of the element class, the ``>>``
    or the segment instantiation) and, for C bodies, the line inside the body.
    """

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 element: str | None = None, body_line: int | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.element = element
        self.body_line = body_line
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self._where()}: {self._what()}" if self.file else self._what()

    def diagnostic(self) -> str:
        """The line the ``floem`` command prints: ``FILE:LINE: error: ...``, the form of
        compilers that editors parse (``FILE: error: ...`` without a line), or
        ``floem: error: ...`` for an error with no place in a file."""
        return f"{self._where() if self.file else 'floem'}: error: {self._what()}"

    def _where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else str(self.file)

    def _what(self) -> str:
        """The message, after the element and body line it concerns."""
        if not self.element:
            return self.message
        body = f" (body line {self.body_line})" if self.body_line else ""
        return f"element '{self.element}'{body}: {self.message}"


#: The most errors one check reports (a compiler's ``-fmax-errors``); the rest are counted.
MAX_ERRORS = 20


class FloemErrors(FloemError):
    """Several independent mistakes found by one check, in program order.

    Its location and message are the first mistake's; ``str`` and `diagnostic` give them
    all, one a line, up to `MAX_ERRORS`.
    """

    def __init__(self, errors: list[FloemError]) -> None:
        flat = [one for e in errors for one in (e.errors if isinstance(e, FloemErrors) else [e])]
        self.errors: list[FloemError] = sorted(
            flat, key=lambda e: (e.file or "", e.line or 0, e.body_line or 0))
        first = self.errors[0]
        super().__init__(first.message, first.file, first.line, first.element, first.body_line)

    def __str__(self) -> str:
        return self._lines([str(e) for e in self.errors[:MAX_ERRORS]])

    def diagnostic(self) -> str:
        return self._lines([e.diagnostic() for e in self.errors[:MAX_ERRORS]])

    def _lines(self, shown: list[str]) -> str:
        more = len(self.errors) - len(shown)
        if more:
            shown.append(f"floem: note: {more} more error{'s' if more > 1 else ''} not shown")
        return "\n".join(shown)


def raise_together(errors: list[FloemError]) -> None:
    """Raise the mistakes one check found: nothing for none, the mistake itself for one,
    `FloemErrors` for several."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise FloemErrors(errors)


#: A located warning (``FILE:LINE: ...``), and one of gcc's (``C compiler: FILE:LINE:COL:
#: warning: ...``, as the builder passes them on).
_LOCATED = re.compile(r"(?P<where>[^\s:][^:]*:\d+): (?P<what>.*)", re.S)
_GCC = re.compile(r"C compiler: (?P<where>[^\s:][^:]*:\d+(?::\d+)?): warning: (?P<what>.*)",
                  re.S)


def warning_line(warning: str) -> str:
    """The line the ``floem`` command prints for a warning of `ProgramIR.warnings` or
    `BuildResult.warnings`: ``FILE:LINE: warning: ...`` when it names a place (gcc's
    with their column, as ``FILE:LINE:COL: warning: C compiler: ...``), else
    ``floem: warning: ...``."""
    gcc = _GCC.fullmatch(warning)
    if gcc:
        return f"{gcc['where']}: warning: C compiler: {gcc['what']}"
    located = _LOCATED.fullmatch(warning)
    if located:
        return f"{located['where']}: warning: {located['what']}"
    return f"floem: warning: {warning}"


@dataclass(frozen=True)
class Location:
    """A place in the app file: where an element, connection or segment was made."""

    file: str
    line: int

    def error(self, message: str, element: str | None = None,
              body_line: int | None = None) -> FloemError:
        """A `FloemError` located here."""
        return FloemError(message, self.file, self.line, element, body_line)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"
