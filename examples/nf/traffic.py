"""Captures for the shallow network functions (forwarder, firewall, nat, lb): flows of UDP
and TCP frames in both directions, plus malformed and truncated frames.

    python examples/nf/traffic.py nat --pcap nat.pcap --count 10000 --size 64,1518
    python examples/nf/traffic.py firewall --pcap fw.pcap --size 1518 --malformed 0

Every frame belongs to one of ``--flows`` flows (UDP or TCP, chosen per flow) whose
addresses and ports suit the function (see `PLANS`: the apps' default addresses, so that
every decision of each function is taken); a flow's first frame goes from its initiator to
its responder, later ones either way once a request got through the function (as
`shallow_model` decides), replies addressed as the responder saw the request (behind the
NAT: to the public address and port; the load balancer's backends answer clients
directly, so its flows carry requests only). Frame sizes are drawn from
``--size`` (a list of byte counts, 64 to 1518 as captured, no FCS); the payload is random.
About 3% of frames carry a shorter IPv4 packet followed by zero Ethernet padding, about 10%
of UDP flows send no checksum (0), a few frames have TTL 0, 1 or 2; the rest TTL 64.
A ``--malformed`` fraction (default 0.1) of frames is broken in one of the ways of
`MALFORMED` (checked and counted by `CheckFrame` before any function sees them).
Deterministic for a ``--seed``.

Importable: `frames` makes the frames, `write_pcap` the capture.
"""
from __future__ import annotations

import argparse
import ipaddress
import os
import random
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass

try:
    import dpkt
except ImportError as missing:          # e.g. the system python instead of the project's venv
    sys.exit(f"traffic.py: {missing.name} is missing: run it with the project's Python "
             "(scripts/setup.sh makes .venv; then .venv/bin/python examples/nf/traffic.py)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shallow_model  # noqa: E402

KINDS = tuple(shallow_model.MODELS)
TCP, UDP = shallow_model.TCP, shallow_model.UDP
#: Ethernet, IPv4 and transport header bytes of each protocol's frames.
HEADERS = {TCP: 54, UDP: 42}
MIN_SIZE, MAX_SIZE = 64, 1518
#: The ways a malformed frame is broken, each from a well-formed one.
MALFORMED = ("short", "cut", "version", "ip_options", "fragment", "ip_length_long",
             "ip_length_short", "udp_length", "non_ip", "other_protocol", "tcp_options")


def _net(text: str) -> tuple[int, int]:
    net = ipaddress.IPv4Network(text)
    return int(net.network_address), net.num_addresses


@dataclass(frozen=True)
class Pair:
    """Flows from hosts of prefix ``initiators`` to hosts of ``responders`` on one of
    ``ports`` per protocol (empty: any port from 1024), drawn with weight ``weight``."""

    initiators: str
    responders: str
    ports: dict[int, tuple[int, ...]]
    weight: int = 1


@dataclass(frozen=True)
class Plan:
    """Who starts flows with whom, and whether responders answer through the function."""

    pairs: tuple[Pair, ...]
    replies: bool = True


INSIDE, OUTSIDE, OTHER = "10.1.0.0/16", "198.51.100.0/24", "203.0.113.0/24"
WEB = {TCP: (80, 443), UDP: (53,)}
#: The address plan of each function's workload (the apps' defaults: inside 10.1.0.0/16,
#: outside 198.51.100.0/24 and 203.0.113.0/24, NAT public 192.0.2.1, load balancer VIP
#: 203.0.113.10), so that every decision of each function is taken.
PLANS = {
    "forwarder": Plan((Pair(INSIDE, OUTSIDE, WEB, 3), Pair(OUTSIDE, INSIDE, WEB, 2),
                       Pair(INSIDE, OTHER, WEB), Pair(OUTSIDE, "192.0.2.0/24", WEB))),
    "firewall": Plan((Pair(INSIDE, OUTSIDE, {TCP: (80, 80, 443, 22, 8080), UDP: (53, 53, 123)}, 5),
                      Pair(OUTSIDE, "10.1.0.80/32", {TCP: (80, 443, 22, 8080), UDP: (53,)}, 3),
                      Pair(OTHER, "10.1.0.0/24", WEB))),
    "nat": Plan((Pair(INSIDE, OUTSIDE, WEB, 8), Pair(OUTSIDE, "192.0.2.1/32", {TCP: (), UDP: ()}),
                 Pair(OUTSIDE, INSIDE, WEB), Pair(INSIDE, "10.1.0.0/24", WEB))),
    "lb": Plan((Pair(OUTSIDE, "203.0.113.10/32", WEB, 4), Pair(INSIDE, "203.0.113.10/32", WEB, 4),
                Pair(OUTSIDE, "203.0.113.11/32", WEB)), replies=False),
}


@dataclass
class Flow:
    """One flow of the workload: its 5-tuple as its initiator sends it."""

    proto: int
    src: int
    sport: int
    dst: int
    dport: int
    no_checksum: bool
    reply_to: tuple[int, int] | None = None     # (address, port) the responder saw


def _host(rng: random.Random, prefix: str) -> int:
    base, count = _net(prefix)
    return base + (rng.randrange(1, count - 1) if count > 2 else 0)


def _flow(rng: random.Random, plan: Plan) -> Flow:
    pair = rng.choices(plan.pairs, weights=[p.weight for p in plan.pairs])[0]
    proto = rng.choice((TCP, UDP))
    ports = pair.ports[proto]
    return Flow(proto, _host(rng, pair.initiators), rng.randrange(1024, 65536),
                _host(rng, pair.responders),
                rng.choice(ports) if ports else rng.randrange(1024, 65536),
                proto == UDP and rng.random() < 0.1)


def build(proto: int, src: int, sport: int, dst: int, dport: int, size: int,
          rng: random.Random, *, ttl: int = 64, ident: int = 0, no_checksum: bool = False,
          padding: int = 0) -> bytes:
    """A well-formed frame of ``size`` bytes (the last ``padding`` of them Ethernet padding
    after the IPv4 packet), its checksums right, its payload random."""
    payload = rng.randbytes(size - HEADERS[proto] - padding)
    if proto == TCP:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, rng.getrandbits(32), rng.getrandbits(32),
                         5 << 4, 0x18, 65535, 0, 0) + payload
    else:
        l4 = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    pseudo = struct.pack("!IIBBH", src, dst, 0, proto, len(l4))
    csum = shallow_model.internet_checksum(pseudo + l4)
    if proto == UDP:
        csum = 0 if no_checksum else (csum or 0xffff)
    at = shallow_model.L4_CHECKSUM_AT[proto]
    l4 = l4[:at] + csum.to_bytes(2, "big") + l4[at + 2:]
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(l4), ident, 0x4000, ttl, proto, 0, src,
                     dst)
    ip = ip[:10] + shallow_model.internet_checksum(ip).to_bytes(2, "big") + ip[12:]
    eth = bytes.fromhex("020000000001") + bytes([2, 0, 0, 0, rng.randrange(256),
                                                 rng.randrange(256)]) + b"\x08\x00"
    return eth + ip + l4 + bytes(padding)


def break_frame(frame: bytes, how: str, rng: random.Random) -> bytes:
    """``frame`` (well-formed) broken the way ``how`` (one of `MALFORMED`) names."""
    f = bytearray(frame)
    if how == "short":
        return bytes(f[:rng.randrange(1, 34)])
    if how == "cut":
        return bytes(f[:rng.randrange(34, len(f))])
    if how == "version":
        f[14] = rng.choice((0x65, 0x44, 0x05))
    elif how == "ip_options":
        f[14] = rng.choice((0x46, 0x4f))
    elif how == "fragment":
        f[20:22] = rng.choice((0x2000, 0x0001, 0x20b9)).to_bytes(2, "big")
    elif how == "ip_length_long":
        f[16:18] = (len(f) - 14 + rng.randrange(1, 200)).to_bytes(2, "big")
    elif how == "ip_length_short":
        f[16:18] = rng.randrange(0, 28 if f[23] == UDP else 40).to_bytes(2, "big")
    elif how == "udp_length":
        total = int.from_bytes(f[16:18], "big")
        f[23] = UDP
        f[38:40] = rng.choice((rng.randrange(0, 8), total - 20 + rng.randrange(1, 100))
                              ).to_bytes(2, "big")
    elif how == "non_ip":
        f[12:14] = rng.choice((b"\x08\x06", b"\x86\xdd", b"\x81\x00", b"\x00\x40"))
    elif how == "other_protocol":
        f[23] = rng.choice((1, 47, 132))
    elif how == "tcp_options":
        if len(f) < 54:
            return bytes(f[:20])
        f[23] = TCP
        f[46] = rng.choice((6, 15, 4, 0)) << 4
    return bytes(f)


def _sizes_for(proto: int, sizes: Sequence[int]) -> list[int]:
    return [s for s in sizes if s >= HEADERS[proto]] or [max(sizes)]


def frames(kind: str, count: int, sizes: Sequence[int] = (64, 1518), seed: int = 1,
           flows: int = 64, malformed: float = 0.1,
           params: dict[str, str] | None = None) -> list[bytes]:
    """``count`` frames of ``kind``'s workload (see the module's docstring). ``params``: the
    function's ``-D`` values: responders answer only requests the function passed on (as
    `shallow_model` says), to the address and port they saw (behind the NAT: public)."""
    if any(not MIN_SIZE <= s <= MAX_SIZE for s in sizes) or not sizes:
        raise ValueError(f"frame sizes must be {MIN_SIZE} to {MAX_SIZE} bytes, not {sizes}")
    rng = random.Random(seed)
    plan = PLANS[kind]
    function = shallow_model.model(kind, params)
    pool = [_flow(rng, plan) for _ in range(flows)]
    out: list[bytes] = []
    for number in range(count):
        flow = rng.choice(pool)
        size = max(rng.choice(sizes), HEADERS[flow.proto])
        padding = 0
        if rng.random() < 0.03:
            padding = min(rng.randrange(1, 17), size - HEADERS[flow.proto])
        ttl = rng.choices((64, 2, 1, 0), weights=(94, 2, 2, 2))[0]
        request = not (flow.reply_to and plan.replies and rng.random() < 0.5)
        if request:
            tuple_ = (flow.proto, flow.src, flow.sport, flow.dst, flow.dport)
        else:
            tuple_ = (flow.proto, flow.dst, flow.dport, *flow.reply_to)
        frame = build(*tuple_, size, rng, ttl=ttl, ident=number & 0xffff,
                      no_checksum=flow.no_checksum, padding=padding)
        if rng.random() < malformed:
            frame = break_frame(frame, rng.choice(MALFORMED), rng)
        if shallow_model.check_reason(frame) is None:
            delivered = function.process(frame)
            if request and delivered is not None and flow.reply_to is None:
                seen = shallow_model.Flow.of(delivered)
                flow.reply_to = (seen.src, seen.sport)
        out.append(frame)
    return out


def write_pcap(path: str | os.PathLike[str], frames: Sequence[bytes]) -> int:
    """Write ``frames`` to a pcap file (Ethernet, one microsecond apart); their count."""
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=65535)
        for i, frame in enumerate(frames):
            writer.writepkt(frame, ts=1e-6 * i)
    return len(frames)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of byte counts") from None
    if not sizes or any(not MIN_SIZE <= s <= MAX_SIZE for s in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be {MIN_SIZE} to {MAX_SIZE} bytes")
    return sizes


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction from 0 to 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=KINDS, help="the function whose workload to write")
    parser.add_argument("--pcap", required=True, help="the capture to write")
    parser.add_argument("--count", type=int, default=10000, help="frames (default 10000)")
    parser.add_argument("--size", type=_sizes, default=[64, 1518],
                        help="frame sizes to draw from, comma separated (default 64,1518)")
    parser.add_argument("--flows", type=int, default=64, help="flows (default 64)")
    parser.add_argument("--malformed", type=_fraction, default=0.1,
                        help="fraction of malformed frames (default 0.1)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                        help="the function's parameters, for the NAT's replies")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Write the capture; print how many frames."""
    args = build_parser().parse_args(argv)
    if args.count < 0 or args.flows < 1:
        build_parser().error("--count must be at least 0 and --flows at least 1")
    params = dict(d.partition("=")[::2] for d in args.defines)
    written = write_pcap(args.pcap, frames(args.kind, args.count, args.size, args.seed,
                                           args.flows, args.malformed, params))
    print(f"wrote {written} {args.kind} frames to {args.pcap}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
