"""The TCP transport in a program: examples/echo/stream_echo.py (length-prefixed messages,
each sent back on its connection) over ``--net tcp``.

Pipelined messages written in pieces of any size and read back slowly, answered in order;
``floem stats`` showing the connections while they are open. Slow: the echo on the emulated
NIC (the NIC's process terminates TCP) and a clean stop with connections open; 5,000
connections open at once over two threads, each served.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import signal
import socket
import struct
import subprocess
import tempfile
from collections.abc import Iterator

import pytest

from conftest import ROOT, floem, floem_command, wait_until

ECHO = os.path.join(ROOT, "examples", "echo", "stream_echo.py")


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def echo_server(*defines: str) -> Iterator[tuple[int, subprocess.Popen, list[str]]]:
    """The echo serving a free TCP port until the block ends: its port, process, and (after
    it stopped) its stderr lines."""
    port = free_tcp_port()
    lines: list[str] = []
    command = floem_command() + ["run", ECHO, "--net", "tcp", "--port", str(port), "--report",
                                 "--timeout", "600"]
    for d in defines:
        command += ["-D", d]
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, text=True,
                                start_new_session=True)
        try:
            def ready() -> bool:
                err.seek(0)
                return "floem: net tcp: ready" in err.read()
            wait_until(ready, "the echo is ready", proc, timeout=300)
            yield port, proc, lines
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            err.seek(0)
            lines += err.read().splitlines()


def message(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(min(65536, n - len(data)))
        assert chunk, f"the stream ended after {len(data)} of {n} bytes"
        data += chunk
    return data


def test_pipelined_pieces_read_slowly_are_echoed_in_order() -> None:
    """2,000 messages of 0 to 3,000 bytes (some longer than a frame buffer) written in random
    pieces without waiting, read back in small reads: the same bytes, in order; and floem
    stats shows the connection with its bytes."""
    rng = random.Random(9)
    stream = b"".join(message(rng.randbytes(rng.choice([0, 1, 40, 300, 3000])))
                      for _ in range(2000))
    with echo_server() as (port, proc, _):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        at = 0
        got = b""
        s.setblocking(False)
        while len(got) < len(stream):
            if at < len(stream):
                piece = rng.randint(1, 5000)
                with contextlib.suppress(BlockingIOError):
                    at += s.send(stream[at:at + piece])
            with contextlib.suppress(BlockingIOError):
                got += s.recv(rng.randint(1, 700))
        assert got == stream
        stats = floem("stats", "--once", "--json", str(proc.pid))
        connections = [p["connections"] for p in json.loads(stats.stdout)
                       if p["connections"] is not None]
        assert connections == [{"accepted": 1, "closed": 0, "bytes_in": len(stream),
                                "bytes_out": len(stream), "open": 1}], stats.stdout
        text = floem("stats", "--once", str(proc.pid)).stdout
        assert (f"connections: open 1, accepted 1, closed 0, bytes in {len(stream)}, "
                f"bytes out {len(stream)}") in text
        s.close()


@pytest.mark.slow
def test_echo_on_the_nic_and_a_clean_stop_with_connections_open() -> None:
    """The echo in a NIC segment: the NIC's process serves TCP (its counters say so); SIGINT
    with connections open stops it cleanly."""
    with echo_server("device=nic") as (port, proc, lines):
        socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(3)]
        for i, s in enumerate(socks):
            s.sendall(message(b"nic %d" % i) * 3)
        for i, s in enumerate(socks):
            assert read_exactly(s, 3 * (4 + 5)) == message(b"nic %d" % i) * 3
        stats = json.loads(floem("stats", "--once", "--json", str(proc.pid)).stdout)
        assert [p["process"] for p in stats if p["connections"]] == ["nic"]
    assert proc.returncode == 0, "\n".join(lines)
    assert "floem: net tcp: queues 1, rx 9, tx 9," in "\n".join(lines)


@pytest.mark.slow
def test_five_thousand_connections_over_two_threads() -> None:
    """5,000 connections open at once, each sending two messages: every one answered on its
    own connection; both threads took connections; all counted open, then closed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 12000)), hard))
    try:
        with echo_server("cores=2") as (port, proc, lines):
            socks = [socket.create_connection(("127.0.0.1", port), timeout=60)
                     for _ in range(5000)]
            for i, s in enumerate(socks):
                s.sendall(message(b"%d" % i) + message(b"again"))
            for i, s in enumerate(socks):
                expected = message(b"%d" % i) + message(b"again")
                assert read_exactly(s, len(expected)) == expected
            stats = json.loads(floem("stats", "--once", "--json", str(proc.pid)).stdout)
            assert [p["connections"]["open"] for p in stats if p["connections"]] == [5000]
            for s in socks:
                s.close()
            wait_until(lambda: [p["connections"]["closed"] for p in json.loads(
                floem("stats", "--once", "--json", str(proc.pid)).stdout)
                if p["connections"]] == [5000], "every connection closed", proc)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    report = "\n".join(lines)
    assert proc.returncode == 0, report
    per_queue = next(line for line in lines if "accepted by queue" in line).split(":")[-1]
    assert all(int(n) > 1000 for n in per_queue.split()), report
