"""Load generator for the network functions of examples/nf: aes, flowclass, sequencer.

    python examples/nf/load.py aes --pcap aes.pcap --count 10000
    python examples/nf/load.py flowclass --server 127.0.0.1:9000 --count 100000
    python examples/nf/load.py sequencer --server 127.0.0.1:9000 --rate 20000 --check

Every packet is an Ethernet/IPv4/UDP frame of at most ``--size`` bytes (the
Floem paper's sizes by default: 1024 for aes and sequencer, 80 for flowclass);
its UDP payload has ``size - 42`` bytes, except for aes, whose payload is
rounded down to whole AES blocks (976 bytes, a 1018-byte frame, for 1024).
Payloads (deterministic for a ``--seed``):

* aes: random bytes.
* flowclass: 8 zero bytes (where the reply puts the flow's estimate), the packet's
  number (big-endian uint64), zeros. Each packet belongs to one of ``--flows``
  flows, drawn with Zipf(``--zipf``) popularity (0: uniform); with ``--min-size``,
  frame lengths are uniform from it to ``--size``.
* sequencer: a bitmap naming each of the 10 groups with probability 1/2 (never
  none), 10 zeroed 8-byte slots, the packet's number (big-endian uint64), zeros.

``--pcap FILE`` writes the frames, flow f from 10.1.0.0 + f, port 40000 + f mod
20000, to 10.0.0.1:9000. A live run (``--server HOST:PORT``) sends the payloads
over UDP from one socket per flow (``--flows``, default 16 for aes and sequencer,
so that a server's threads share them), either in a closed loop keeping
``--window`` packets outstanding or in an open loop at ``--rate`` packets/s; a
packet unanswered after ``--timeout`` seconds counts as a timeout (it is never
sent again). It prints a summary; ``--check`` also checks every reply (aes:
against ``openssl enc``, one process per packet, so keep ``--count`` small;
flowclass: each estimate at least the flow's bytes answered before the packet
was sent plus its own; sequencer: numbers distinct per group and one order
over all groups). It exits 1 if a packet timed out or a check failed.

Importable: `packets` makes the workload, `frames` and `write_pcap` the capture,
`run_live` the live run (a `Summary`), `probe` tells whether a server answers,
and `aes_expected`, `flow_bounds` and `sequencer_errors` check replies.
"""
from __future__ import annotations

import argparse
import errno
import importlib.util
import ipaddress
import os
import resource
import selectors
import socket
import string
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType

try:
    import dpkt
    import networkx as nx
    import numpy as np
except ImportError as missing:          # e.g. the system python instead of the project's venv
    sys.exit(f"load.py: {missing.name} is missing: run it with the project's Python "
             "(scripts/setup.sh makes .venv; then .venv/bin/python examples/nf/load.py)")

KVS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kvs")
sys.path.append(KVS)                    # examples/kvs/load.py imports protocol.py beside it
import protocol as kvp  # noqa: E402


def _kvs_load() -> ModuleType:
    """examples/kvs/load.py, as module ``kvs_load`` (``load`` is this file's name too)."""
    if "kvs_load" not in sys.modules:
        spec = importlib.util.spec_from_file_location("kvs_load", os.path.join(KVS, "load.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["kvs_load"] = module
        spec.loader.exec_module(module)
    return sys.modules["kvs_load"]


kvs_load = _kvs_load()

KINDS = ("aes", "flowclass", "sequencer")
HEADERS = 42                            # Ethernet, IPv4 without options, UDP
DEFAULT_SIZE = {"aes": 1024, "flowclass": 80, "sequencer": 1024}
DEFAULT_FLOWS = {"aes": 16, "flowclass": 1000, "sequencer": 16}
GROUPS = 10
SLOTS = 2 + 8 * GROUPS                  # sequencer: bitmap and slots
#: Where a payload holds the packet's number (aes: nowhere, the reply is all ciphertext).
NUMBER_AT = {"flowclass": 8, "sequencer": SLOTS}
#: The smallest frame of each kind: one AES block, or room for the packet's number.
MIN_SIZE = {"aes": HEADERS + 16, "flowclass": HEADERS + 16, "sequencer": HEADERS + SLOTS + 8}
DEFAULT_COUNT = 10_000
DEFAULT_ZIPF = 0.9
DEFAULT_WINDOW = 32
DEFAULT_TIMEOUT = 1.0
NF_PORT = 9000                          # floem run's default --port
NIST_KEY = "2b7e151628aed2a6abf7158809cf4f3c"     # examples/nf/aes.py's defaults
NIST_IV = "000102030405060708090a0b0c0d0e0f"
SRC_MAC, DST_MAC = kvp.mac_address("02:00:00:00:00:02"), kvp.mac_address("02:00:00:00:00:01")
FIRST_SRC_IP = ipaddress.IPv4Address("10.1.0.0")
DST_IP = kvp.ipv4_address("10.0.0.1")
SRC_PORT, SRC_PORTS = 40000, 20000


# -- the workload -------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Packet:
    """Packet ``number`` of a workload: its flow and its UDP payload."""

    number: int
    flow: int
    payload: bytes

    @property
    def frame_len(self) -> int:
        """The length of its frame (what flowclass counts)."""
        return HEADERS + len(self.payload)


def payload_len(kind: str, size: int) -> int:
    """The UDP payload length of a ``size``-byte frame of ``kind`` (aes: whole blocks)."""
    room = size - HEADERS
    return room - room % 16 if kind == "aes" else room


def _numbered(number: int, at: int, length: int, head: bytes = b"") -> bytes:
    """``head``, zeros up to ``at``, ``number`` (big-endian uint64), zeros up to ``length``."""
    return (head.ljust(at, b"\0") + number.to_bytes(8, "big")).ljust(length, b"\0")


def packets(kind: str, count: int, size: int | None = None, seed: int = 1,
            flows: int | None = None, zipf: float = DEFAULT_ZIPF,
            min_size: int | None = None) -> list[Packet]:
    """The workload: ``count`` packets of ``kind`` in frames of ``size`` bytes (see the module
    docstring; ``zipf`` and ``min_size`` are for flowclass). Raises ValueError for
    impossible figures."""
    size = DEFAULT_SIZE[kind] if size is None else size
    flows = DEFAULT_FLOWS[kind] if flows is None else flows
    low = size if min_size is None else min_size
    if not MIN_SIZE[kind] <= size <= HEADERS + kvp.MAX_UDP_PAYLOAD:
        raise ValueError(f"{kind} frames must be from {MIN_SIZE[kind]} to "
                         f"{HEADERS + kvp.MAX_UDP_PAYLOAD} bytes, not {size}")
    if not MIN_SIZE[kind] <= low <= size:
        raise ValueError(f"the least {kind} frame must be from {MIN_SIZE[kind]} to {size} "
                         f"bytes, not {low}")
    if count < 0 or flows < 1 or zipf < 0:
        raise ValueError("the count must be >= 0, the flows >= 1 and the Zipf exponent >= 0")
    rng = np.random.default_rng(seed)
    if kind == "aes":
        return [Packet(i, i % flows, rng.bytes(payload_len(kind, size))) for i in range(count)]
    if kind == "flowclass":
        flow_of = kvs_load.ZipfSampler(flows, zipf).sample(rng, count)
        sizes = rng.integers(low, size, count, endpoint=True)
        return [Packet(i, int(flow_of[i]), _numbered(i, NUMBER_AT[kind], int(sizes[i]) - HEADERS))
                for i in range(count)]
    named = rng.random((count, GROUPS)) < 0.5
    weights = 1 << np.arange(GROUPS)
    result = []
    for i in range(count):
        bitmap = int(named[i] @ weights)
        while bitmap == 0:
            bitmap = int((rng.random(GROUPS) < 0.5) @ weights)
        result.append(Packet(i, i % flows, _numbered(i, NUMBER_AT[kind], payload_len(kind, size),
                                                     bitmap.to_bytes(2, "big"))))
    return result


def packet_number(kind: str, payload: bytes) -> int | None:
    """The number a (reply) payload carries, or None (aes, or too short)."""
    at = NUMBER_AT.get(kind)
    if at is None or len(payload) < at + 8:
        return None
    return int.from_bytes(payload[at:at + 8], "big")


def frame(packet: Packet) -> bytes:
    """The packet as an Ethernet/IPv4/UDP frame from its flow's address and port."""
    src_ip = (FIRST_SRC_IP + packet.flow).packed
    return kvp.build_frame(packet.payload, SRC_MAC, DST_MAC, src_ip, DST_IP,
                           SRC_PORT + packet.flow % SRC_PORTS, NF_PORT, ip_id=packet.number)


def frames(kind: str, count: int, size: int | None = None, seed: int = 1, **options) -> list[bytes]:
    """The frames of ``packets(kind, count, size, seed, **options)``."""
    return [frame(p) for p in packets(kind, count, size, seed, **options)]


def write_pcap(path: str | os.PathLike[str], frames: Sequence[bytes]) -> int:
    """Write ``frames`` to a pcap file, frame i stamped i microseconds after the epoch; their
    count."""
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=65535, linktype=dpkt.pcap.DLT_EN10MB)
        for i, data in enumerate(frames):
            writer.writepkt(data, ts=i / 1e6)
    return len(frames)


# -- checking replies -----------------------------------------------------------

def aes_expected(payloads: Sequence[bytes], key: str = NIST_KEY, iv: str = NIST_IV) -> list[bytes]:
    """Each payload encrypted by ``openssl enc -aes-128-cbc -nopad`` (whole blocks only)."""
    command = ["openssl", "enc", "-aes-128-cbc", "-nopad", "-K", key, "-iv", iv]
    return [subprocess.run(command, input=p, capture_output=True, check=True).stdout
            for p in payloads]


def flow_bounds(sent: Sequence[Packet], order: Sequence[int], seen: Sequence[int]) -> list[int]:
    """The least estimate each packet's reply may carry: its frame's length plus the bytes of
    its flow's packets answered before it was sent. ``order`` is the packet numbers in the
    order their replies came; ``seen[i]`` how many replies had come when packet i was sent
    (with the processing order as ``order`` and ``seen[i]`` i's place in it: the flow's
    exact byte count up to and including packet i)."""
    bounds = [0] * len(sent)
    by_seen = sorted(range(len(sent)), key=lambda i: seen[i])
    flow_bytes: dict[int, int] = {}
    answered = 0
    for i in by_seen:
        while answered < seen[i]:
            p = sent[order[answered]]
            flow_bytes[p.flow] = flow_bytes.get(p.flow, 0) + p.frame_len
            answered += 1
        bounds[i] = flow_bytes.get(sent[i].flow, 0) + sent[i].frame_len
    return bounds


def sequencer_errors(sent: Sequence[Packet], replies: dict[int, bytes],
                     dense: bool = False) -> list[str]:
    """What is wrong with the sequencer's ``replies`` (packet number -> payload): a group
    number given twice, slots of groups not named or the rest changed, numbers that do not
    agree on one order of the packets, and with ``dense`` numbers of a group that are not
    exactly 1..n."""
    errors = []
    order = nx.DiGraph()
    for group in range(GROUPS):
        numbered = []
        for n, reply in replies.items():
            if int.from_bytes(sent[n].payload[:2], "big") >> group & 1:
                at = 2 + 8 * group
                numbered.append((int.from_bytes(reply[at:at + 8], "big"), n))
        numbered.sort()
        numbers = [seq for seq, _ in numbered]
        if len(set(numbers)) != len(numbers):
            errors.append(f"group {group}: a number was given twice")
        if dense and numbers != list(range(1, len(numbers) + 1)):
            errors.append(f"group {group}: the numbers are not 1..{len(numbers)}")
        order.add_edges_from((p, q) for (_, p), (_, q) in zip(numbered, numbered[1:]))
    for n, reply in replies.items():
        named = int.from_bytes(sent[n].payload[:2], "big")
        kept = [reply[2 + 8 * g:10 + 8 * g] == sent[n].payload[2 + 8 * g:10 + 8 * g]
                for g in range(GROUPS) if not named >> g & 1]
        if not all(kept) or reply[:2] != sent[n].payload[:2] or reply[SLOTS:] != \
                sent[n].payload[SLOTS:]:
            errors.append(f"packet {n}: the reply changed more than its groups' slots")
    if not nx.is_directed_acyclic_graph(order):
        errors.append("the groups' numbers order the packets in a cycle: "
                      f"{nx.find_cycle(order)}")
    return errors


# -- the live run -------------------------------------------------------------

@dataclass
class Summary:
    """What a live run did. ``replies`` maps packet numbers to reply payloads (when kept);
    ``order`` is the packet numbers of replies as they came, ``seen[i]`` how many had come
    when packet i was sent; ``late`` counts replies after their packet timed out and
    ``unknown`` replies that name no packet sent."""

    kind: str
    sent: int = 0
    received: int = 0
    timeouts: int = 0
    late: int = 0
    unknown: int = 0
    elapsed: float = 0.0
    latency_us: dict[str, float | None] = field(default_factory=dict)
    replies: dict[int, bytes] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    seen: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def packets_per_second(self) -> float:
        """Replies per second."""
        return self.received / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def ok(self) -> bool:
        """Every packet answered, by its own reply, and no check failed."""
        return not (self.errors or self.timeouts or self.late or self.unknown)

    def format(self) -> str:
        """The summary as a few lines of text."""
        latency = ", ".join(f"{name} {'-' if us is None else f'{us:.0f}'} us"
                            for name, us in self.latency_us.items())
        lines = [f"{self.kind}: sent {self.sent}, received {self.received} in "
                 f"{self.elapsed:.3f} s ({self.packets_per_second:.0f} packets/s)",
                 f"latency: {latency}",
                 f"dropped: {self.timeouts} timeouts, {self.late} late, {self.unknown} unknown",
                 f"errors: {len(self.errors)}"]
        return "\n".join(lines + [f"  {e}" for e in self.errors[:10]])


def parse_server(text: str) -> kvs_load.Server:
    """``HOST:PORT`` (or ``HOST``, port 9000) as a server; raises ValueError."""
    return kvs_load.parse_server(text if ":" in text else f"{text}:{NF_PORT}")


class _Runner:
    """The event loop of a live run: one connected socket per flow."""

    def __init__(self, kind: str, sent: Sequence[Packet], server: kvs_load.Server,
                 identify: Callable[[bytes], int | None], keep: bool) -> None:
        self.sent, self.server, self.identify, self.keep = sent, server, identify, keep
        self.summary = Summary(kind, seen=[0] * len(sent))
        self.selector = selectors.DefaultSelector()
        self.sockets: dict[int, socket.socket] = {}
        flows = sorted({p.flow for p in sent})
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if len(flows) + 64 > soft:                  # one descriptor per flow, and some
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(len(flows) + 64, hard), hard))
        try:
            for flow in flows:
                sock = kvs_load._connect(server)
                self.sockets[flow] = sock
                self.selector.register(sock, selectors.EVENT_READ)
        except (kvs_load.LoadError, OSError) as e:
            self.close()
            if isinstance(e, OSError) and e.errno == errno.EMFILE:
                raise kvs_load.LoadError(f"too many open files for {len(flows)} flows (one "
                                         "socket each): use fewer --flows") from None
            raise
        self.outstanding: dict[int, int] = {}       # packet number -> send time (ns), oldest first
        self.latencies: list[int] = []

    def close(self) -> None:
        """Close the sockets."""
        self.selector.close()
        for sock in self.sockets.values():
            sock.close()

    def send(self, number: int) -> bool:
        """Send packet ``number``; False when its socket cannot take it now."""
        packet = self.sent[number]
        try:
            self.sockets[packet.flow].send(packet.payload)
        except BlockingIOError:
            return False
        except ConnectionRefusedError:
            raise kvs_load.LoadError(f"nothing answers at {self.server}") from None
        self.outstanding[number] = time.monotonic_ns()
        self.summary.seen[number] = self.summary.received
        self.summary.sent += 1
        return True

    def receive(self, sock: socket.socket) -> None:
        """Take every reply waiting on ``sock``."""
        s = self.summary
        while True:
            try:
                reply = sock.recv(65536)
            except BlockingIOError:
                return
            except ConnectionRefusedError:
                raise kvs_load.LoadError(f"nothing answers at {self.server}") from None
            number = self.identify(reply)
            if number is None and self.outstanding:     # no number: the oldest is answered
                number = next(iter(self.outstanding))
            if number not in self.outstanding:
                if number is not None and 0 <= number < len(self.sent):
                    s.late += 1
                else:
                    s.unknown += 1
                continue
            self.latencies.append(time.monotonic_ns() - self.outstanding.pop(number))
            s.received += 1
            s.order.append(number)
            if self.keep:
                s.replies[number] = reply

    def run(self, window: int, rate: float | None, timeout: float) -> Summary:
        """Send every packet; wait for the replies or their timeouts."""
        s, timeout_ns, count = self.summary, int(timeout * 1e9), len(self.sent)
        start = time.monotonic_ns()
        while s.sent < count or self.outstanding:
            now = time.monotonic_ns()
            wait = timeout
            if rate is None:
                while s.sent < count and len(self.outstanding) < window and self.send(s.sent):
                    pass
            else:
                while s.sent < count and now >= start + s.sent * 1e9 / rate and self.send(s.sent):
                    pass
                if s.sent < count:
                    wait = max(0.0, (start + s.sent * 1e9 / rate - now) / 1e9)
            if self.outstanding:
                oldest = next(iter(self.outstanding.values()))
                wait = min(wait, max(0.0, (oldest + timeout_ns - now) / 1e9))
            for key, _ in self.selector.select(wait):
                self.receive(key.fileobj)
            now = time.monotonic_ns()
            while self.outstanding and next(iter(self.outstanding.values())) + timeout_ns <= now:
                del self.outstanding[next(iter(self.outstanding))]
                s.timeouts += 1
        s.elapsed = (time.monotonic_ns() - start) / 1e9
        s.latency_us = kvs_load._percentiles(self.latencies)
        return s


def run_live(kind: str, sent: Sequence[Packet], server: kvs_load.Server | str,
             window: int = DEFAULT_WINDOW, rate: float | None = None,
             timeout: float = DEFAULT_TIMEOUT, check: bool = False, key: str = NIST_KEY,
             iv: str = NIST_IV) -> Summary:
    """Send ``sent`` (from `packets`) to ``server`` and return what happened.

    A closed loop keeps ``window`` packets outstanding; ``rate`` (packets/s) makes an
    open loop instead. With ``check``, the summary keeps the replies and lists what is
    wrong with them in ``errors`` (aes: against ``key`` and ``iv``). Raises
    kvs_load.LoadError when the server does not resolve or nothing listens there.
    """
    server = server if isinstance(server, kvs_load.Server) else parse_server(server)
    if kind == "aes" and check:
        ciphertexts = aes_expected([p.payload for p in sent], key, iv)
        by_cipher = {c: p.number for p, c in zip(sent, ciphertexts)}

        def identify(reply: bytes) -> int | None:
            return by_cipher.get(reply, -1)         # -1: no packet's ciphertext, unknown
    else:
        def identify(reply: bytes) -> int | None:
            return packet_number(kind, reply)       # None for aes: the oldest is answered
    runner = _Runner(kind, sent, server, identify, keep=check)
    try:
        summary = runner.run(window, rate, timeout)
    finally:
        runner.close()
    if check and kind == "flowclass":
        bounds = flow_bounds(sent, summary.order, summary.seen)
        summary.errors += [f"packet {n}: estimate {int.from_bytes(r[:8], 'big')} is below "
                           f"{bounds[n]} bytes" for n, r in summary.replies.items()
                           if int.from_bytes(r[:8], "big") < bounds[n]]
    elif check and kind == "sequencer":
        summary.errors += sequencer_errors(sent, summary.replies)
    return summary


def probe(kind: str, server: kvs_load.Server | str, timeout: float = 0.2) -> bool:
    """True when the network function at ``server`` answers one packet within ``timeout``
    seconds: for aes an empty payload, for the sequencer one naming no group (neither
    changes their state), for flowclass a 16-byte payload from a flow of its own (its bytes
    count in the sketch)."""
    server = server if isinstance(server, kvs_load.Server) else parse_server(server)
    payload = {"aes": b"", "flowclass": bytes(16), "sequencer": bytes(SLOTS + 8)}[kind]
    with kvs_load._connect(server) as sock:
        if sock.getsockname() == sock.getpeername():
            return False            # the free port went to this socket, which would echo itself
        sock.setblocking(True)
        sock.settimeout(timeout)
        sock.send(payload)
        try:
            return len(sock.recv(65536)) == len(payload)
        except (TimeoutError, ConnectionRefusedError):
            return False


# -- command line -------------------------------------------------------------

def _hex16(text: str) -> str:
    """An argparse type: 16 bytes as 32 hex digits."""
    if len(text) != 32 or any(c not in string.hexdigits for c in text):
        raise argparse.ArgumentTypeError(f"{text!r} is not 32 hex digits")
    return text


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    number = kvs_load._number
    parser = argparse.ArgumentParser(prog="load.py",
                                     description=__doc__.partition("\n\nImportable")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=KINDS, help="the network function")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--pcap", metavar="FILE", help="write the frames to a pcap file")
    mode.add_argument("--server", metavar="HOST:PORT", help="send them over UDP to a server")
    work = parser.add_argument_group("workload")
    work.add_argument("--size", metavar="BYTES", type=number(int, 1),
                      help="frame size (default 1024, flowclass 80)")
    work.add_argument("--count", metavar="N", type=number(int, 0), default=DEFAULT_COUNT,
                      help="packets (default %(default)s)")
    work.add_argument("--seed", type=number(int, 0), default=1, help="(default %(default)s)")
    work.add_argument("--flows", metavar="F", type=number(int, 1),
                      help="flows: client sockets of a live run, source addresses in a pcap "
                           "(default 1000 for flowclass, 16 otherwise)")
    work.add_argument("--zipf", metavar="S", type=number(float, 0), default=DEFAULT_ZIPF,
                      help="flowclass: Zipf exponent of flow popularity, 0 for uniform "
                           "(default %(default)s)")
    work.add_argument("--min-size", metavar="BYTES", type=number(int, 1),
                      help="flowclass: frame lengths uniform from this to --size")
    live = parser.add_argument_group("live run")
    loop = live.add_mutually_exclusive_group()
    loop.add_argument("--window", metavar="W", type=number(int, 1), default=DEFAULT_WINDOW,
                      help="closed loop: packets outstanding (default %(default)s)")
    loop.add_argument("--rate", metavar="PPS", type=number(float, 0, above=True),
                      help="open loop: packets per second")
    live.add_argument("--timeout", metavar="SECONDS", type=number(float, 0, above=True),
                      default=DEFAULT_TIMEOUT, help="wait for a reply (default %(default)s)")
    live.add_argument("--check", action="store_true", help="check every reply")
    live.add_argument("--key", type=_hex16, default=NIST_KEY,
                      help="aes --check: the key, 32 hex digits (default aes.py's)")
    live.add_argument("--iv", type=_hex16, default=NIST_IV,
                      help="aes --check: the IV, 32 hex digits (default aes.py's)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status (0 clean, 1 errors or timeouts, 2 bad usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.min_size is not None and args.kind != "flowclass":
        parser.error("--min-size is for flowclass")
    try:
        sent = packets(args.kind, args.count, args.size, args.seed, args.flows, args.zipf,
                       args.min_size)
    except ValueError as e:
        parser.error(str(e))
    if args.pcap is not None:
        try:
            written = write_pcap(args.pcap, [frame(p) for p in sent])
        except OSError as e:
            parser.exit(2, f"{parser.prog}: error: cannot write {args.pcap}: {e.strerror}\n")
        print(f"wrote {written} {args.kind} frames to {args.pcap}")
        return 0
    try:
        summary = run_live(args.kind, sent, parse_server(args.server), args.window, args.rate,
                           args.timeout, args.check, args.key, args.iv)
    except (kvs_load.LoadError, ValueError, OSError, subprocess.CalledProcessError) as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")
    except KeyboardInterrupt:
        return 130
    print(summary.format())
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
