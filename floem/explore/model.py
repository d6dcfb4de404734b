"""The NIC performance model: what a measured configuration would do on a real platform.

A platform is a data file, ``floem/platforms/<name>.toml``: its NIC cores (count,
clock, cycles per instruction), crypto engines, DMA over PCIe and link, each
figure with its published source. From a `Measurement` the model gives each
resource's capacity in packets per second:

* each NIC segment: its threads x clock / (instructions per packet x CPI);
* the NIC's locks: clock / (instructions executed holding a lock per packet x CPI),
  since no two cores do that work at once;
* each engine: its throughput over the bytes handed to it per packet, plus a fixed
  cost per call spread over its engines;
* each host segment: its threads / (measured host CPU time per packet);
* PCIe: bandwidth / bytes per packet (the DMA engine's counters, plus the frames
  themselves when the host sends and receives them through a plain NIC);
* the link: line rate / bits per packet (frames plus preamble, delimiter and
  inter-frame gap), in the busier direction.

The least of them is the predicted throughput and its resource the bottleneck.
"""
from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass

from floem.errors import FloemError
from floem.explore.measure import Measurement

PLATFORM_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "platforms")
#: Ethernet's per-frame overhead on the wire: preamble and delimiter (8), inter-frame gap (12)
#: and frame check sequence (4), which captures do not hold.
WIRE_OVERHEAD_BYTES = 24


@dataclass(frozen=True)
class ModelPlatform:
    """A platform's figures, as its data file gives them."""

    name: str
    title: str
    build: str
    cores: int
    ghz: float
    cpi: float
    crypto_gbps: float
    crypto_engines: int
    crypto_call_ns: float
    dma_gbps: float
    dma_latency_ns: float
    link_gbps: float
    sources: dict[str, str]

    @property
    def ns_per_instruction(self) -> float:
        return self.cpi / self.ghz


def model_platforms() -> list[str]:
    """The names of the platforms with a data file."""
    return sorted(f[:-5] for f in os.listdir(PLATFORM_DIR) if f.endswith(".toml"))


def load_platform(name: str) -> ModelPlatform:
    """The platform ``name`` (``floem/platforms/<name>.toml``)."""
    if name not in model_platforms():
        raise FloemError(f"no performance model of platform {name!r}: the models are "
                         f"{', '.join(model_platforms())}")
    path = os.path.join(PLATFORM_DIR, name + ".toml")
    with open(path, "rb") as f:
        data = tomllib.load(f)
    try:
        cores, crypto, dma, link = (data[k] for k in ("cores", "crypto", "dma", "link"))
        return ModelPlatform(
            name=name, title=data["title"], build=data["build"], cores=int(cores["count"]),
            ghz=float(cores["ghz"]), cpi=float(cores["cpi"]),
            crypto_gbps=float(crypto["aes_gbps"]), crypto_engines=int(crypto["engines"]),
            crypto_call_ns=float(crypto["call_ns"]), dma_gbps=float(dma["gbps"]),
            dma_latency_ns=float(dma["latency_ns"]), link_gbps=float(link["gbps"]),
            sources={k: str(v.get("source", "")) for k, v in data.items() if isinstance(v, dict)})
    except (KeyError, TypeError, ValueError) as e:
        raise FloemError(f"{path}: a platform needs title, build, [cores] count/ghz/cpi, "
                         f"[crypto] aes_gbps/engines/call_ns, [dma] gbps/latency_ns and "
                         f"[link] gbps ({type(e).__name__}: {e})") from None


@dataclass
class Prediction:
    """Capacities (packets/s) of each resource of one configuration on one platform."""

    platform: str
    capacities: dict[str, float]
    nic_us: float                       # NIC core time per packet, all NIC segments
    error: str | None = None

    @property
    def packets_per_s(self) -> float:
        return min(self.capacities.values(), default=math.inf) if self.error is None else 0.0

    @property
    def bottleneck(self) -> str:
        if self.error is not None or not self.capacities:
            return "-"
        return min(self.capacities, key=lambda k: self.capacities[k])


def predict(m: Measurement, p: ModelPlatform) -> Prediction:
    """What the configuration measured in ``m`` would do on platform ``p``."""
    caps: dict[str, float] = {}
    ns = p.ns_per_instruction
    for segment, instructions in m.nic_instructions.items():
        caps[f"NIC cores ({segment})"] = _rate(m.nic_threads[segment], instructions * ns)
    if m.serial_instructions:
        caps["NIC locks"] = _rate(1, m.serial_instructions * ns)
    for segment, host_ns in m.host_ns.items():
        caps[f"host CPU ({segment})"] = _rate(m.host_threads[segment], host_ns)
    engine_ns = _crypto_ns(m, p)
    if engine_ns:
        caps["crypto engines"] = _rate(1, engine_ns)
    pcie_bytes = m.dma_bytes + (m.frame_bytes * (1 + m.replies) if m.host_io else 0.0)
    if pcie_bytes:
        caps["PCIe"] = _rate(1, pcie_bytes / p.dma_gbps)
    wire_bits = (m.frame_bytes + WIRE_OVERHEAD_BYTES) * 8 * max(1.0, m.replies)
    caps["link"] = _rate(1, wire_bits / p.link_gbps)
    used = sum(m.nic_threads.values()) + m.nic_managers
    error = None
    if used > p.cores:
        error = f"needs {used} NIC cores; {p.name} has {p.cores}"
    elif m.engine_bytes.get("crypto") and not p.crypto_gbps:
        error = f"{p.name} has no crypto engine"
    return Prediction(p.name, caps, sum(m.nic_instructions.values()) * ns / 1e3, error)


def _crypto_ns(m: Measurement, p: ModelPlatform) -> float:
    """Engine time per packet: the bytes at the engines' throughput, the calls' fixed cost."""
    size = m.engine_bytes.get("crypto", 0.0)
    if not size or not p.crypto_gbps:
        return 0.0
    return size * 8 / p.crypto_gbps + m.engine_calls.get("crypto", 0.0) * p.crypto_call_ns / \
        max(p.crypto_engines, 1)


def _rate(threads: int, ns_per_packet: float) -> float:
    """Packets per second of ``threads`` each taking ``ns_per_packet`` per packet."""
    return threads * 1e9 / ns_per_packet if ns_per_packet > 0 else math.inf
