"""Running the key-value store (examples/kvs/kvs.py) for tests, and the requests they send it.

`kvs_server` starts ``floem run`` of a design in the background on a free UDP port and
stops it with SIGINT (its ``--report`` counters are then in ``stderr``); `oracle_requests`
makes a randomized sequence of memcached binary requests, valid and invalid;
`malformed_datagrams` makes datagrams the store must drop, each with its drop reason.
"""
from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Iterator

from conftest import ROOT, floem_command

sys.path.insert(0, os.path.join(ROOT, "examples", "kvs"))
import load  # noqa: E402
import protocol as kvp  # noqa: E402

KVS = os.path.join(ROOT, "examples", "kvs", "kvs.py")
#: The largest datagram the store receives (2048-byte frame buffers, 42 bytes of headers).
DATAGRAM_MAX = 2006


def free_udp_port() -> int:
    """A UDP port of 127.0.0.1 nobody uses now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A running store: its port, and (after it stopped) what it printed on stderr."""

    port: int
    proc: subprocess.Popen
    stderr: str = ""

    def report(self, what: str) -> dict[str, int]:
        """The numbers of the report line ``floem: WHAT: name N, name N ns, ...``, e.g. for
        ``what="state drops"`` or ``"cache kv"``."""
        line = next(ln for ln in self.stderr.splitlines() if ln.startswith(f"floem: {what}"))
        tail = line.split(": ", 2)[2]
        return {name: int(n) for name, n in re.findall(r"(\w[\w -]*?) (\d+)(?: ns)?(?=, |$)", tail)}


def answers(port: int, timeout: float) -> bool:
    """True once the store (or a memcached) answers a NOOP on ``port`` of 127.0.0.1."""
    return load.answers_noop(load.Server("127.0.0.1", port), timeout)


@contextlib.contextmanager
def kvs_server(*defines: str, nic: str = "emu", start_timeout: float = 300,
               env: dict[str, str] | None = None) -> Iterator[Server]:
    """``floem run kvs.py -D ...`` serving a free port until the block ends (``env``: more
    environment variables, e.g. ``FLOEM_FAULTS``)."""
    port = free_udp_port()
    command = floem_command() + ["run", KVS, "--port", str(port), "--nic", nic, "--report",
                                 "--timeout", "900"]
    for d in defines:
        command += ["-D", d]
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, text=True,
                                start_new_session=True, env={**os.environ, **(env or {})})
        server = Server(port, proc)
        try:
            deadline = time.monotonic() + start_timeout
            while not answers(port, 0.2):
                if proc.poll() is not None or time.monotonic() > deadline:
                    err.seek(0)
                    raise AssertionError(f"the store did not start: {' '.join(command)}\n"
                                         + err.read())
            yield server
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            err.seek(0)
            server.stderr = err.read()


@dataclass
class Client:
    """One request at a time to one server; every response reassembled."""

    port: int
    timeout: float = 5.0
    sock: socket.socket = field(init=False)

    def __post_init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(self.timeout)

    def ask(self, datagram: bytes) -> kvp.Response:
        """Send ``datagram`` and wait for the whole response to it."""
        rid = kvp.FRAME_HEADER.unpack_from(datagram)[0]
        self.sock.sendto(datagram, ("127.0.0.1", self.port))
        assembler = kvp.Reassembler()
        while True:
            data, _ = self.sock.recvfrom(65536)
            if kvp.parse_frame_header(data).request_id != rid:
                continue                    # a late answer to something else
            response = assembler.feed(data)
            if response is not None:
                return response

    def send(self, datagram: bytes) -> None:
        """Send without waiting for an answer."""
        self.sock.sendto(datagram, ("127.0.0.1", self.port))

    def silent(self, wait: float = 0.05) -> bool:
        """True when nothing arrives within ``wait`` seconds."""
        self.sock.settimeout(wait)
        try:
            self.sock.recvfrom(65536)
            return False
        except socket.timeout:
            return True
        finally:
            self.sock.settimeout(self.timeout)

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()


# -- the requests ------------------------------------------------------------

def _key(rng: random.Random, length: int) -> bytes:
    return bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789-_:") for _ in range(length))


def _expiration(rng: random.Random) -> int:
    """Expiry times whose outcome does not depend on when the request arrives."""
    now = int(time.time())
    return rng.choice([0] * 12 + [1000, 2592000, now + 3600,     # live
                                  2592001, now - 100])           # expired at once


INVALID_SHAPES = [
    dict(opcode=kvp.GET, key=b""), dict(opcode=kvp.GETK, key=b""),
    dict(opcode=kvp.GET, key=b"k" * 251), dict(opcode=kvp.GET, key=b"key", extras=b"1234"),
    dict(opcode=kvp.GET, key=b"key", value=b"a value"),
    dict(opcode=kvp.SET, key=b"key", value=b"v"), dict(opcode=kvp.SET, key=b"key", extras=b"1234"),
    dict(opcode=kvp.SET, key=b"", extras=bytes(8), value=b"v"),
    dict(opcode=kvp.SET, key=b"k" * 251, extras=bytes(8), value=b"v"),
    dict(opcode=kvp.DELETE, key=b"key", extras=b"1234"), dict(opcode=kvp.DELETE, key=b""),
    dict(opcode=kvp.NOOP, key=b"k"), dict(opcode=kvp.NOOP, extras=b"1234"),
]
#: Opcodes memcached 1.6 does not know (it answers them when they carry no body).
UNKNOWN_OPCODES = [0x30, 0x45, 0x7f, 0xa0, 0xff]


def oracle_requests(seed: int, count: int, keys: int = 40) -> list[bytes]:
    """``count`` request datagrams: GET, GETK, SET, DELETE and NOOP over a small key set
    (hits, misses, overwrites) with key lengths 1..250 and values from empty to the largest
    a datagram carries, flags, expiry times, unknown opcodes and invalid arguments."""
    rng = random.Random(seed)
    pool = [_key(rng, rng.choice([1, 2, 8, 32, 32, 100, 249, 250])) for _ in range(keys)]
    out = []
    for rid in range(1, count + 1):
        key = rng.choice(pool) if rng.random() < 0.9 else _key(rng, rng.randint(1, 250))
        opaque = rng.getrandbits(32)
        kind = rng.choices(["get", "getk", "set", "delete", "noop", "unknown", "invalid"],
                           [30, 15, 30, 10, 5, 3, 7])[0]
        if kind in ("get", "getk"):
            out.append(kvp.encode_request(rid, kvp.GET if kind == "get" else kvp.GETK, key=key,
                                          opaque=opaque))
        elif kind == "set":
            room = DATAGRAM_MAX - kvp.FRAME_HEADER_SIZE - kvp.HEADER_SIZE - 8 - len(key)
            length = rng.choice([0, 1, 10, 64, 64, 500, 1000, rng.randint(0, room), room])
            out.append(kvp.encode_set(rid, key, rng.randbytes(length), flags=rng.getrandbits(32),
                                      expiration=_expiration(rng), opaque=opaque))
        elif kind == "delete":
            out.append(kvp.encode_request(rid, kvp.DELETE, key=key, opaque=opaque))
        elif kind == "noop":
            out.append(kvp.encode_noop(rid, opaque=opaque))
        elif kind == "unknown":
            out.append(kvp.encode_request(rid, rng.choice(UNKNOWN_OPCODES), opaque=opaque))
        else:
            out.append(kvp.encode_request(rid, opaque=opaque, **rng.choice(INVALID_SHAPES)))
    return out


def phased_requests(seed: int, keys: int = 60) -> list[bytes]:
    """Requests for a capture replayed at full speed, where nothing but the order of arrival
    may decide an answer: no request touches a key while an earlier one on it may still be
    in flight through queues of another kind (SETs of every key, then reads, NOOPs and
    refused requests, then DELETEs of half the keys, then reads of every key)."""
    rng = random.Random(seed)
    pool = list(dict.fromkeys(_key(rng, rng.choice([1, 16, 32, 250])) for _ in range(keys)))
    out: list[bytes] = []

    def add(make) -> None:
        out.append(make(len(out) + 1, rng.getrandbits(32)))

    for key in pool:
        room = DATAGRAM_MAX - kvp.FRAME_HEADER_SIZE - kvp.HEADER_SIZE - 8 - len(key)
        value = rng.randbytes(rng.choice([0, 64, 64, 1000, room]))
        add(lambda rid, op, k=key, v=value: kvp.encode_set(rid, k, v, flags=rng.getrandbits(32),
                                                           expiration=_expiration(rng), opaque=op))
    for key in pool:
        add(lambda rid, op, k=key: kvp.encode_request(rid, rng.choice([kvp.GET, kvp.GETK]), key=k,
                                                      opaque=op))
        if rng.random() < 0.3:
            add(lambda rid, op: kvp.encode_request(rid, opaque=op, **rng.choice(INVALID_SHAPES)))
        if rng.random() < 0.1:
            add(lambda rid, op: kvp.encode_noop(rid, opaque=op))
        if rng.random() < 0.1:
            add(lambda rid, op: kvp.encode_request(rid, rng.choice(UNKNOWN_OPCODES), opaque=op))
    for key in pool[::2] + [b"never-set"]:
        add(lambda rid, op, k=key: kvp.encode_request(rid, kvp.DELETE, key=k, opaque=op))
    for key in pool:
        add(lambda rid, op, k=key: kvp.encode_getk(rid, k, opaque=op))
    return out


def malformed_datagrams(seed: int) -> list[tuple[str, bytes]]:
    """Datagrams that are not one whole request, each with the drop counter it must bump."""
    rng = random.Random(seed)
    good = kvp.encode_set(0x7000, b"malformed", b"v" * 20, opaque=1)
    header = kvp.FRAME_HEADER_SIZE + kvp.HEADER_SIZE
    short_body = bytearray(good)
    short_body[header - 16:header - 12] = (len(good) - header + 5).to_bytes(4, "big")
    long_body = bytearray(good)
    long_body[header - 16:header - 12] = (len(good) - header - 3).to_bytes(4, "big")
    bad_parts = bytearray(kvp.encode_request(0x7001, kvp.GET, key=b"abc"))
    bad_parts[kvp.FRAME_HEADER_SIZE + 2:kvp.FRAME_HEADER_SIZE + 4] = (9).to_bytes(2, "big")
    wrong_magic = bytearray(good)
    wrong_magic[kvp.FRAME_HEADER_SIZE] = rng.choice([0x00, 0x81, 0x42])
    multi = bytearray(good)
    multi[4:6] = (2).to_bytes(2, "big")
    later = bytearray(good)
    later[2:4] = (1).to_bytes(2, "big")
    later[4:6] = (2).to_bytes(2, "big")
    return [("too_short", b""), ("too_short", good[:rng.randint(1, header - 1)]),
            ("too_short", good[:header - 1]), ("bad_length", bytes(short_body)),
            ("bad_length", bytes(long_body)), ("bad_length", good[:-1]),
            ("bad_length", bytes(bad_parts)), ("bad_magic", bytes(wrong_magic)),
            ("multi_datagram", bytes(multi)), ("multi_datagram", bytes(later)),
            ("bad_magic", kvp.FRAME_HEADER.pack(0x7002, 0, 1, 0) + b"\x42" + rng.randbytes(50))]
