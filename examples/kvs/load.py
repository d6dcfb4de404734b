"""Workload generator for the key-value store: memcached binary protocol over UDP.

The workload is the Floem paper's (after FlexNIC's): 100,000 keys of 32 bytes,
values of 64 bytes, Zipf(0.9) key popularity, 90% GET and 10% SET, every key
preloaded with a SET first. Every figure is a flag, and the stream is
deterministic for a given ``--seed``. Two ways to use it, a pcap file or live::

    python examples/kvs/load.py --pcap kvs.pcap --requests 100000
    python examples/kvs/load.py --server 127.0.0.1:11211 --requests 100000
    python examples/kvs/load.py --server 127.0.0.1:11211 --rate 20000 --duration 5
    python examples/kvs/load.py --servers 10.0.0.1:11211,10.0.0.3:11211 --duration 10 --json

``--pcap`` writes the preload and the requests as Ethernet/IPv4/UDP frames.
A live run shards keys over the servers with ketama (libmemcached's MD5
continuum), keeps at most ``--window`` requests outstanding, resends a request
unanswered after ``--timeout`` seconds up to ``--retries`` times, and never has
two requests for one key outstanding, so that every GET is checked exactly
(value and flags) against the last SET sent for its key. It prints one summary
and exits nonzero if there were errors or timeouts.

Importable: `Workload` makes the request stream, `run_live` runs it against
servers and returns a `Summary`, `write_pcap` writes it to a file, `answers_noop`
checks that a server just started is up.
"""
from __future__ import annotations

import argparse
import bisect
import collections
import hashlib
import json
import math
import os
import selectors
import socket
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

try:
    import dpkt
    import numpy as np
except ImportError as missing:          # e.g. the system python instead of the project's venv
    sys.exit(f"load.py: {missing.name} is missing: run it with the project's Python "
             "(scripts/setup.sh makes .venv; then .venv/bin/python examples/kvs/load.py)")

import protocol as kvp

DEFAULT_KEYS = 100_000
DEFAULT_KEY_SIZE = 32
DEFAULT_VALUE_SIZE = 64
DEFAULT_ZIPF = 0.9
DEFAULT_GET_FRACTION = 0.9
DEFAULT_SEED = 1
DEFAULT_REQUESTS = 100_000
DEFAULT_WINDOW = 32
DEFAULT_TIMEOUT = 0.2
DEFAULT_RETRIES = 3
MEMCACHED_PORT = 11211
DEFAULT_SRC_MAC = "02:00:00:00:00:02"
DEFAULT_DST_MAC = "02:00:00:00:00:01"
DEFAULT_SRC_IP = "10.0.0.2"
DEFAULT_DST_IP = "10.0.0.1"
DEFAULT_SRC_PORT = 40000
KETAMA_POINTS_PER_SERVER = 160
KETAMA_POINTS_PER_HASH = 4
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99.9", 99.9))
MAX_ERROR_EXAMPLES = 10
_CHUNK = 4096
_KEY_PAD = "key-" + "0" * 250


class LoadError(Exception):
    """A live run cannot start: a server does not resolve or does not answer."""


# -- the workload -------------------------------------------------------------

def zipf_probabilities(n: int, s: float) -> np.ndarray:
    """P(rank k) = k^-s / sum_j j^-s for ranks 1..n (index 0 is rank 1); any s >= 0."""
    weights = np.arange(1, n + 1, dtype=np.float64) ** -s
    return weights / weights.sum()


class ZipfSampler:
    """Draws ranks 0..n-1 with bounded Zipf popularity: inverse CDF by binary search.

    numpy's own ``zipf`` is unbounded and needs s > 1; this one takes any s >= 0
    (s = 0 is uniform).
    """

    def __init__(self, n: int, s: float) -> None:
        self.cdf = np.cumsum(zipf_probabilities(n, s))
        self.cdf[-1] = 1.0

    def ranks(self, uniform: np.ndarray) -> np.ndarray:
        """The ranks for uniform draws in [0, 1)."""
        return np.searchsorted(self.cdf, uniform, side="right")

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` ranks drawn with ``rng``."""
        return self.ranks(rng.random(size))


@dataclass(frozen=True, slots=True)
class Operation:
    """One request of the workload: a GET or a SET of key number ``index``.

    ``value``, ``flags`` and ``version`` are those of a SET (the preload SET of
    a key is version 0, its later SETs 1, 2, ...); a GET has b"", 0, 0.
    """

    opcode: int
    index: int
    key: bytes
    value: bytes = b""
    flags: int = 0
    version: int = 0

    def encode(self, request_id: int, opaque: int) -> bytes:
        """The request datagram (a SET never expires)."""
        if self.opcode == kvp.SET:
            return kvp.encode_set(request_id, self.key, self.value, self.flags, 0, opaque)
        return kvp.encode_request(request_id, self.opcode, key=self.key, opaque=opaque)


class Workload:
    """The request stream: keys, values, popularity and the GET/SET mix.

    Keys are printable (``key-000...0042`` padded to ``key_size``); a value
    holds its key, its version and a digest of both, padded or cut to
    ``value_size``; a SET's flags are the CRC-32 of its value. Popularity rank
    r (0 is the most popular) belongs to key number ``key_of_rank[r]``, a
    random permutation drawn from the seed; ``rank_of_key`` is its inverse.
    Raises ValueError for impossible figures.
    """

    def __init__(self, keys: int = DEFAULT_KEYS, key_size: int = DEFAULT_KEY_SIZE,
                 value_size: int = DEFAULT_VALUE_SIZE, zipf: float = DEFAULT_ZIPF,
                 get_fraction: float = DEFAULT_GET_FRACTION, preload: bool = True,
                 seed: int = DEFAULT_SEED) -> None:
        if keys < 1:
            raise ValueError(f"the number of keys must be at least 1, not {keys}")
        digits = len(str(keys - 1))
        if not digits <= key_size <= kvp.MAX_KEY_LENGTH:
            raise ValueError(f"the key size must be from {digits} (to number {keys} keys) to "
                             f"{kvp.MAX_KEY_LENGTH} bytes, not {key_size}")
        largest = kvp.MAX_UDP_PAYLOAD - kvp.FRAME_HEADER_SIZE - kvp.HEADER_SIZE \
            - kvp.SET_EXTRAS.size - key_size
        if not 0 <= value_size <= largest:
            raise ValueError(f"the value size must be from 0 to {largest} bytes (one UDP "
                             f"datagram), not {value_size}")
        if not (math.isfinite(zipf) and zipf >= 0):
            raise ValueError(f"the Zipf exponent must be a number >= 0, not {zipf}")
        if not 0 <= get_fraction <= 1:
            raise ValueError(f"the GET fraction must be from 0 to 1, not {get_fraction}")
        if seed < 0:
            raise ValueError(f"the seed must be >= 0, not {seed}")
        self.keys = keys
        self.key_size = key_size
        self.value_size = value_size
        self.zipf = zipf
        self.get_fraction = get_fraction
        self.preload = preload
        self.seed = seed
        permutation_seed, self._operation_seed = np.random.SeedSequence(seed).spawn(2)
        self.key_of_rank = np.random.default_rng(permutation_seed).permutation(keys)
        self.rank_of_key = np.argsort(self.key_of_rank)
        self._sampler = ZipfSampler(keys, zipf)

    def key(self, index: int) -> bytes:
        """The key of key number ``index``."""
        digits = str(index)
        return (_KEY_PAD[:self.key_size - len(digits)] + digits).encode()

    def value(self, index: int, version: int) -> bytes:
        """The value that SET number ``version`` of key ``index`` stores."""
        head = b"%s#%d#" % (self.key(index), version)
        digest = hashlib.blake2b(b"%d:%d" % (index, version), digest_size=16).hexdigest().encode()
        fill = digest * (self.value_size // len(digest) + 1)
        return (head + fill)[:self.value_size]

    def flags(self, index: int, version: int) -> int:
        """The flags that SET number ``version`` of key ``index`` stores."""
        return zlib.crc32(self.value(index, version))

    def set_operation(self, index: int, version: int) -> Operation:
        """SET number ``version`` of key ``index``."""
        value = self.value(index, version)
        return Operation(kvp.SET, index, self.key(index), value, zlib.crc32(value), version)

    def popularity(self) -> np.ndarray:
        """The probability that a request is for key number i, for every i."""
        return zipf_probabilities(self.keys, self.zipf)[self.rank_of_key]

    def preload_operations(self) -> Iterator[Operation]:
        """A SET (version 0) of every key in key order; nothing when preloading is off."""
        if self.preload:
            for index in range(self.keys):
                yield self.set_operation(index, 0)

    def operations(self, count: int | None = None) -> Iterator[Operation]:
        """The request stream, the same on every call: ``count`` requests, or without end.

        Its first n requests do not depend on ``count``.
        """
        rng = np.random.default_rng(self._operation_seed)
        versions = [0] * self.keys
        produced = 0
        while count is None or produced < count:
            indexes = self.key_of_rank[self._sampler.sample(rng, _CHUNK)].tolist()
            gets = (rng.random(_CHUNK) < self.get_fraction).tolist()
            take = _CHUNK if count is None else min(_CHUNK, count - produced)
            for index, is_get in zip(indexes[:take], gets[:take]):
                if is_get:
                    yield Operation(kvp.GET, index, self.key(index))
                else:
                    versions[index] += 1
                    yield self.set_operation(index, versions[index])
            produced += take

    def stream(self, count: int | None) -> Iterator[Operation]:
        """The preload, then ``count`` requests (or without end)."""
        yield from self.preload_operations()
        yield from self.operations(count)


# -- servers and sharding -----------------------------------------------------

@dataclass(frozen=True)
class Server:
    """A memcached UDP endpoint."""

    host: str
    port: int = MEMCACHED_PORT

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def ketama_name(self) -> str:
        """The name libmemcached hashes for this server: ``host`` on 11211, else ``host:port``."""
        return self.host if self.port == MEMCACHED_PORT else f"{self.host}:{self.port}"


def parse_server(text: str) -> Server:
    """A `Server` from ``HOST:PORT``, ``[IPV6]:PORT`` or ``HOST`` (port 11211).

    Raises ValueError for anything else.
    """
    text = text.strip()
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"{text!r} is not HOST:PORT")
        port_text = rest[1:] if rest else str(MEMCACHED_PORT)
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" in text:
        raise ValueError(f"{text!r} is not HOST:PORT (write an IPv6 address as [ADDRESS]:PORT)")
    else:
        host, port_text = text, str(MEMCACHED_PORT)
    if not host:
        raise ValueError(f"{text!r} has no host")
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
    return Server(host, int(port_text))


class Ketama:
    """libmemcached's consistent hashing (``MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED``, equal weights).

    Each server puts 160 points on a circle of 32-bit numbers: for i in 0..39,
    the four little-endian words of MD5("NAME-i") (NAME is
    `Server.ketama_name`). A key goes to the server of the first point at or
    after the first little-endian word of MD5(key), wrapping around; adding an
    n-th server moves about 1/n of the keys.
    """

    def __init__(self, servers: Sequence[Server]) -> None:
        if not servers:
            raise ValueError("ketama needs at least one server")
        points: list[tuple[int, int]] = []
        for number, server in enumerate(servers):
            for i in range(KETAMA_POINTS_PER_SERVER // KETAMA_POINTS_PER_HASH):
                digest = hashlib.md5(f"{server.ketama_name}-{i}".encode()).digest()
                points.extend((int.from_bytes(digest[4 * j:4 * j + 4], "little"), number)
                              for j in range(KETAMA_POINTS_PER_HASH))
        points.sort()
        self.points = [value for value, _ in points]
        self._owners = [number for _, number in points]

    def server_for(self, key: bytes) -> int:
        """The index (in the server list) of the server holding ``key``."""
        position = bisect.bisect_left(self.points,
                                      int.from_bytes(hashlib.md5(key).digest()[:4], "little"))
        return self._owners[position if position < len(self.points) else 0]


# -- the live run -------------------------------------------------------------

@dataclass
class Summary:
    """What a live run did. ``requests`` .. ``misses`` and latencies cover the measured run;
    ``errors``, ``timeouts``, ``retries`` and ``stale`` (responses ignored because
    nothing waited for them: late duplicates) also count the preload."""

    requests: int = 0
    answered: int = 0
    elapsed: float = 0.0
    latency_us: dict[str, float | None] = field(default_factory=dict)
    gets: int = 0
    sets: int = 0
    hits: int = 0
    misses: int = 0
    errors: int = 0
    timeouts: int = 0
    retries: int = 0
    stale: int = 0
    preloaded: int = 0
    servers: dict[str, int] = field(default_factory=dict)
    error_examples: list[str] = field(default_factory=list)

    @property
    def requests_per_second(self) -> float:
        """Answered requests per second of the measured run."""
        return self.answered / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def ok(self) -> bool:
        """No errors and no timeouts."""
        return self.errors == 0 and self.timeouts == 0

    def to_dict(self) -> dict[str, object]:
        """The summary as plain JSON-ready data."""
        return {"requests": self.requests, "answered": self.answered,
                "elapsed_s": round(self.elapsed, 6),
                "requests_per_second": round(self.requests_per_second, 1),
                "latency_us": self.latency_us, "gets": self.gets, "sets": self.sets,
                "hits": self.hits, "misses": self.misses, "errors": self.errors,
                "timeouts": self.timeouts, "retries": self.retries, "stale": self.stale,
                "preloaded": self.preloaded, "servers": self.servers,
                "error_examples": self.error_examples}

    def format(self) -> str:
        """The summary as aligned text lines."""
        latency = ", ".join(f"{name} {'-' if us is None else f'{us:.0f}'} us"
                            for name, us in self.latency_us.items())
        rows = [
            ("requests", f"{self.requests} sent, {self.answered} answered in "
                         f"{self.elapsed:.3f} s ({self.requests_per_second:.0f} requests/s)"),
            ("latency", latency),
            ("gets", f"{self.gets}: {self.hits} hits, {self.misses} misses"),
            ("sets", str(self.sets)),
            ("preloaded", f"{self.preloaded} keys"),
            ("errors", str(self.errors)),
            ("timeouts", str(self.timeouts)),
            ("retries", str(self.retries)),
            ("stale", f"{self.stale} late or duplicate responses ignored"),
            ("servers", ", ".join(f"{name} {count}" for name, count in self.servers.items())),
        ]
        return "\n".join(f"{name:<10} {text}" for name, text in rows)


class _Phase:
    """Counters of one phase of a run: the preload or the measured requests."""

    def __init__(self, servers: int) -> None:
        self.sent = self.answered = self.gets = self.sets = self.hits = self.misses = 0
        self.errors = self.timeouts = self.retries = self.set_ok = 0
        self.latencies: list[int] = []
        self.per_server = [0] * servers


class _Flight:
    """A request sent and not yet answered (or given up)."""

    __slots__ = ("op", "server", "request_id", "opaque", "datagram", "start", "attempts", "done")

    def __init__(self, op: Operation, server: int, request_id: int, opaque: int,
                 datagram: bytes, start: int) -> None:
        self.op = op
        self.server = server
        self.request_id = request_id
        self.opaque = opaque
        self.datagram = datagram
        self.start = start
        self.attempts = 0
        self.done = False


def _connect(server: Server) -> socket.socket:
    """A non-blocking UDP socket connected to ``server`` (only its datagrams come in)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(server.host, server.port,
                                                             type=socket.SOCK_DGRAM)[0]
    except socket.gaierror as e:
        raise LoadError(f"cannot resolve {server}: {e.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.setblocking(False)
        sock.connect(address)
    except OSError as e:
        sock.close()
        raise LoadError(f"cannot reach {server}: {e.strerror}") from None
    return sock


def answers_noop(server: Server, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """True when ``server`` answers one memcached binary NOOP over UDP within ``timeout``
    seconds: a readiness check for a server just started (`run_live` probes by itself)."""
    with _connect(server) as sock:
        sock.setblocking(True)
        sock.settimeout(timeout)
        sock.send(kvp.encode_noop(1))
        try:
            return kvp.decode_response(sock.recv(65536)).opcode == kvp.NOOP
        except (TimeoutError, ConnectionRefusedError, kvp.ProtocolError):
            return False


# A key's expected state: None when unknown (not set by this run), else the
# versions the server may hold (more than one after a SET that failed or went
# unanswered) and whether it may hold none.
_KeyState = tuple[tuple[int, ...], bool] | None


class _Runner:
    """The event loop of a live run over one socket per server."""

    def __init__(self, workload: Workload, servers: Sequence[Server], window: int,
                 timeout: float, retries: int, allow_misses: bool) -> None:
        self.workload = workload
        self.servers = list(servers)
        self.window = window
        self.timeout_ns = int(timeout * 1e9)
        self.retries = retries
        self.allow_misses = allow_misses
        self.max_deferred = max(64, 4 * window)
        self.ring = Ketama(self.servers)
        self.sockets: list[socket.socket] = []
        self.selector = selectors.SelectSelector()
        try:
            for number, server in enumerate(self.servers):
                sock = _connect(server)
                self.sockets.append(sock)
                self.selector.register(sock, selectors.EVENT_READ, number)
        except LoadError:
            self.close()
            raise
        self.reassemblers = [kvp.Reassembler() for _ in self.servers]
        self.inflight: list[dict[int, _Flight]] = [{} for _ in self.servers]
        self.next_id = [0] * len(self.servers)
        self.shard: dict[int, int] = {}
        self.state: list[_KeyState] = [None] * workload.keys
        self.busy: dict[int, collections.deque[tuple[Operation, int | None]]] = {}
        self.deferred = 0
        self.outstanding = 0
        self.timers: collections.deque[tuple[int, _Flight, int]] = collections.deque()
        self.opaque = 0
        self.stale = 0
        self.examples: list[str] = []

    def close(self) -> None:
        """Close the sockets."""
        self.selector.close()
        for sock in self.sockets:
            sock.close()

    def _request_id(self, server: int) -> int:
        inflight = self.inflight[server]
        while True:
            request_id = self.next_id[server]
            self.next_id[server] = (request_id + 1) & 0xFFFF
            if request_id not in inflight:
                return request_id

    def _recv(self, server: int) -> Iterator[bytes]:
        sock = self.sockets[server]
        while True:
            try:
                yield sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionRefusedError:
                continue

    def probe(self) -> None:
        """Check that every server answers a NOOP; raises LoadError naming one that does not."""
        for number, server in enumerate(self.servers):
            if not self._answers_noop(number):
                raise LoadError(f"{server} does not answer a memcached binary NOOP over UDP "
                                f"({self.retries + 1} tries, {self.timeout_ns / 1e9:g} s each)")

    def _answers_noop(self, server: int) -> bool:
        request_id = self._request_id(server)
        datagram = kvp.encode_noop(request_id)
        for _ in range(self.retries + 1):
            self._send(server, datagram)
            deadline = time.monotonic() + self.timeout_ns / 1e9
            while (left := deadline - time.monotonic()) > 0:
                for key, _ in self.selector.select(left):
                    for response in self._responses(key.data):
                        if key.data == server and response.request_id == request_id \
                                and response.opcode == kvp.NOOP:
                            return True
                        self.stale += 1
        return False

    def _responses(self, server: int) -> Iterator[kvp.Response]:
        """The whole, well-formed responses waiting on ``server``'s socket."""
        for datagram in self._recv(server):
            try:
                response = self.reassemblers[server].feed(datagram)
            except kvp.ProtocolError:
                continue
            if response is not None:
                yield response

    def _send(self, server: int, datagram: bytes) -> None:
        try:
            self.sockets[server].send(datagram)
        except (BlockingIOError, InterruptedError, ConnectionRefusedError):
            pass

    def _error(self, phase: _Phase, text: str) -> None:
        phase.errors += 1
        if len(self.examples) < MAX_ERROR_EXAMPLES:
            self.examples.append(text)

    def _server_of(self, index: int) -> int:
        server = self.shard.get(index)
        if server is None:
            server = self.shard[index] = self.ring.server_for(self.workload.key(index))
        return server

    def _issue(self, op: Operation, scheduled: int | None, phase: _Phase) -> None:
        """Send ``op`` now, or queue it behind the request outstanding for its key."""
        waiting = self.busy.get(op.index)
        if waiting is not None:
            waiting.append((op, scheduled))
            self.deferred += 1
            return
        self.busy[op.index] = collections.deque()
        self._start(op, scheduled, phase)

    def _start(self, op: Operation, scheduled: int | None, phase: _Phase) -> None:
        server = self._server_of(op.index)
        request_id = self._request_id(server)
        opaque = self.opaque
        self.opaque = (opaque + 1) & 0xFFFFFFFF
        start = time.perf_counter_ns() if scheduled is None else scheduled
        flight = _Flight(op, server, request_id, opaque, op.encode(request_id, opaque), start)
        self.inflight[server][request_id] = flight
        self.reassemblers[server].discard(request_id)
        self.outstanding += 1
        phase.sent += 1
        phase.per_server[server] += 1
        if op.opcode == kvp.GET:
            phase.gets += 1
        else:
            phase.sets += 1
        self._transmit(flight)

    def _transmit(self, flight: _Flight) -> None:
        flight.attempts += 1
        self._send(flight.server, flight.datagram)
        self.timers.append((time.perf_counter_ns() + self.timeout_ns, flight, flight.attempts))

    def _finish(self, flight: _Flight, phase: _Phase) -> None:
        """Retire ``flight`` and send the next request waiting for its key, if any."""
        flight.done = True
        del self.inflight[flight.server][flight.request_id]
        self.reassemblers[flight.server].discard(flight.request_id)
        self.outstanding -= 1
        waiting = self.busy[flight.op.index]
        if waiting:
            op, scheduled = waiting.popleft()
            self.deferred -= 1
            self._start(op, scheduled, phase)
        else:
            del self.busy[flight.op.index]

    def _uncertain(self, op: Operation, may_miss: bool) -> None:
        """A SET whose effect is unknown: the key holds the old or the new version."""
        state = self.state[op.index]
        if state is not None:
            self.state[op.index] = (state[0] + (op.version,), state[1] or may_miss)

    def _expire(self, phase: _Phase) -> None:
        now = time.perf_counter_ns()
        while self.timers and self.timers[0][0] <= now:
            _, flight, attempt = self.timers.popleft()
            if flight.done or flight.attempts != attempt:
                continue
            if flight.attempts <= self.retries:
                phase.retries += 1
                self._transmit(flight)
                continue
            phase.timeouts += 1
            if len(self.examples) < MAX_ERROR_EXAMPLES:
                self.examples.append(f"{_describe(flight)}: no answer after "
                                     f"{flight.attempts} tries")
            if flight.op.opcode == kvp.SET:
                self._uncertain(flight.op, False)
            self._finish(flight, phase)

    def _receive(self, server: int, phase: _Phase) -> None:
        inflight = self.inflight[server]
        for datagram in self._recv(server):
            try:
                response = self.reassemblers[server].feed(datagram)
            except kvp.ProtocolError as e:
                flight = inflight.get(e.request_id) if e.request_id is not None else None
                where = _describe(flight) if flight else f"from {self.servers[server]}"
                self._error(phase, f"{where}: malformed response: {e}")
                if flight is not None:
                    phase.answered += 1
                    if flight.op.opcode == kvp.SET:
                        self._uncertain(flight.op, True)
                    self._finish(flight, phase)
                continue
            if response is None:
                continue
            flight = inflight.get(response.request_id)
            if flight is None:
                self.stale += 1
                continue
            phase.answered += 1
            phase.latencies.append(time.perf_counter_ns() - flight.start)
            problem = self._check(flight, response, phase)
            if problem is not None:
                self._error(phase, f"{_describe(flight)}: {problem}")
            self._finish(flight, phase)

    def _check(self, flight: _Flight, response: kvp.Response, phase: _Phase) -> str | None:
        """Count the answer to ``flight``; what is wrong with it, or None."""
        op = flight.op
        if response.opcode != op.opcode or response.opaque != flight.opaque:
            if op.opcode == kvp.SET:
                self._uncertain(op, True)
            return (f"response opcode 0x{response.opcode:02x} opaque {response.opaque}, expected "
                    f"0x{op.opcode:02x} opaque {flight.opaque}")
        if op.opcode == kvp.SET:
            if response.status == kvp.OK:
                self.state[op.index] = ((op.version,), False)
                phase.set_ok += 1
                return None
            self._uncertain(op, True)
            return f"status 0x{response.status:02x} {response.value[:60]!r}"
        state = self.state[op.index]
        if response.status == kvp.KEY_NOT_FOUND:
            if state is None or state[1] or self.allow_misses:
                phase.misses += 1
                return None
            return f"missed, expected version {state[0][-1]} (--allow-misses accepts misses)"
        if response.status != kvp.OK:
            return f"status 0x{response.status:02x} {response.value[:60]!r}"
        if response.flags is None or response.key:
            return (f"malformed hit: {len(response.extras)} bytes of extras (not 4), "
                    f"{len(response.key)}-byte key (not none)")
        if state is not None and not any(
                response.value == self.workload.value(op.index, version)
                and response.flags == self.workload.flags(op.index, version)
                for version in state[0]):
            version = state[0][-1]
            return (f"value {response.value[:80]!r} flags {response.flags}, expected "
                    f"{self.workload.value(op.index, version)[:80]!r} flags "
                    f"{self.workload.flags(op.index, version)} (version {version})")
        phase.hits += 1
        return None

    def run(self, operations: Iterator[Operation], phase: _Phase, rate: float | None,
            duration: float | None) -> float:
        """Send ``operations`` until they end or ``duration`` passes, then wait for the
        outstanding ones; the seconds it took. ``rate`` (requests/s) makes it an open loop.
        """
        begin = time.perf_counter_ns()
        end = None if duration is None else begin + int(duration * 1e9)
        interval = None if rate is None else 1e9 / rate
        sent_on_schedule = 0
        exhausted = False
        while True:
            self._expire(phase)
            while not exhausted and self.outstanding < self.window \
                    and self.deferred < self.max_deferred:
                now = time.perf_counter_ns()
                if end is not None and now >= end:
                    exhausted = True
                    break
                scheduled = None
                if interval is not None:
                    scheduled = begin + int(sent_on_schedule * interval)
                    if now < scheduled:
                        break
                op = next(operations, None)
                if op is None:
                    exhausted = True
                    break
                sent_on_schedule += 1
                self._issue(op, scheduled, phase)
            if exhausted and self.outstanding == 0 and self.deferred == 0:
                return (time.perf_counter_ns() - begin) / 1e9
            now = time.perf_counter_ns()
            wakes = [self.timers[0][0]] if self.timers else []
            if not exhausted and self.outstanding < self.window \
                    and self.deferred < self.max_deferred:
                if interval is not None:
                    wakes.append(begin + int(sent_on_schedule * interval))
                if end is not None:
                    wakes.append(end)
            wait = max(0, min(wakes) - now) / 1e9 if wakes else None
            for key, _ in self.selector.select(wait):
                self._receive(key.data, phase)


def _describe(flight: _Flight) -> str:
    op = flight.op
    name = "GET" if op.opcode == kvp.GET else "SET"
    return f"{name} {op.key.decode()} (request id {flight.request_id})"


def _percentiles(latencies: list[int]) -> dict[str, float | None]:
    if not latencies:
        return {name: None for name, _ in PERCENTILES}
    values = np.percentile(np.asarray(latencies, dtype=np.float64) / 1e3,
                           [q for _, q in PERCENTILES])
    return {name: round(float(v), 1) for (name, _), v in zip(PERCENTILES, values)}


def run_live(workload: Workload, servers: Sequence[Server | str],
             requests: int | None = DEFAULT_REQUESTS, duration: float | None = None,
             rate: float | None = None, window: int = DEFAULT_WINDOW,
             timeout: float = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES,
             allow_misses: bool = False) -> Summary:
    """Preload (if the workload says so), then send ``requests`` requests or for ``duration``
    seconds, whichever ends first (None: no limit of that kind; at least one is needed).

    ``servers`` are `Server`s or ``HOST:PORT`` strings; ``rate`` (requests/s)
    makes an open loop whose latencies count from each request's scheduled
    time. Raises LoadError if a server does not resolve or answer a NOOP, and
    ValueError for impossible arguments.
    """
    parsed = [s if isinstance(s, Server) else parse_server(s) for s in servers]
    if not parsed:
        raise ValueError("at least one server is needed")
    if len(set(parsed)) != len(parsed):
        raise ValueError("a server is listed twice")
    if requests is None and duration is None:
        raise ValueError("give a number of requests, a duration or both")
    for name, number in (("requests", requests), ("duration", duration), ("rate", rate)):
        if number is not None and not number > 0:
            raise ValueError(f"{name} must be > 0, not {number}")
    if window < 1 or retries < 0 or not timeout > 0:
        raise ValueError("the window must be >= 1, the retries >= 0 and the timeout > 0")
    runner = _Runner(workload, parsed, window, timeout, retries, allow_misses)
    try:
        runner.probe()
        preload = _Phase(len(parsed))
        runner.run(workload.preload_operations(), preload, None, None)
        measured = _Phase(len(parsed))
        elapsed = runner.run(workload.operations(requests), measured, rate, duration)
    finally:
        runner.close()
    return Summary(
        requests=measured.sent, answered=measured.answered, elapsed=elapsed,
        latency_us=_percentiles(measured.latencies), gets=measured.gets, sets=measured.sets,
        hits=measured.hits, misses=measured.misses, errors=preload.errors + measured.errors,
        timeouts=preload.timeouts + measured.timeouts,
        retries=preload.retries + measured.retries, stale=runner.stale,
        preloaded=preload.set_ok,
        servers={str(s): n for s, n in zip(parsed, measured.per_server)},
        error_examples=runner.examples)


# -- pcap ---------------------------------------------------------------------

def write_pcap(workload: Workload, path: str | os.PathLike[str],
               requests: int = DEFAULT_REQUESTS, src_mac: str = DEFAULT_SRC_MAC,
               dst_mac: str = DEFAULT_DST_MAC, src_ip: str = DEFAULT_SRC_IP,
               dst_ip: str = DEFAULT_DST_IP, src_port: int = DEFAULT_SRC_PORT,
               dst_port: int = MEMCACHED_PORT) -> int:
    """Write the preload and ``requests`` requests as Ethernet/IPv4/UDP frames; the frame count.

    Frame i carries request id i mod 65536 and opaque i mod 2^32, and is
    stamped i microseconds after the epoch. Raises ValueError for a bad address.
    """
    addresses = (kvp.mac_address(src_mac), kvp.mac_address(dst_mac), kvp.ipv4_address(src_ip),
                 kvp.ipv4_address(dst_ip), src_port, dst_port)
    frames = 0
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=65535, linktype=dpkt.pcap.DLT_EN10MB)
        for op in workload.stream(requests):
            datagram = op.encode(frames & 0xFFFF, frames & 0xFFFFFFFF)
            writer.writepkt(kvp.build_frame(datagram, *addresses, ip_id=frames), ts=frames / 1e6)
            frames += 1
    return frames


# -- command line -------------------------------------------------------------

def _number(kind: type[int] | type[float], low: float, high: float = math.inf,
            above: bool = False) -> Callable[[str], int | float]:
    """An argparse type: a ``kind`` number from ``low`` (excluded if ``above``) to ``high``."""
    what = "an integer" if kind is int else "a number"
    bounds = f"{'>' if above else '>='} {low:g}" + (f" and <= {high:g}" if high < math.inf else "")

    def convert(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not math.isfinite(value) or not (low < value if above else low <= value) \
                or not value <= high:
            raise argparse.ArgumentTypeError(f"{text} is not {what} {bounds}")
        return value
    return convert


def _servers(text: str) -> list[Server]:
    """An argparse type: a comma-separated list of servers."""
    try:
        return [parse_server(part) for part in text.split(",")]
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _server(text: str) -> list[Server]:
    """An argparse type: one server (as a list of one)."""
    if "," in text:
        raise argparse.ArgumentTypeError(f"{text!r} is more than one server: use --servers")
    return _servers(text)


def _checked(check: Callable[[str], object]) -> Callable[[str], str]:
    """An argparse type that validates with ``check`` (raising ValueError) and keeps the text."""
    def convert(text: str) -> str:
        try:
            check(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text
    return convert


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = argparse.ArgumentParser(prog="load.py",
                                     description=__doc__.partition("\n\nImportable")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--pcap", metavar="FILE", help="write the workload to a pcap file")
    mode.add_argument("--server", metavar="HOST:PORT", type=_server,
                      help="run against one memcached-protocol UDP server")
    mode.add_argument("--servers", metavar="HOST:PORT,...", type=_servers,
                      help="run against several, keys sharded by ketama")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")

    work = parser.add_argument_group("workload")
    work.add_argument("--keys", metavar="N", type=_number(int, 1), default=DEFAULT_KEYS,
                      help="number of keys (default %(default)s)")
    work.add_argument("--key-size", metavar="BYTES", type=_number(int, 1),
                      default=DEFAULT_KEY_SIZE, help="key length (default %(default)s)")
    work.add_argument("--value-size", metavar="BYTES", type=_number(int, 0),
                      default=DEFAULT_VALUE_SIZE, help="value length (default %(default)s)")
    work.add_argument("--zipf", metavar="S", type=_number(float, 0), default=DEFAULT_ZIPF,
                      help="Zipf exponent of key popularity, 0 for uniform (default %(default)s)")
    work.add_argument("--get-fraction", metavar="F", type=_number(float, 0, 1),
                      default=DEFAULT_GET_FRACTION,
                      help="fraction of requests that are GETs, the rest SETs "
                           "(default %(default)s)")
    work.add_argument("--no-preload", dest="preload", action="store_false",
                      help="do not SET every key before the requests")
    work.add_argument("--seed", type=_number(int, 0), default=DEFAULT_SEED,
                      help="random seed: the same seed gives the same stream (default %(default)s)")
    work.add_argument("--requests", metavar="N", type=_number(int, 0), default=None,
                      help=f"requests after the preload (default {DEFAULT_REQUESTS}, or no limit "
                           "with --duration; 0 with --pcap: the preload alone)")

    live = parser.add_argument_group("live run")
    live.add_argument("--duration", metavar="SECONDS", type=_number(float, 0, above=True),
                      help="stop sending after this long")
    live.add_argument("--rate", metavar="R", type=_number(float, 0, above=True),
                      help="open loop at R requests/s (default: closed loop)")
    live.add_argument("--window", metavar="N", type=_number(int, 1), default=DEFAULT_WINDOW,
                      help="most requests outstanding at once (default %(default)s)")
    live.add_argument("--timeout", metavar="SECONDS", type=_number(float, 0, above=True),
                      default=DEFAULT_TIMEOUT,
                      help="wait before sending a request again (default %(default)s)")
    live.add_argument("--retries", metavar="N", type=_number(int, 0), default=DEFAULT_RETRIES,
                      help="times a request is sent again before it counts as a timeout "
                           "(default %(default)s)")
    live.add_argument("--allow-misses", action="store_true",
                      help="a GET miss of a key that was set is not an error (evicting servers)")

    frames = parser.add_argument_group("pcap frames")
    for flag, check, default in (("--src-mac", kvp.mac_address, DEFAULT_SRC_MAC),
                                 ("--dst-mac", kvp.mac_address, DEFAULT_DST_MAC),
                                 ("--src-ip", kvp.ipv4_address, DEFAULT_SRC_IP),
                                 ("--dst-ip", kvp.ipv4_address, DEFAULT_DST_IP)):
        frames.add_argument(flag, metavar=flag[2:].replace("-", "_").upper(),
                            type=_checked(check), default=default,
                            help="(default %(default)s)")
    frames.add_argument("--src-port", metavar="PORT", type=_number(int, 0, 65535),
                        default=DEFAULT_SRC_PORT, help="client UDP port (default %(default)s)")
    frames.add_argument("--dst-port", metavar="PORT", type=_number(int, 0, 65535),
                        default=MEMCACHED_PORT, help="server UDP port (default %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status (0 clean, 1 errors or timeouts, 2 bad usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        workload = Workload(args.keys, args.key_size, args.value_size, args.zipf,
                            args.get_fraction, args.preload, args.seed)
    except ValueError as e:
        parser.error(str(e))
    if args.pcap is not None:
        for flag in ("duration", "rate"):
            if getattr(args, flag) is not None:
                parser.error(f"--{flag} is for a live run, not --pcap")
        requests = DEFAULT_REQUESTS if args.requests is None else args.requests
        try:
            frames = write_pcap(workload, args.pcap, requests, args.src_mac, args.dst_mac,
                                args.src_ip, args.dst_ip, args.src_port, args.dst_port)
        except OSError as e:
            parser.exit(2, f"{parser.prog}: error: cannot write {args.pcap}: {e.strerror}\n")
        report = {"pcap": args.pcap, "frames": frames, "preload": frames - requests,
                  "requests": requests}
        print(json.dumps(report) if args.json else
              f"wrote {frames} frames ({frames - requests} preload SETs, {requests} requests) "
              f"to {args.pcap}")
        return 0
    if args.requests == 0:
        parser.error("--requests 0 is for --pcap (the preload alone)")
    servers = args.server if args.server is not None else args.servers
    requests = DEFAULT_REQUESTS if args.requests is None and args.duration is None \
        else args.requests
    try:
        summary = run_live(workload, servers, requests, args.duration, args.rate, args.window,
                           args.timeout, args.retries, args.allow_misses)
    except (LoadError, ValueError) as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")
    except KeyboardInterrupt:
        return 130
    print(json.dumps(summary.to_dict()) if args.json else summary.format())
    for example in summary.error_examples:
        print(f"{parser.prog}: {example}", file=sys.stderr)
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
