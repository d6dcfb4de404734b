"""Network namespaces for ``run.py --net dpdk``: one per server, joined by veth pairs to a
bridge in one more namespace, all made for the run and removed after it.

Each server's namespace has one interface, ``veth0``, with the server's MAC address
(topology.Server.mac) and no IP address: the kernel of the namespace neither answers nor
sends anything on it, and the server's DPDK ``af_packet`` port owns it. Its peer sits in
the switch namespace, on bridge ``br0``. Traffic never leaves these namespaces.
"""
from __future__ import annotations

import os
import shlex
import subprocess

from topology import Server, Topology


class NetworkError(Exception):
    """The namespaces could not be made (not root, no ``ip``...)."""


def eal_arguments(server: Server) -> str:
    """DPDK EAL arguments of ``server``: no hugepages or PCI, its af_packet port on veth0."""
    return (f"--no-huge --no-pci -m 256 --file-prefix=storm-{server.name} "
            "--vdev=net_af_packet0,iface=veth0,qpairs=1")


class Network:
    """The namespaces of one run (a context manager); ``wrap`` runs a command in a server's."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.prefix = f"storm{os.getpid()}"
        self.switch = f"{self.prefix}-sw"
        self.made: list[str] = []

    def namespace(self, server: Server) -> str:
        """The namespace of ``server``."""
        return f"{self.prefix}-{server.name}"

    def wrap(self, server: Server, command: list[str]) -> list[str]:
        """``command`` run in ``server``'s namespace, with a private /run (DPDK's runtime
        directory is made there and goes with it)."""
        inner = "mount -t tmpfs tmpfs /run && exec " + shlex.join(command)
        return ["ip", "netns", "exec", self.namespace(server), "unshare", "-m", "sh", "-c", inner]

    def _ip(self, *args: str, netns: str | None = None) -> None:
        command = (["ip", "netns", "exec", netns] if netns else []) + ["ip", *args]
        try:
            result = subprocess.run(command, capture_output=True, text=True)
        except FileNotFoundError:
            raise NetworkError("--net dpdk needs the `ip` command (iproute2)") from None
        if result.returncode != 0:
            raise NetworkError(f"`{shlex.join(command)}` failed: {result.stderr.strip()}"
                               + ("" if os.geteuid() == 0 else " (--net dpdk needs root)"))

    def __enter__(self) -> Network:
        try:
            for name in [self.switch] + [self.namespace(s) for s in self.topology.servers]:
                self._ip("netns", "add", name)
                self.made.append(name)
                self._ip("link", "set", "lo", "up", netns=name)
            self._ip("link", "add", "br0", "type", "bridge", netns=self.switch)
            self._ip("link", "set", "br0", "up", netns=self.switch)
            for s in self.topology.servers:
                ns, port = self.namespace(s), f"p{s.index}"
                self._ip("link", "add", "veth0", "netns", ns, "type", "veth", "peer", "name", port,
                         "netns", self.switch)
                self._ip("link", "set", "veth0", "address", s.mac, netns=ns)
                self._ip("link", "set", "veth0", "up", netns=ns)
                self._ip("link", "set", port, "master", "br0", "up", netns=self.switch)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for name in reversed(self.made):          # deleting a namespace deletes its veths
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)
        self.made.clear()
