"""The build options: every choice a build takes besides the program, with its default,
in one place. The CLI, ``floem.build``/``floem.run`` and `floem explore` make one; the
passes and code generation read it from ``ProgramIR.options``."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from floem.errors import FloemError, Location
from floem.platforms import DMA_OPTIONS, PLATFORMS

NIC_PLATFORMS = tuple(PLATFORMS)
NET_BACKENDS = ("udp", "dpdk", "pcap")


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


@dataclass(frozen=True)
class BuildOptions:
    """How to build a program (``floem build --help`` lists them as flags)."""

    nic: str = "emu"                        # --nic: the NIC platform
    nic_managers: int = 1                   # --nic-managers: sync-layer manager cores (0: inline)
    sync_layer: bool = True                 # --no-sync-layer turns it off (blocking DMA)
    send_all_fields: bool = False           # --send-all-fields: no liveness across queues
    dma_model: dict[str, float] = field(default_factory=dict)   # --dma-*: the NIC's DMA cost model
    net: str = "udp"                        # --net: the packet I/O backend
    count_instructions: bool = False        # --count-instructions: the NIC build counts (emu)
    cache_steering: bool = True             # caches steer misses by key to queue instances
    counters: bool = True                   # --no-counters: no per-element packet counters
    slicing: bool = True                    # --no-slicing: frames cross CPU-NIC whole
    slice_threshold: int = 512              # --slice-threshold: shorter frames cross whole
    slice_pool: int = 1024                  # --slice-pool: frames kept at most on the NIC
    slice_timeout_ms: int = 1000            # --slice-timeout: a kept frame is reclaimed after
    trace: bool = False                     # --trace: the packet-trace code (floem run --trace N)
    trace_filter: str | None = None         # --trace-filter EXPR: which entering packets to trace
    cuts: tuple[Cut, ...] = ()              # floem place: cuts of target.AUTO segments
    count_elements: bool = False            # floem place: element functions out of line, counted

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
        for name in ("slice_threshold", "slice_pool", "slice_timeout_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                flag = "--" + name.replace("_ms", "").replace("_", "-")
                raise FloemError(f"{flag} must be a whole number, 0 or more, not {value!r}")
        if self.count_instructions and self.nic != "emu":
            raise FloemError("--count-instructions runs the NIC natively under callgrind: "
                             "use --nic emu")
        if self.trace_filter is not None and not self.trace:
            raise FloemError("--trace-filter selects the packets --trace traces: give --trace too")

    @classmethod
    def from_keywords(cls, **opts: Any) -> "BuildOptions":
        """The options given as keywords (``floem.build(nic="liquidio")``); an unknown
        keyword is an error naming the known ones."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(opts) - known)
        if unknown:
            raise FloemError(f"unknown build option(s) {', '.join(unknown)} "
                             f"(options: {', '.join(sorted(known))})")
        return cls(**opts)
