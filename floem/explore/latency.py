"""Latency at an offered load: a packet's path through the resources, each a queue.

The model's throughput side gives each resource a deterministic time per packet (its
service time) and a number of servers (a segment's threads). Here packets arrive as a
Poisson stream at the offered load and go through the resources of their path in
order, each a first-come-first-served queue with deterministic service (an M/D/1 queue
per server; packets pick a server of a several-threaded segment at random, as receive
side scaling spreads flows), plus fixed delays (a DMA round trip over PCIe, the wire).
The queues are simulated, not approximated: a fixed number of packets with a fixed
seed, so the same inputs give the same percentiles on any machine.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Packets simulated per prediction, and the seed of their arrivals.
PACKETS = 100_000
SEED = 1


@dataclass(frozen=True)
class Station:
    """One resource on a packet's path: ``service_ns`` per packet on each of ``servers``."""

    name: str
    service_ns: float
    servers: int = 1

    @property
    def capacity(self) -> float:
        """Packets per second the station can take."""
        return self.servers * 1e9 / self.service_ns if self.service_ns > 0 else math.inf


@dataclass(frozen=True)
class Latency:
    """Percentiles of the time from a packet's arrival to its departure, in µs (inf when
    the load exceeds a station's capacity)."""

    p50_us: float
    p99_us: float


def latency(path: list[Station], fixed_ns: float, load_pps: float) -> Latency:
    """The sojourn percentiles of packets arriving at ``load_pps`` through ``path`` in order,
    plus ``fixed_ns`` of delay that no packet queues for."""
    if load_pps <= 0 or any(load_pps >= s.capacity for s in path):
        return Latency(math.inf, math.inf)
    rng = np.random.default_rng(SEED)
    arrivals = np.cumsum(rng.exponential(1e9 / load_pps, PACKETS))
    times = arrivals
    for station in path:
        times = _through(times, station, rng)
    sojourn = times - arrivals + fixed_ns
    p50, p99 = np.percentile(sojourn, [50, 99])
    return Latency(float(p50) / 1e3, float(p99) / 1e3)


def _through(arrivals: np.ndarray, station: Station, rng: np.random.Generator) -> np.ndarray:
    """Departure times from ``station`` of packets arriving at ``arrivals`` (any order)."""
    if station.service_ns <= 0:
        return arrivals
    order = np.argsort(arrivals, kind="stable")
    ordered = arrivals[order]
    lanes = rng.integers(station.servers, size=len(ordered))
    done = np.empty_like(ordered)
    for lane in range(station.servers):
        picked = np.nonzero(lanes == lane)[0]
        # FIFO with service D: d[k] = max(a[k], d[k-1]) + D, i.e. d[k] - (k+1)D is the
        # running maximum of a[k] - kD.
        k = np.arange(len(picked))
        done[picked] = (np.maximum.accumulate(ordered[picked] - k * station.service_ns)
                        + (k + 1) * station.service_ns)
    departures = np.empty_like(done)
    departures[order] = done
    return departures
