"""The one exception users see: a program mistake with its location."""
from __future__ import annotations

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
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        what = ""
        if self.element:
            what = f"element '{self.element}'"
            if self.body_line:
                what += f" (body line {self.body_line})"
            what += ": "
        return f"{where}{what}{self.message}"


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
