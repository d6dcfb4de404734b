"""memcached's protocols over TCP for the tests: a memcached serving TCP, and a client of one
connection that sends requests and reads exactly the bytes answering them.

A reply on a stream has no end of its own (a noreply request has none; a text request's
answer is any number of lines). So after each request the client sends a marker whose
answer it knows and reads up to that answer: a text connection's marker is an ``mg`` of a
key nobody sets (answered ``EN`` with the key and an opaque token), a binary connection's a
NOOP of an opaque value of its own; what came before it answers the request. A connection
the server closes instead (memcached closes one after quit, or after a binary request whose
lengths are wrong) is reported as closed, and the client connects again.
"""
from __future__ import annotations

import contextlib
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples", "kvs"))
import protocol as kvp  # noqa: E402

#: A text request the server answers with `TEXT_MARK_REPLY` and nothing else.
TEXT_MARK = b"mg __floem_test_mark__ k O77\r\n"
TEXT_MARK_REPLY = b"EN k__floem_test_mark__ O77\r\n"
#: The opaque value of the NOOP marking the end of a binary request's answer.
NOOP_MARK = 0xF10E3E3D


def free_tcp_port() -> int:
    """A TCP port of 127.0.0.1 nobody uses now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connects(port: int) -> bool:
    """True when something accepts connections on ``port`` of 127.0.0.1."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


@contextlib.contextmanager
def memcached_tcp(*options: str) -> Iterator[int]:
    """A fresh memcached (one thread) serving both protocols on a free TCP port of
    127.0.0.1; ``options``: more of its options."""
    for _ in range(5):
        port = free_tcp_port()
        proc = subprocess.Popen(["memcached", "-p", str(port), "-U", "0", "-t", "1",
                                 "-l", "127.0.0.1", "-u", "root", *options],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 10
            while proc.poll() is None and time.monotonic() < deadline:
                if connects(port):
                    yield port
                    return
                time.sleep(0.02)
        finally:
            proc.kill()
            proc.wait()
    pytest.fail("memcached did not start")


def binary_message(datagram: bytes) -> bytes:
    """A binary request datagram (tests/kvs's) as a message on a stream: without the UDP
    frame header."""
    return datagram[kvp.FRAME_HEADER_SIZE:]


@dataclass
class StreamClient:
    """One connection to ``port`` of 127.0.0.1, text or binary by its first request."""

    port: int
    timeout: float = 10.0
    sock: socket.socket = field(init=False)

    def __post_init__(self) -> None:
        self.connect()

    def connect(self) -> None:
        """A new connection (after the server closed the last)."""
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pending = b""

    def close(self) -> None:
        """Close the connection."""
        self.sock.close()

    def _read_more(self) -> bool:
        """More bytes into ``pending``; False at the end of the stream."""
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            return False
        self.pending += data
        return bool(data)

    def ask_text_until(self, request: bytes, end: bytes) -> bytes:
        """Send text ``request`` alone (no mark behind it) and return its answer, which ends
        in ``end`` (or the stream does)."""
        self.sock.sendall(request)
        while not self.pending.endswith(end) and self._read_more():
            pass
        answer, self.pending = self.pending, b""
        return answer

    def ask_text(self, request: bytes) -> tuple[bytes, bool]:
        """Send text ``request`` and return the bytes answering it, and whether the server
        then closed the connection (the client connects again)."""
        self.sock.sendall(request + TEXT_MARK)
        while not self.pending.endswith(TEXT_MARK_REPLY):
            if not self._read_more():
                answer, self.pending = self.pending, b""
                self.connect()
                return answer, True
        answer = self.pending[:-len(TEXT_MARK_REPLY)]
        self.pending = b""
        return answer, False

    def ask_binary(self, message: bytes) -> tuple[list[bytes], bool]:
        """Send binary ``message`` and return the responses answering it (each whole), and
        whether the server then closed the connection (the client connects again)."""
        self.sock.sendall(message + kvp.HEADER.pack(kvp.MAGIC_REQUEST, kvp.NOOP, 0, 0, 0, 0, 0,
                                                    NOOP_MARK, 0))
        responses = []
        while True:
            while len(self.pending) < kvp.HEADER_SIZE or len(self.pending) < (
                    kvp.HEADER_SIZE + struct.unpack_from(">I", self.pending, 8)[0]):
                if not self._read_more():
                    assert not self.pending, f"a response cut short: {self.pending!r}"
                    self.connect()
                    return responses, True
            length = kvp.HEADER_SIZE + struct.unpack_from(">I", self.pending, 8)[0]
            response, self.pending = self.pending[:length], self.pending[length:]
            if response[1] == kvp.NOOP and struct.unpack_from(">I", response, 12)[0] == NOOP_MARK:
                assert not self.pending, f"bytes after the mark: {self.pending!r}"
                return responses, False
            responses.append(response)

    def without_cas(self, responses: list[bytes]) -> list[bytes]:
        """Binary responses with their CAS value zeroed."""
        return [r[:16] + bytes(8) + r[24:] for r in responses]
