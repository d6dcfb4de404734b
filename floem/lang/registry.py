"""Where what an app file makes registers: the current program, its names and its scopes.

Elements, segments, states, queues and caches import this module, not `floem.lang.program`:
the `Program` holding them is a `Registry` defined above them, and only programs are made
current.
"""
from __future__ import annotations

import keyword
import re
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import ClassVar

from floem.errors import Location

_C_RESERVED = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
    "typedef", "union", "unsigned", "void", "volatile", "while", "main", "state", "bool",
}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class ScopeKind(Enum):
    """What a scope is: the elements made while it is open belong to it."""

    SEGMENT = "segment"
    FLOW = "flow"
    COMPOSITE = "composite"


class Scope:
    """Something whose ``impl`` makes elements that belong to it: a segment, a flow, a composite."""

    scope_kind: ClassVar[ScopeKind]
    name: str


class Registry:
    """One program's claimed names and open scopes, and the objects made in it (`register`)."""

    def __init__(self) -> None:
        self.app_file: str | None = None
        self._scopes: list[Scope] = []
        self._names: dict[str, Location] = {}
        self._counters: dict[str, int] = {}

    def register(self, made: object) -> None:
        """Keep an object the app made (element, connection, segment, flow, state, memory
        region, order, queue, cache)."""
        raise NotImplementedError

    def claim_name(self, wanted: str | None, prefix: str, loc: Location) -> str:
        """A unique C identifier: ``wanted`` if given (checked), else ``prefix<N>``."""
        if self.app_file is None and loc.file != "<unknown>":
            self.app_file = loc.file
        if wanted is not None:
            if not isinstance(wanted, str) or not _IDENT.match(wanted) \
                    or wanted in _C_RESERVED or keyword.iskeyword(wanted) \
                    or wanted.startswith("floem_"):
                raise loc.error(f"name {wanted!r} is not usable: names must be C identifiers, "
                                "not C keywords, 'main', 'state' or 'floem_*'")
            if wanted in self._names:
                raise loc.error(f"name {wanted!r} is already used (at {self._names[wanted]})")
            self._names[wanted] = loc
            return wanted
        base = re.sub(r"\W", "_", prefix)
        while True:
            n = self._counters.get(base, 0)
            self._counters[base] = n + 1
            name = f"{base}{n}"
            if name not in self._names:
                self._names[name] = loc
                return name

    @property
    def names(self) -> frozenset[str]:
        """Every name claimed so far (elements, segments, queues, caches, states...)."""
        return frozenset(self._names)

    @contextmanager
    def scope(self, owner: Scope) -> Iterator[Scope]:
        """Context in which created elements belong to ``owner``."""
        self._scopes.append(owner)
        try:
            yield owner
        finally:
            self._scopes.pop()

    def innermost(self, kind: ScopeKind) -> Scope | None:
        """The innermost open scope of the given kind, or None."""
        return next((owner for owner in reversed(self._scopes) if owner.scope_kind is kind), None)


_current: Registry | None = None


def current_registry() -> Registry:
    """The program objects are being registered in."""
    if _current is None:
        raise RuntimeError("no program is open: floem.lang.program opens the default one")
    return _current


def make_current(registry: Registry) -> Registry | None:
    """Register what is made from now on in ``registry``; the one it replaces, if any."""
    global _current
    previous, _current = _current, registry
    return previous
