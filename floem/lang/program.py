"""The program being built: the container of everything an app file makes, and the
app-level functions (main, include, depend, cflags, cut, origin) acting on it."""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from floem.errors import Location
from floem.lang.cache import Cache
from floem.lang.element import Connection, Element
from floem.lang.location import caller_location, string_location
from floem.lang.queue import Queue
from floem.lang.registry import Registry, current_registry, make_current
from floem.lang.segment import Flow, Order, Segment
from floem.lang.state import MemoryRegion, State


@dataclass
class CodeText:
    """A piece of C the user gave (main body, includes), with where it was given."""

    text: str
    loc: Location


@dataclass
class ExternalMain:
    """C sources of an existing program, with its own ``main()``, that make a process's executable."""

    sources: list[str]
    loc: Location


@dataclass
class CutText:
    """``floem.cut(...)`` as the app gave it: the keyword arguments, and where."""

    segment: str
    keywords: dict[str, Any]
    loc: Location


@dataclass
class Program(Registry):
    """One Floem program: elements, connections, segments, states and build options.

    Use as a context manager (``with Program("kvs") as p: ...``) or rely on the
    module-level default program.
    """

    name: str | None = None
    elements: list[Element] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    flows: list[Flow] = field(default_factory=list)
    states: list[State] = field(default_factory=list)
    memory_regions: list[MemoryRegion] = field(default_factory=list)
    orders: list[Order] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    caches: list[Cache] = field(default_factory=list)
    main_code: CodeText | None = None
    main_process: str | None = None
    external: ExternalMain | None = None
    includes: list[CodeText] = field(default_factory=list)
    depends: list[str] = field(default_factory=list)
    extra_cflags: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    cuts: list[CutText] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)   # app file copy -> original's dir
    warnings: list[str] = field(default_factory=list)        # found loading the app file
    _previous: Registry | None = None

    def __post_init__(self) -> None:
        Registry.__init__(self)

    def __enter__(self) -> Program:
        entered.append(self)
        self._previous = make_current(self)
        return self

    def __exit__(self, *exc: object) -> None:
        make_current(self._previous or _default)

    def register(self, made: object) -> None:
        """Keep an object the app made in the list of its kind."""
        kinds: tuple[tuple[type, list[Any]], ...] = (
            (Element, self.elements), (Connection, self.connections), (Segment, self.segments),
            (Flow, self.flows), (State, self.states), (MemoryRegion, self.memory_regions),
            (Order, self.orders), (Queue, self.queues), (Cache, self.caches))
        for kind, kept in kinds:
            if isinstance(made, kind):
                kept.append(made)
                return
        raise TypeError(f"a program keeps no {type(made).__name__}")

    # -- build configuration -----------------------------------------------

    def main(self, c_code: str, process: str | None = None) -> None:
        """Body of the generated ``main()`` of the host process (``process`` by default the main one)."""
        loc = caller_location()
        if self.external is not None:
            raise loc.error(f"main(...) and external_main(...) (at {self.external.loc}) both "
                            "give the program's main; keep one")
        self.main_code = CodeText(c_code, string_location(loc, c_code))
        self.main_process = process

    def external_main(self, *c_files: str, process: str | None = None) -> None:
        """An existing C program (its own ``main()``) is ``process``'s executable.

        The sources (relative to the calling file) are compiled with the
        process's generated code and header (``#include "<process>.h"``) into
        its executable instead of a generated ``main``; they call the callable
        segments and the lifecycle functions as any program linking the
        library would. ``floem run`` runs it as the main process.
        """
        loc = caller_location()
        if self.main_code is not None:
            raise loc.error(f"external_main(...) and main(...) (at {self.main_code.loc}) both "
                            "give the program's main; keep one")
        if not c_files or not all(isinstance(f, str) and f.endswith(".c") for f in c_files):
            raise loc.error("external_main: give the program's C sources (.c files)")
        base = os.path.dirname(loc.file)
        paths = [os.path.normpath(os.path.join(base, f)) for f in c_files]
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise loc.error(f"external_main: no such file: {', '.join(missing)}")
        self.external = ExternalMain(paths, loc)
        self.main_process = process

    @property
    def main_location(self) -> Location | None:
        """Where the program's main was given (``main`` or ``external_main``), if it was."""
        if self.main_code is not None:
            return self.main_code.loc
        return self.external.loc if self.external is not None else None

    def include(self, c_text: str) -> None:
        """C text (usually ``#include`` lines) placed before the element code."""
        self.includes.append(CodeText(c_text, caller_location()))

    def depend(self, *c_or_o_files: str) -> None:
        """Extra C sources or objects (relative to the app file) compiled and linked in."""
        caller = caller_location().file
        base = self.origins.get(caller, os.path.dirname(caller))
        self.depends.extend(os.path.normpath(os.path.join(base, f)) for f in c_or_o_files)

    def cflags(self, *flags: str) -> None:
        """Extra compiler flags."""
        self.extra_cflags.extend(flags)

    def origin(self, path: str) -> None:
        """The calling app file is a copy of the one at ``path``: see `origin`."""
        copy = caller_location().file
        where = os.path.dirname(os.path.normpath(os.path.join(os.path.dirname(copy), path)))
        self.origins[copy] = where
        if where not in sys.path:
            sys.path.insert(0, where)

    def cut(self, segment: str, **keywords: Any) -> None:
        """Where the compiler cuts the ``target.AUTO`` segment ``segment``: see `cut`."""
        self.cuts.append(CutText(segment, keywords, caller_location()))

    @property
    def display_name(self) -> str:
        """The program's name: given, or the app file's stem."""
        if self.name:
            return self.name
        if self.app_file:
            return re.sub(r"\W", "_", os.path.splitext(os.path.basename(self.app_file))[0])
        return "floem_app"


_default = Program()
make_current(_default)
entered: list[Program] = []


def current_program() -> Program:
    """The program objects are being registered in."""
    return cast(Program, current_registry())


def reset_default_program(name: str | None = None) -> Program:
    """Start a fresh default program (the CLI does this before running an app file)."""
    global _default
    _default = Program(name)
    make_current(_default)
    entered.clear()
    return _default


def loaded_program() -> Program:
    """The program an app file built: the default one, or the last ``with Program(...)``."""
    if _default.elements or _default.segments or not entered:
        return _default
    return entered[-1]


def main(c_code: str, process: str | None = None) -> None:
    """Body of the generated ``main()`` of the current program."""
    current_program().main(c_code, process)


def external_main(*c_files: str, process: str | None = None) -> None:
    """An existing C program with its own ``main()`` as a process's executable; see `Program.external_main`."""
    current_program().external_main(*c_files, process=process)


def include(c_text: str) -> None:
    """C text placed before the element code of the current program."""
    current_program().include(c_text)


def depend(*c_or_o_files: str) -> None:
    """Extra C sources or objects (relative to the app file) for the current program."""
    current_program().depend(*c_or_o_files)


def cflags(*flags: str) -> None:
    """Extra compiler flags for the current program."""
    current_program().cflags(*flags)


def cut(segment: str, rx: Sequence[str] = (), tx: Sequence[str] = (),
        rx_cores: int = 1, cpu_cores: int | None = None, tx_cores: int = 1) -> None:
    """Cut the ``target.AUTO`` segment named ``segment``: the elements named in ``rx`` run
    on the NIC and receive its packets, those in ``tx`` run on the NIC after the host, the
    rest on the CPU, with queues the compiler inserts at each cut; ``*_cores`` are the
    threads of each part (``cpu_cores``: the segment's own ``cores`` by default).
    ``floem place`` writes this line into the app file it makes."""
    current_program().cut(segment, rx=list(rx), tx=list(tx), rx_cores=rx_cores,
                          cpu_cores=cpu_cores, tx_cores=tx_cores)


def origin(path: str) -> None:
    """This app file is a copy of the app file at ``path`` (relative to this one): the
    modules it imports and the relative paths it gives `depend` are found beside the
    original. ``floem place`` begins the app file it writes with this line."""
    current_program().origin(path)
