"""A Storm topology file (TOML): how many executors of each kind, and which server runs which.

    spouts = 4                 # executors of each kind; there is always one total ranker
    counters = 4
    rankers = 4

    [[server]]
    name = "a"
    port = 7101                # optional: its UDP port (--net udp: on 127.0.0.1; --net dpdk:
                               # on address); without one, run.py picks a free one each run
    address = "10.70.0.1"      # --net dpdk: its IPv4 address in its own network namespace
    executors = ["spout0", "spout1", "counter0", "ranker0"]

Executors are named ``spout<i>``, ``counter<i>``, ``ranker<i>`` and ``total``; each runs on
exactly one server. Global executor ids (what a tuple's ``task`` and ``from`` hold): spouts
0..S-1, counters S..S+C-1, rankers S+C..S+C+R-1, the total ranker S+C+R. A server's worker
index of an executor is its position in the server's ``executors`` list.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import socket
import tomllib
from contextlib import ExitStack
from dataclasses import dataclass

KINDS = ("spouts", "counters", "rankers")


class TopologyError(Exception):
    """A topology file that cannot be run, with the reason."""


@dataclass(frozen=True)
class Server:
    """One server: where it listens and the executors it runs, in worker order."""

    name: str
    index: int
    port: int                   # 0: none in the file (run.py picks one for the run)
    address: str
    executors: tuple[str, ...]

    @property
    def mac(self) -> str:
        """Its MAC address with --net dpdk (the launcher gives its veth this one)."""
        return f"02:53:54:00:00:{self.index + 1:02x}"


@dataclass(frozen=True)
class Topology:
    """A parsed, checked topology."""

    path: str
    spouts: int
    counters: int
    rankers: int
    servers: tuple[Server, ...]

    def executor_names(self) -> list[str]:
        """Every executor's name, by global id."""
        return ([f"spout{i}" for i in range(self.spouts)] +
                [f"counter{i}" for i in range(self.counters)] +
                [f"ranker{i}" for i in range(self.rankers)] + ["total"])

    def server(self, name: str) -> Server:
        """The server called ``name``."""
        for s in self.servers:
            if s.name == name:
                return s
        raise TopologyError(f"{self.path}: no server named {name!r} "
                            f"(servers: {', '.join(s.name for s in self.servers)})")

    def placement(self) -> list[tuple[int, int]]:
        """(server index, worker index) of every executor, by global id."""
        where = {e: (s.index, w) for s in self.servers for w, e in enumerate(s.executors)}
        return [where[e] for e in self.executor_names()]

    def worker_arguments(self, server: Server) -> list[str]:
        """The worker program's arguments that describe the topology to ``server``."""
        return ["--executors", ",".join(server.executors), "--spouts", str(self.spouts),
                "--counters", str(self.counters), "--rankers", str(self.rankers)]

    def total_server(self) -> Server:
        """The server running the total ranker (whose output is the result)."""
        return next(s for s in self.servers if "total" in s.executors)

    def with_free_ports(self) -> Topology:
        """The topology with a UDP port free on 127.0.0.1 now for every server without one."""
        with ExitStack() as stack:
            free = []
            for _ in range(sum(s.port == 0 for s in self.servers)):
                sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
                sock.bind(("127.0.0.1", 0))
                free.append(sock.getsockname()[1])
        chosen = iter(free)
        return dataclasses.replace(self, servers=tuple(
            dataclasses.replace(s, port=s.port or next(chosen)) for s in self.servers))

    def ports(self) -> str:
        """STORM_PORTS: every server's UDP port, by index (transport.h)."""
        return ",".join(str(s.port) for s in self.servers)


def load(path: str) -> Topology:
    """Read and check the topology file at ``path``."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise TopologyError(f"{path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise TopologyError(f"{path}: {e}") from None
    counts = {}
    for kind in KINDS:
        value = data.get(kind)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 1000:
            raise TopologyError(f"{path}: '{kind}' must be a number of executors from 1 to 1000")
        counts[kind] = value
    entries = data.get("server")
    if not isinstance(entries, list) or not entries:
        raise TopologyError(f"{path}: no [[server]] tables")
    if len(entries) > 64:
        raise TopologyError(f"{path}: at most 64 servers")
    servers = [_server(path, i, entry) for i, entry in enumerate(entries)]
    topology = Topology(path, counts["spouts"], counts["counters"], counts["rankers"],
                        tuple(servers))
    _check_placement(topology)
    return topology


def _server(path: str, index: int, entry: object) -> Server:
    if not isinstance(entry, dict):
        raise TopologyError(f"{path}: server {index + 1} is not a table")
    name = entry.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        raise TopologyError(f"{path}: server {index + 1} needs a name (letters, digits, _)")
    port = entry.get("port", 0)
    if "port" in entry and (not isinstance(port, int) or isinstance(port, bool)
                            or not 1 <= port <= 65535):
        raise TopologyError(f"{path}: server {name!r}: 'port' must be a UDP port")
    address = entry.get("address", f"10.70.0.{index + 1}")
    try:
        ipaddress.IPv4Address(address)
    except ValueError:
        raise TopologyError(f"{path}: server {name!r}: 'address' {address!r} is not an "
                            "IPv4 address") from None
    executors = entry.get("executors")
    if not isinstance(executors, list) or not all(isinstance(e, str) for e in executors):
        raise TopologyError(f"{path}: server {name!r}: 'executors' must be a list of names")
    return Server(name, index, port, address, tuple(executors))


def _check_placement(t: Topology) -> None:
    known = set(t.executor_names())
    seen: dict[str, str] = {}
    for s in t.servers:
        for e in s.executors:
            if e not in known:
                raise TopologyError(f"{t.path}: server {s.name!r} runs {e!r}, which is not an "
                                    f"executor of this topology ({t.spouts} spouts, "
                                    f"{t.counters} counters, {t.rankers} rankers, total)")
            if e in seen:
                raise TopologyError(f"{t.path}: {e!r} runs on both {seen[e]!r} and {s.name!r}")
            seen[e] = s.name
    missing = [e for e in t.executor_names() if e not in seen]
    if missing:
        raise TopologyError(f"{t.path}: no server runs {', '.join(missing)}")
    names = [s.name for s in t.servers]
    if len(set(names)) != len(names):
        raise TopologyError(f"{t.path}: two servers share a name")
    ports = [s.port for s in t.servers if s.port]
    if len(set(ports)) != len(ports):
        raise TopologyError(f"{t.path}: two servers share a port (they all listen on "
                            "127.0.0.1 with --net udp)")
