"""App parameters: one app file, several designs, chosen on the command line with ``-D``.

``floem.param(name, default, choices=None, help="")`` in an app file returns the
value given as ``-D name=value`` (on any ``floem`` subcommand), converted to
the type of the default, or the default. ``floem.defaults(name=value, ...)`` before
the declarations changes their defaults (``floem place`` writes it for the values it
chose). The command line sets the given values before the app file runs (`set_given`)
and checks afterwards that each named a parameter the app declared (`check_given`).
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from floem.errors import FloemError, Location
from floem.lang.location import caller_location

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


@dataclass(frozen=True)
class Param:
    """A declared parameter: its default, allowed values, help, and the value in use."""

    name: str
    default: Any
    choices: tuple[Any, ...] | None
    help: str
    loc: Location
    value: Any

    @property
    def type_name(self) -> str:
        """``int``, ``float``, ``bool`` or ``str``: the type values are converted to."""
        return type(self.default).__name__


_given: dict[str, str] = {}
_declared: dict[str, Param] = {}
_defaults: dict[str, tuple[Any, Location]] = {}
#: Bad ``-D`` values met while the app ran (the default was used meanwhile); `check_given`
#: reports the first once every parameter is known, so the message can list them all.
_errors: list[tuple[Location, str]] = []


def set_given(values: dict[str, str]) -> None:
    """Start a fresh app run with these ``-D`` values (name -> text); forgets declarations."""
    _given.clear()
    _given.update(values)
    _declared.clear()
    _defaults.clear()
    _errors.clear()


def declared() -> list[Param]:
    """The parameters the app declared, in declaration order."""
    return list(_declared.values())


def defaults(**values: Any) -> None:
    """New defaults for the parameters named, declared after this call (an app file
    written by ``floem place`` begins with the values it chose); ``-D`` still wins."""
    loc = caller_location()
    for name, value in values.items():
        if not isinstance(value, (bool, int, float, str)):
            raise loc.error(f"defaults: {name}={value!r}: a default is an int, float, bool "
                            f"or str")
        if name in _declared:
            raise loc.error(f"defaults: parameter {name!r} is already declared (at "
                            f"{_declared[name].loc}); give its default before")
        _defaults[name] = (value, loc)


def param(name: str, default: Any, choices: Any = None, help: str = "") -> Any:
    """The value of app parameter ``name``: ``-D name=value`` converted like ``default``, else it.

    ``default`` is an int, float, bool or str; ``choices``, when given, lists
    the allowed values (the default among them). A value that does not parse
    or is not a choice is a `FloemError` at this call, listing the parameters.
    """
    loc = caller_location()
    if not isinstance(name, str) or not _NAME.match(name):
        raise loc.error(f"param: the name must be an identifier, not {name!r}")
    if not isinstance(default, (bool, int, float, str)):
        raise loc.error(f"param {name!r}: the default must be an int, float, bool or str "
                        f"(its type is the parameter's), not {default!r}")
    allowed = None if choices is None else tuple(choices)
    if allowed is not None:
        if not allowed or any(type(c) is not type(default) for c in allowed):
            raise loc.error(f"param {name!r}: choices must be a non-empty list of "
                            f"{type(default).__name__} values like the default")
        if default not in allowed:
            raise loc.error(f"param {name!r}: the default {default!r} is not one of the choices "
                            f"({_show(allowed)})")
    if name in _defaults:
        default = _new_default(name, default, allowed, loc)
    previous = _declared.get(name)
    if previous is not None:
        if (previous.default, previous.choices) != (default, allowed):
            raise loc.error(f"param {name!r} is already declared differently (at {previous.loc})")
        return previous.value
    value = default if name not in _given else _given_value(name, default, allowed, loc)
    _declared[name] = Param(name, default, allowed, help, loc, value)
    return value


def _new_default(name: str, default: Any, allowed: tuple[Any, ...] | None,
                 loc: Location) -> Any:
    """The default `defaults` gave ``name`` (declared at ``loc``), checked like the
    declared one."""
    value, given_at = _defaults[name]
    if isinstance(default, float) and type(value) is int:
        value = float(value)
    if type(value) is not type(default):
        raise given_at.error(f"defaults: {name}={value!r}: not {_KINDS[type(default)]}, as the "
                             f"parameter declared at {loc}")
    if allowed is not None and value not in allowed:
        raise given_at.error(f"defaults: {name}={value!r}: not one of {_show(allowed)} (the "
                             f"parameter declared at {loc})")
    return value


def _given_value(name: str, default: Any, allowed: tuple[Any, ...] | None, loc: Location) -> Any:
    """The ``-D`` value of ``name`` converted; a bad one is recorded in `_errors` and gives the default."""
    text = _given[name]
    value = _convert(text, default)
    if value is None:
        _errors.append((loc, f"-D {name}={text}: not {_KINDS[type(default)]}"))
        return default
    if allowed is not None and value not in allowed:
        _errors.append((loc, f"-D {name}={text}: not one of {_show(allowed)}"))
        return default
    return value


def check_values() -> None:
    """Raise the first bad ``-D`` value met so far (if the app stopped early, too)."""
    if _errors:
        loc, message = _errors[0]
        raise loc.error(message + _listing(declared()))


def check_given(app_file: str) -> None:
    """After the app ran: every ``-D`` value was usable and named a parameter it declared."""
    check_values()
    for name, (_, loc) in _defaults.items():
        if name not in _declared:
            raise loc.error(f"defaults: {name}: no such parameter{_listing(declared())}")
    unknown = sorted(set(_given) - set(_declared))
    if not unknown:
        return
    names = ", ".join(unknown)
    if not _declared:
        raise FloemError(f"-D {names}: this app declares no parameters (floem.param)", app_file)
    close = [m for n in unknown for m in difflib.get_close_matches(n, list(_declared), 1)]
    meant = f" (did you mean {', '.join(close)}?)" if close else ""
    raise FloemError(f"-D {names}: no such parameter{'s' if len(unknown) > 1 else ''}{meant}"
                     f"{_listing(declared())}", app_file)


def parse_definitions(definitions: list[str]) -> dict[str, str]:
    """``["a=1", "b=x"]`` (the ``-D`` arguments) as a dict; a malformed one is a `FloemError`."""
    values: dict[str, str] = {}
    for d in definitions:
        name, eq, text = d.partition("=")
        if not eq or not _NAME.match(name):
            raise FloemError(f"-D {d}: expected NAME=VALUE")
        if name in values and values[name] != text:
            raise FloemError(f"-D {name} is given twice ({name}={values[name]} and {d}): "
                             f"give it once")
        values[name] = text
    return values


def describe(params: list[Param]) -> str:
    """A table of parameters: name, type, value (and default), choices, help."""
    if not params:
        return "no parameters\n"
    rows = [("name", "type", "value", "default", "choices", "help")]
    for p in params:
        rows.append((p.name, p.type_name, value_text(p.value), value_text(p.default),
                     _show(p.choices) if p.choices else "-", p.help))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return "".join(("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[5]).rstrip() + "\n"
                   for r in rows)


_KINDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _convert(text: str, default: Any) -> Any:
    """``text`` as a value of the default's type, or None when it does not parse."""
    if isinstance(default, bool):
        lowered = text.lower()
        return lowered in _TRUE if lowered in _TRUE | _FALSE else None
    try:
        if isinstance(default, int):
            try:
                return int(text, 10)
            except ValueError:
                return int(text, 0)
        if isinstance(default, float):
            return float(text)
    except ValueError:
        return None
    return text


def value_text(value: Any) -> str:
    """A parameter value as ``-D`` writes it (``true``/``false`` for booleans)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _show(values: tuple[Any, ...] | None) -> str:
    return ", ".join(value_text(v) for v in values or ())


def _listing(params: list[Param]) -> str:
    """The app's parameters, for error messages."""
    if not params:
        return ""
    lines = []
    for p in params:
        choices = f" ({_show(p.choices)})" if p.choices else ""
        lines.append(f"  {p.name}={value_text(p.default)}{choices}: {p.type_name}"
                     + (f", {p.help}" if p.help else ""))
    return "\nparameters of the app:\n" + "\n".join(lines)
