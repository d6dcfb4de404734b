"""The build options: every choice a build takes besides the program, with its default
and the command-line flags that give it, in one place. The CLI (its flags made from
`BuildOptions`'s fields), ``floem.build``/``floem.run`` and `floem place` make one; the
passes and code generation read it from ``ProgramIR.options``."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from enum import StrEnum
from typing import Any

from floem.errors import FloemError, Location
from floem.platforms import DMA_MEANINGS, DMA_OPTIONS, PLATFORMS

NIC_PLATFORMS = tuple(PLATFORMS)
NET_BACKENDS = ("udp", "tcp", "dpdk", "pcap", "xdp")


class Part(StrEnum):
    """A part of a cut segment (`Cut`), in the order packets cross them: the NIC's receiving
    part, the CPU's, the NIC's sending part."""

    RX = "rx"
    CPU = "cpu"
    TX = "tx"

    @property
    def long_name(self) -> str:
        """How a message names the part: ``NIC receiving``, ``CPU``, ``NIC sending``."""
        return {Part.RX: "NIC receiving", Part.CPU: "CPU", Part.TX: "NIC sending"}[self]


@dataclass(frozen=True)
class Cut:
    """Where a ``target.AUTO`` segment is cut: the elements on the NIC before the host
    (``rx``, from the segment's source) and after it (``tx``, to its ends); every other
    element runs on the CPU. ``*_cores``: threads of each part (``cpu_cores`` None: the
    segment's own). ``loc``: the ``floem.cut`` line, when the app gave it."""

    segment: str
    rx: tuple[str, ...] = ()
    tx: tuple[str, ...] = ()
    rx_cores: int = 1
    cpu_cores: int | None = None
    tx_cores: int = 1
    loc: Location | None = None

    def describe(self, order: list[str]) -> str:
        """The cut as ``a | b || c``: the NIC's receiving part, ``|``, the CPU part, ``||``,
        the NIC's sending part, each in ``order`` (the segment's), an empty one as ``-``."""
        parts = ([e for e in order if e in self.rx],
                 [e for e in order if e not in self.rx and e not in self.tx],
                 [e for e in order if e in self.tx])
        rx, cpu, tx = (" ".join(p) or "-" for p in parts)
        return f"{rx} | {cpu} || {tx}"


#: The commands taking the options that change what the passes decide, and those that build.
COMPILING = ("check", "build", "run")
BUILDING = ("build", "run")


@dataclass(frozen=True)
class Flag:
    """How the ``floem`` command takes a build option: the flag (a bool option's is a
    switch: ``--X`` turns it on, ``--no-X`` off), its help, the commands taking it, the type
    of its value, its metavar and choices; ``key``: the entry it sets in a dict option (one
    flag per entry); ``repeat``: the flag may be given several times, each value an entry of
    a tuple option."""

    name: str
    help: str
    commands: tuple[str, ...] = COMPILING
    type: Callable[[str], Any] = str
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    key: str | None = None
    repeat: bool = False


def segment_threads(text: str) -> tuple[str, int]:
    """``SEGMENT=N`` (``--threads``) as ``(SEGMENT, N)``, N a whole number, 1 or more."""
    name, sep, count = text.partition("=")
    if not sep or not name or not count.isdigit() or int(count) < 1:
        raise FloemError(f"--threads takes SEGMENT=N, N threads (1 or more), not {text!r}")
    return name, int(count)


def option(default: Any, *flags: Flag) -> Any:
    """A `BuildOptions` field: its default (a dict's: empty) and its command-line flags."""
    if isinstance(default, dict):
        return field(default_factory=dict, metadata={"flags": flags})
    return field(default=default, metadata={"flags": flags})


def flags(option_field: Field[Any]) -> tuple[Flag, ...]:
    """The command-line flags of a `BuildOptions` field (none: keywords only)."""
    found: tuple[Flag, ...] = option_field.metadata["flags"]
    return found


@dataclass(frozen=True)
class BuildOptions:
    """How to build a program: each option with its default and the flags the ``floem``
    command takes it as (the CLI's options are made from these fields, in this order)."""

    nic: str = option("emu", Flag("--nic", "NIC platform", choices=NIC_PLATFORMS))
    nic_managers: int = option(1, Flag(
        "--nic-managers", "NIC cores running the queue synchronization layer (0: inline)",
        commands=COMPILING + ("place",), type=int, metavar="N"))
    sync_layer: bool = option(True, Flag(
        "--no-sync-layer", "blocking, unbatched DMA per queue entry instead of the sync layer"))
    send_all_fields: bool = option(False, Flag(
        "--send-all-fields", "queues carry the whole per-packet state, not only live fields"))
    counters: bool = option(True, Flag(
        "--no-counters", "leave out the per-element packet counters (--report, floem stats)"))
    slicing: bool = option(True, Flag(
        "--no-slicing", "frames cross between CPU and NIC whole (no payload kept on the NIC)"))
    slice_threshold: int = option(512, Flag(
        "--slice-threshold", "frames shorter than this cross whole", type=int, metavar="BYTES"))
    slice_pool: int = option(1024, Flag(
        "--slice-pool", "frames the NIC keeps at most while their headers are away", type=int,
        metavar="N"))
    slice_timeout_ms: int = option(1000, Flag(
        "--slice-timeout", "a kept frame not back after MS ms is reclaimed", type=int,
        metavar="MS"))
    trace_filter: str | None = option(None, Flag(
        "--trace-filter", "with --trace: trace only the packets for which this C expression "
        "is true: on their per-packet state (state->op == 1, decided once their segment has "
        "written what it reads) or on the values they enter the program with (v0, v1, ...)",
        metavar="EXPR"))
    dma_model: dict[str, float] = option({}, *(Flag(
        f"--dma-{key.replace('_', '-')}", f"the emulated NIC's DMA engine: {DMA_MEANINGS[key]}",
        commands=BUILDING, type=float, metavar=unit, key=key) for key, unit in DMA_OPTIONS.items()))
    net: str = option("udp", Flag("--net", "packet I/O backend", commands=BUILDING,
                                  choices=NET_BACKENDS))
    # also on with floem run --trace N (a run option: how many packets to trace)
    trace: bool = option(False, Flag(
        "--trace", "with the packet-trace code (its processes trace FLOEM_TRACE packets)",
        commands=("check", "build")))
    threads: tuple[tuple[str, int], ...] = option((), Flag(
        "--threads", "run N threads of segment SEGMENT instead of the app's cores= (SEGMENT=N; "
        "several times for several segments)", type=segment_threads, metavar="SEGMENT=N",
        repeat=True))
    count_elements: bool = option(False, Flag(
        "--count-elements", "keep every element's function out of line, so that "
        "--count-instructions counts each on its own (floem place)"))
    # on with floem run --count-instructions BASE (a run option: where the counts go)
    count_instructions: bool = option(False)
    cache_steering: bool = option(True)     # caches steer misses by key to queue instances
    cuts: tuple[Cut, ...] = option(())      # floem place: cuts of target.AUTO segments

    def __post_init__(self) -> None:
        if self.nic not in NIC_PLATFORMS:
            raise FloemError(f"--nic must be one of {', '.join(NIC_PLATFORMS)}, not {self.nic!r}")
        if self.nic_managers < 0:
            raise FloemError("--nic-managers must be 0 (inline) or more")
        unknown = set(self.dma_model) - set(DMA_OPTIONS)
        if unknown:
            raise FloemError(f"unknown DMA model options: {', '.join(sorted(unknown))}")
        if self.net not in NET_BACKENDS:
            raise FloemError(f"--net must be one of {', '.join(NET_BACKENDS)}, not {self.net!r}")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("slice_threshold", "slice_pool", "slice_timeout_ms") and (
                    not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise FloemError(f"{flags(f)[0].name} must be a whole number, 0 or more, "
                                 f"not {value!r}")
        named = [name for name, _ in self.threads]
        twice = sorted({n for n in named if named.count(n) > 1})
        if twice:
            raise FloemError(f"--threads gives segment {twice[0]!r} threads twice")
        if self.trace_filter is not None and not self.trace:
            raise FloemError("--trace-filter selects the packets --trace traces: give --trace too")

    @classmethod
    def from_keywords(cls, **opts: Any) -> BuildOptions:
        """The options given as keywords (``floem.build(nic="liquidio")``); an unknown
        keyword is an error naming the known ones."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(opts) - known)
        if unknown:
            raise FloemError(f"unknown build option(s) {', '.join(unknown)} "
                             f"(options: {', '.join(sorted(known))})")
        return cls(**opts)
