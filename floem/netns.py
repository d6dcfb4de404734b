"""A veth pair between two network namespaces: a network on one machine for ``--net xdp``.

The server end is an interface with an IPv4 address in one namespace (the program runs
there, ``floem run ... --net xdp --iface`` the interface), the client end another in a
second namespace; a client run in the second reaches the server through the kernel's
network stack, as from another host. Transmit checksum offload is off on the client end,
so the frames the server's AF_XDP sockets read carry whole UDP checksums (a veth leaves
them to the receiver otherwise). Needs root and ``ip`` and ``ethtool`` (iproute2, ethtool).

    with veth_pair("kvs") as net:
        subprocess.run(net.in_server(["floem", "run", "kvs.py", "--net", "xdp",
                                      "--iface", net.server_if, ...]))
        subprocess.run(net.in_client(["memcaslap", "-s", f"{net.server_ip}:11211", "-U"]))
"""
from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from floem.errors import FloemError

_pairs = itertools.count()


@dataclass(frozen=True)
class VethPair:
    """Namespaces ``server_ns`` and ``client_ns``, joined by interfaces ``server_if`` (with
    address ``server_ip``) and ``client_if`` (``client_ip``), both in one /24."""

    server_ns: str
    client_ns: str
    server_if: str
    client_if: str
    server_ip: str = "192.168.77.1"
    client_ip: str = "192.168.77.2"

    def in_server(self, command: Sequence[str]) -> list[str]:
        """``command`` run in the server's namespace."""
        return ["ip", "netns", "exec", self.server_ns, *command]

    def in_client(self, command: Sequence[str]) -> list[str]:
        """``command`` run in the client's namespace."""
        return ["ip", "netns", "exec", self.client_ns, *command]


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise FloemError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")


@contextlib.contextmanager
def veth_pair(tag: str) -> Iterator[VethPair]:
    """Create a `VethPair` named after ``tag`` and this process (so that runs beside each
    other never meet), up and addressed; removed when the block ends. A `FloemError` says
    why when the machine refuses (not root, no iproute2, no veth or namespaces)."""
    for tool in ("ip", "ethtool"):
        if shutil.which(tool) is None:
            raise FloemError(f"a veth pair needs {tool} (apt-get install "
                             f"{'iproute2' if tool == 'ip' else 'ethtool'})")
    if os.geteuid() != 0:
        raise FloemError("a veth pair between network namespaces needs root")
    n = next(_pairs)
    ident = f"{os.getpid()}{n}"
    net = VethPair(server_ns=f"floem-{tag}-{ident}-s", client_ns=f"floem-{tag}-{ident}-c",
                   server_if=f"fv{ident}s"[-15:], client_if=f"fv{ident}c"[-15:])
    made: list[str] = []
    try:
        for ns in (net.server_ns, net.client_ns):
            _ip("netns", "add", ns)
            made.append(ns)
        _ip("link", "add", net.server_if, "netns", net.server_ns, "type", "veth",
            "peer", "name", net.client_if, "netns", net.client_ns)
        for ns, dev, addr in ((net.server_ns, net.server_if, net.server_ip),
                              (net.client_ns, net.client_if, net.client_ip)):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        off = subprocess.run(net.in_client(["ethtool", "-K", net.client_if, "tx", "off"]),
                             capture_output=True, text=True, timeout=30)
        if off.returncode != 0:
            raise FloemError(f"ethtool -K {net.client_if} tx off: {off.stderr.strip()}")
        yield net
    finally:
        for ns in made:         # deleting a namespace deletes its end of the pair, and so both
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
