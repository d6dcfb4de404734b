"""Running the network functions of examples/nf for tests: pcap replays and live UDP servers.

`load` is examples/nf/load.py (imported as ``nf_load``: examples/kvs/load.py is ``load``).
`replay` runs a function over a capture and returns what it sent; `serving` runs one in
the background on a free UDP port. Both run with ``--report``; `Report` reads the lines.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import dpkt

from conftest import ROOT, floem, floem_command
from test_echo import swapped
from test_net import free_udp_port

NF = os.path.join(ROOT, "examples", "nf")


def _import_load() -> ModuleType:
    """examples/nf/load.py as module ``nf_load``."""
    spec = importlib.util.spec_from_file_location("nf_load", os.path.join(NF, "load.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["nf_load"] = module
    spec.loader.exec_module(module)
    return module


load = sys.modules.get("nf_load") or _import_load()
#: Seconds a replay runs: the NIC under qemu takes longer to start.
DURATION = {"emu": "0.5", "liquidio": "1.5"}


def app(kind: str) -> str:
    """The app file of network function ``kind``."""
    return os.path.join(NF, f"{kind}.py")


def line_of(kind: str, text: str) -> int:
    """The number of the first line of ``kind``'s app file holding ``text``."""
    with open(app(kind)) as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


def defines(*values: str) -> list[str]:
    """``-D`` options for ``name=value`` strings."""
    return [arg for v in values for arg in ("-D", v)]


@dataclass
class Report:
    """The ``--report`` lines a run printed on stderr."""

    stderr: str

    def __call__(self, what: str) -> dict[str, int]:
        """The numbers of the line ``floem: WHAT...: name N, name N, ...``, e.g. ``state drops``
        or ``engine crypto``, wherever it starts in a line; {} when there is no such line."""
        marker = f"floem: {what}"
        # A line may start in the middle of another process's (the processes share stderr).
        line = next((ln[ln.index(marker):] for ln in self.stderr.splitlines() if marker in ln),
                    None)
        if line is None:
            return {}
        return {name: int(n) for name, n in re.findall(r"(\w[\w -]*?) (\d+)(?: ns)?(?=, |$)",
                                                        line.split(": ", 2)[2])}

    def thread_packets(self, segment: str) -> list[int]:
        """Packets each thread of ``segment`` handled."""
        return [int(n) for n in re.findall(rf"^floem: thread {segment}\[\d+\] .*?packets (\d+),",
                                           self.stderr, re.M)]


def replay(kind: str, frames: Sequence[bytes], tmp_path: Path, *values: str,
           nic: str = "emu", env: dict[str, str] | None = None, options: Sequence[str] = (),
           duration: str | None = None) -> tuple[Report, list[bytes]]:
    """Run ``kind`` with ``-D values`` (and build ``options``) over a capture of ``frames``
    for ``duration`` seconds (default `DURATION`); what it sent, in order."""
    src, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    load.write_pcap(src, frames)
    result = floem("run", app(kind), *defines(*values), *options, "--nic", nic, "--net", "pcap",
                   "--pcap-in", str(src), "--pcap-out", str(out),
                   "--duration", duration or DURATION[nic], "--report", env=env)
    assert result.returncode == 0, result.stderr
    with open(out, "rb") as f:
        return Report(result.stderr), [bytes(data) for _, data in dpkt.pcap.Reader(f)]


def reply_frame(request: bytes, payload: bytes) -> bytes:
    """What a function answers ``request`` (a frame without IPv4 options) with when its reply
    payload is ``payload``: addresses swapped, UDP checksum 0 ("none")."""
    return swapped(request[:40] + b"\0\0" + payload)


@dataclass
class Served:
    """A function serving ``port``; after it stopped, its report."""

    port: int
    report: Report | None = None


@contextlib.contextmanager
def serving(kind: str, *values: str, start_timeout: float = 120) -> Iterator[Served]:
    """``floem run KIND.py -D values --report`` on a free UDP port until the block ends."""
    served = Served(free_udp_port())
    command = floem_command() + ["run", app(kind), *defines(*values), "--port", str(served.port),
                                 "--report", "--timeout", "300"]
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, text=True)
        try:
            deadline = time.monotonic() + start_timeout
            while not load.probe(kind, f"127.0.0.1:{served.port}"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    err.seek(0)
                    raise AssertionError(f"{kind} did not start: {err.read()}")
                time.sleep(0.05)
            yield served
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
            err.seek(0)
            served.report = Report(err.read())
    assert proc.returncode == 0, served.report.stderr
