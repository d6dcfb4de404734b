"""The performance model: what a counted configuration would do on a NIC and a host.

A platform is a data file, ``floem/platforms/<name>.toml``, every figure with its
published source: its cores (count, clock, cycles per counted instruction of its own ISA),
caches (the geometry the counting simulates: a first level per thread, a second level per
thread where the platform has one of each core's own, a last level shared), memory (a hit
in the second and in the last level, a last-level miss; an atomic operation, and the
extra cost when another core wrote the line last), packet I/O per frame (and per byte of
it, where a core copies the frame: DPDK's memif on this machine; a NIC's DMA writes frames
to memory with no core's copy), crypto (cycles
per byte on the issuing core, per-call cost) and, for a NIC, PCIe and the link. From a
`Measurement` (counts per packet, the same on any machine) the model gives each
segment's time per packet on the platform of its side,

    instructions x CPI / clock                    the work
  + second-level hits x its latency               memory (loads and instruction fetches
  + last-level hits x its latency                         missing the simulated caches)
  + last-level misses x DRAM latency
  + frames received x (rx + frame bytes x copy)   packet I/O (frame bytes: the
  + frames sent x (tx + frame bytes x copy)          workload's mean frame)
  + atomics x (atomic + share x transfer)         cache lines moving between cores
  + DMA waits x (round trip + bytes / bandwidth)  blocking DMA issued by elements
  + crypto bytes x cycles per byte / clock + calls x call cost

(``share``, the chance that another core wrote the line last, is 1 - 1/N for N threads
on that side doing atomics), and turns it into capacities in packets per second:

* each segment: its threads (those that can work: a queue's consumer at most its
  instances) / its time per packet;
* the NIC's sync-layer managers: their cores / the time per packet of their rounds that
  moved entries (counted on the manager cores as a segment's work is), with each round
  moving a full batch (`full_batches`);
* each side's locks: 1 / (the time per packet spent holding a lock, with its atomics):
  no two cores hold one at once;
* PCIe: bandwidth / bytes per packet (the queue entries, with their status words and a
  TLP header each, the DMA of elements, and the frames themselves when the host sends
  and receives them through a plain NIC);
* the link: line rate / bits per packet, in the busier direction.

The least is the predicted throughput and its resource the bottleneck. Latency comes
from `floem.explore.latency` at an offered load (by default 80% of the prediction).
"""
from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from floem.errors import FloemError
from floem.explore.latency import Latency, Station, latency
from floem.explore.measure import Geometry, Machine, Measurement, Misses, SegmentCounts

PLATFORM_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "platforms")
#: Ethernet's per-frame overhead on the wire: preamble and delimiter (8), inter-frame gap (12)
#: and frame check sequence (4), which captures do not hold.
WIRE_OVERHEAD_BYTES = 24
#: The offered load of the latency prediction when none is given: this share of the
#: predicted throughput.
DEFAULT_LOAD = 0.8
#: Sections every platform file has, and those a NIC's also has.
SECTIONS = ("cores", "caches", "memory", "packet_io", "crypto")
NIC_SECTIONS = ("pcie", "link")


@dataclass(frozen=True)
class Platform:
    """A platform's figures, as its data file gives them (``kind``: ``nic`` or ``host``)."""

    name: str
    title: str
    kind: str
    cores: int
    ghz: float
    cpi: float
    caches: Geometry                        # I1:D1:LL or I1:D1:L2:LL, each BYTES,WAYS,LINE
    l2_ns: float                            # a first-level miss served by the second level
    ll_ns: float                            # a miss served by the last level
    dram_ns: float
    atomic_ns: float
    transfer_ns: float
    rx_ns: float
    tx_ns: float
    crypto_cycles_per_byte: float           # 0: no crypto path but instructions
    crypto_call_ns: float
    pcie_gbytes: float = 0.0                # GB/s per direction, after protocol overhead
    pcie_latency_ns: float = 0.0            # a 64-byte read's round trip
    tlp_bytes: float = 0.0                  # a transaction's headers and framing
    link_gbps: float = 0.0
    io_ns_per_byte: float = 0.0             # a core's copy of a frame's bytes, each way
    target: str = "emu"                     # a NIC's: the --nic build counted for it
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def ns_per_instruction(self) -> float:
        return self.cpi / self.ghz


def model_platforms(kind: str | None = None) -> list[str]:
    """The names of the platforms with a data file (of ``kind``, when given)."""
    names = sorted(f[:-5] for f in os.listdir(PLATFORM_DIR) if f.endswith(".toml"))
    return [n for n in names if kind is None or _read(n).get("kind") == kind]


def load_platform(name: str, kind: str = "nic") -> Platform:
    """The platform ``name`` (``floem/platforms/<name>.toml``), which must be of ``kind``."""
    if name not in model_platforms(kind):
        raise FloemError(f"no {kind} platform {name!r}: the {kind} platforms are "
                         f"{', '.join(model_platforms(kind))}")
    data = _read(name)
    path = os.path.join(PLATFORM_DIR, name + ".toml")
    try:
        cores, caches, memory, io, crypto = (data[k] for k in SECTIONS)
        nic = {k: data[k] for k in NIC_SECTIONS} if kind == "nic" else {}
        levels = ("l1i", "l1d", "l2", "ll") if "l2" in caches else ("l1i", "l1d", "ll")
        geometry = ":".join(",".join(str(int(n)) for n in caches[level]) for level in levels)
        return Platform(
            name=name, title=data["title"], kind=kind, cores=int(cores["count"]),
            ghz=float(cores["ghz"]), cpi=float(cores["cpi"]), caches=geometry,
            l2_ns=float(memory["l2_ns"]) if "l2" in caches else 0.0,
            ll_ns=float(memory["ll_ns"]), dram_ns=float(memory["dram_ns"]),
            atomic_ns=float(memory["atomic_ns"]), transfer_ns=float(memory["transfer_ns"]),
            rx_ns=float(io["rx_ns"]),
            tx_ns=float(io["tx_ns"]), crypto_cycles_per_byte=float(crypto["cycles_per_byte"]),
            crypto_call_ns=float(crypto["call_ns"]),
            pcie_gbytes=float(nic["pcie"]["gbytes"]) if nic else 0.0,
            pcie_latency_ns=float(nic["pcie"]["latency_ns"]) if nic else 0.0,
            tlp_bytes=float(nic["pcie"]["tlp_bytes"]) if nic else 0.0,
            link_gbps=float(nic["link"]["gbps"]) if nic else 0.0,
            io_ns_per_byte=float(io.get("ns_per_byte", 0.0)),
            target=str(data["target"]) if kind == "nic" else "emu",
            sources={k: str(v.get("source", "")) for k, v in data.items() if isinstance(v, dict)})
    except (KeyError, TypeError, ValueError) as e:
        raise FloemError(f"{path}: a {kind} platform needs title, "
                         + ("target (a --nic), " if kind == "nic" else "")
                         + "[cores] count/ghz/cpi, "
                         "[caches] l1i/l1d/ll (and l2), [memory] ll_ns/dram_ns/atomic_ns/"
                         "transfer_ns (and l2_ns with l2), "
                         "[packet_io] rx_ns/tx_ns (and ns_per_byte), "
                         "[crypto] cycles_per_byte/call_ns"
                         + (", [pcie] gbytes/latency_ns/tlp_bytes and [link] gbps"
                            if kind == "nic" else "")
                         + f" ({type(e).__name__}: {e})") from None


def _read(name: str) -> dict[str, Any]:
    path = os.path.join(PLATFORM_DIR, name + ".toml")
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise FloemError(f"cannot read the platform file: {e}", path) from None


@dataclass(frozen=True)
class SegmentTime:
    """One segment's time per packet on its platform, by cost (ns, all its threads)."""

    work: float
    memory: float
    io: float
    atomics: float
    dma: float
    crypto: float

    @property
    def total(self) -> float:
        return self.work + self.memory + self.io + self.atomics + self.dma + self.crypto


@dataclass
class Prediction:
    """Capacities (packets/s) of each resource of one configuration on a NIC and a host,
    each segment's time per packet, and the latency at the offered load."""

    nic: str
    host: str
    capacities: dict[str, float]
    times: dict[str, SegmentTime]
    latency: Latency
    load_pps: float
    error: str | None = None

    @property
    def packets_per_s(self) -> float:
        return min(self.capacities.values(), default=math.inf) if self.error is None else 0.0

    @property
    def bottleneck(self) -> str:
        if self.error is not None or not self.capacities:
            return "-"
        return min(self.capacities, key=lambda k: self.capacities[k])


def predict(m: Measurement, nic: Platform, host: Platform,
            load_pps: float | None = None, latency_too: bool = True) -> Prediction:
    """What the configuration counted in ``m`` would do with ``nic`` beside ``host`` (each
    machine of a study of several with a NIC and a host of its own); latency at
    ``load_pps`` (default: `DEFAULT_LOAD` of the predicted throughput), unless not
    ``latency_too`` (it is then unknown: infinite)."""
    caps: dict[str, float] = {}
    times: dict[str, SegmentTime] = {}
    error = None
    for machine, record in m.machines.items():
        tag = f" ({machine})" if machine else ""
        for on_nic, p, side in ((True, nic, "NIC"), (False, host, "host")):
            segments = m.side(on_nic, machine)
            sharing = sum(s.working for s in segments.values() if s.atomics)
            share = 1 - 1 / sharing if sharing > 1 else 0.0
            for name, s in segments.items():
                times[name] = segment_time(s, p, nic, share, m.frame_bytes)
                caps[f"{side} cores ({name})"] = capacity(s.working, times[name].total)
            serial = lock_ns(segments.values(), p, share)
            if serial:
                caps[f"{side} locks{tag}"] = capacity(1, serial)
            if not p.crypto_cycles_per_byte and any(s.engine_bytes for s in segments.values()):
                error = error or f"{p.name} has no crypto engine"
        if (managed := managers_capacity(record, nic)) < math.inf:
            caps[f"NIC managers{tag}"] = managed
        if (pcie := pcie_capacity(m, machine, nic)) < math.inf:
            caps[f"PCIe{tag}"] = pcie
        used = sum(s.threads for s in m.side(True, machine).values()) + record.nic_managers
        if used > nic.cores:
            error = error or f"needs {used} NIC cores{tag}; {nic.name} has {nic.cores}"
    if m.frame_bytes:
        caps["link"] = link_capacity(m, nic)
    throughput = min(caps.values()) if error is None else 0.0
    load = load_pps if load_pps is not None else DEFAULT_LOAD * throughput
    nics, hosts = m.side(True), m.side(False)
    path = [Station(f"NIC cores ({n})", times[n].total, s.working)
            for n, s in nics.items() if s.received]
    path += [Station(f"host cores ({n})", times[n].total, s.working) for n, s in hosts.items()]
    path += [Station(f"NIC cores ({n})", times[n].total, s.working)
             for n, s in nics.items() if not s.received]
    path += [Station(k, 1e9 / v) for k, v in caps.items() if k.startswith("PCIe")]
    if m.frame_bytes:
        path.append(Station("link", 1e9 / caps["link"]))
    fixed = sum(r.queue_entries for r in m.machines.values()) * nic.pcie_latency_ns
    return Prediction(nic.name, host.name, caps, times,
                      latency(path, fixed, load) if error is None and latency_too
                      else Latency(math.inf, math.inf),
                      load, error)


def segment_time(s: SegmentCounts, p: Platform, nic: Platform, share: float,
                 frame_bytes: float = 0.0) -> SegmentTime:
    """``s``'s time per packet on ``p`` (all its threads) beside ``nic`` (whose PCIe its DMA
    crosses), when another core wrote a line an atomic operation touches last with
    probability ``share``; the frames it receives and sends are ``frame_bytes`` long."""
    copy = frame_bytes * p.io_ns_per_byte
    dma_ns = s.dma_waits * nic.pcie_latency_ns + (s.dma_bytes / nic.pcie_gbytes
                                                  if s.dma_bytes else 0.0)
    misses = s.misses.get(p.caches, Misses())
    beyond = misses.past_second
    return SegmentTime(
        work=s.instructions * p.ns_per_instruction,
        memory=((misses.first - beyond) * p.l2_ns + (beyond - misses.last) * p.ll_ns
                + misses.last * p.dram_ns),
        io=s.received * (p.rx_ns + copy) + s.sent * (p.tx_ns + copy),
        atomics=s.atomics * (p.atomic_ns + share * p.transfer_ns),
        dma=dma_ns,
        crypto=s.engine_bytes * p.crypto_cycles_per_byte / p.ghz + s.engine_calls * p.crypto_call_ns)


def lock_ns(segments: Iterable[SegmentCounts], p: Platform, share: float) -> float:
    """The time per packet ``segments`` (one side's) spend holding a lock on ``p``, when
    another core wrote a line an atomic operation touches last with probability ``share``."""
    return sum(s.serial_instructions * p.ns_per_instruction
               + s.serial_atomics * (p.atomic_ns + share * p.transfer_ns) for s in segments)


def pcie_capacity(m: Measurement, machine: str, nic: Platform) -> float:
    """Packets per second ``machine``'s PCIe carries."""
    return capacity(1, _pcie_bytes(m, machine, nic) / nic.pcie_gbytes)


def managers_capacity(record: Machine, nic: Platform) -> float:
    """Packets per second one machine's sync-layer managers move at most (their rounds' time
    per packet on their cores when each round moves a full batch; infinite without
    managers)."""
    if record.managers is None or not record.nic_managers:
        return math.inf
    counted = segment_time(record.managers, nic, nic, 0.0).total
    share = full_batches(record.managers.instructions, record.manager_rounds,
                         record.queue_entries, record.round_instructions, record.sync_batch)
    return capacity(record.nic_managers, counted * share)


def full_batches(instructions: float, rounds: float, entries: float, round_instructions: float,
                 batch: int) -> float:
    """The sync-layer managers' cost when every round moves a full batch, over their counted
    cost: at their bound entries wait for them, so each round finds a batch, where a counted
    run's rounds (qemu's threads taking turns) find a few entries each.

    A round costs a fixed part, what a round that moves nothing executes
    (``round_instructions``, counted apart), and a part per entry. Of the counted
    ``instructions`` in ``rounds`` that moved ``entries`` (each per packet), the fixed part
    of the rounds beyond the fewest that move those entries (``batch`` a round) is what full
    batches save (the same share of the counted time is taken). 1 when no idle round was
    counted."""
    if not (instructions and round_instructions and batch):
        return 1.0
    fewest = entries / batch
    beyond = max(0.0, rounds - fewest) * round_instructions
    return max(instructions - beyond, fewest * round_instructions) / instructions


def link_capacity(m: Measurement, nic: Platform) -> float:
    """Packets per second the link carries, in the busier direction."""
    wire_bits = (m.frame_bytes + WIRE_OVERHEAD_BYTES) * 8 * max(1.0, m.replies)
    return capacity(1, wire_bits / nic.link_gbps)


def _pcie_bytes(m: Measurement, machine: str, nic: Platform) -> float:
    """Bytes over ``machine``'s PCIe per packet: queue entries (a TLP each), elements' DMA,
    and the frames in and out when the host does the packet I/O."""
    record = m.machines[machine]
    segments = [s for s in m.segments.values() if s.machine == machine]
    elements = sum(s.dma_bytes + s.dma_waits * nic.tlp_bytes for s in segments)
    frames = m.frame_bytes * (1 + m.replies) if record.host_io else 0.0
    return record.queue_bytes + record.queue_entries * nic.tlp_bytes + elements + frames


def capacity(threads: int, ns_per_packet: float) -> float:
    """Packets per second of ``threads`` each taking ``ns_per_packet`` per packet."""
    return threads * 1e9 / ns_per_packet if ns_per_packet > 0 else math.inf
