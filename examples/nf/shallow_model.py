"""A Python model of the shallow network functions (forwarder, firewall, nat, lb): the frames
each sends for a capture, and what it drops and why. The tests' oracle.

The model shares no code with the apps: it parses the same ``-D`` parameter strings itself,
checks frames as `floem.library.CheckFrame` documents, and writes every checksum it changes
from scratch (the apps update them incrementally, RFC 1624), so a wrong update in either
shows as a difference. Frames are bytes as on the wire (a capture's records)::

    model = shallow_model.model("nat", {"public": "192.0.2.1"})
    expected = shallow_model.run(model, frames)      # .sent, .checks, .drops
"""
from __future__ import annotations

import hashlib
import ipaddress
import struct
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

#: `floem.library.packets.CHECK_REASONS`, in its order.
CHECK_REASONS = ("truncated", "not_ipv4", "ip_options", "bad_ip_length", "fragment",
                 "not_udp_tcp", "bad_udp_length", "tcp_options")
TCP, UDP = 6, 17
ETH, IP = 14, 20
#: The offset of each L4 checksum in its header.
L4_CHECKSUM_AT = {TCP: 16, UDP: 6}


class ConfigError(ValueError):
    """A parameter string the model cannot read (the app reports the same as a FloemError)."""


def internet_checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``: the one's complement of the one's
    complement sum of its 16-bit big-endian words (an odd last byte padded with zero)."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def check_reason(frame: bytes) -> str | None:
    """Why `CheckFrame` drops ``frame`` (one of `CHECK_REASONS`), or None when it passes."""
    if len(frame) < ETH + IP:
        return "truncated"
    if frame[12:14] != b"\x08\x00":
        return "not_ipv4"
    if frame[14] != 0x45:
        return "ip_options"
    total = int.from_bytes(frame[16:18], "big")
    if total < IP or ETH + total > len(frame):
        return "bad_ip_length"
    if int.from_bytes(frame[20:22], "big") & 0x3fff:
        return "fragment"
    proto = frame[23]
    if proto == UDP:
        if total < IP + 8:
            return "truncated"
        udp_len = int.from_bytes(frame[38:40], "big")
        if udp_len < 8 or udp_len > total - IP:
            return "bad_udp_length"
    elif proto == TCP:
        if total < IP + 20:
            return "truncated"
        if frame[46] >> 4 != 5:
            return "tcp_options"
    else:
        return "not_udp_tcp"
    return None


@dataclass(frozen=True)
class Flow:
    """A frame's 5-tuple (addresses as integers)."""

    proto: int
    src: int
    sport: int
    dst: int
    dport: int

    @classmethod
    def of(cls, frame: bytes) -> Flow:
        """The 5-tuple of a frame that `check_reason` passes."""
        src, dst = struct.unpack("!II", frame[26:34])
        sport, dport = struct.unpack("!HH", frame[34:38])
        return cls(frame[23], src, sport, dst, dport)

    def reverse(self) -> Flow:
        """The flow of the replies."""
        return Flow(self.proto, self.dst, self.dport, self.src, self.sport)


def rewrite(frame: bytes, *, src: int | None = None, dst: int | None = None,
            sport: int | None = None, dport: int | None = None, ttl: int | None = None,
            eth_src: bytes | None = None, eth_dst: bytes | None = None) -> bytes:
    """``frame`` (checked) with the given members replaced, and its IPv4 checksum and (when
    an address or port changed) its UDP or TCP checksum computed from scratch: a UDP
    checksum of 0 ("none") stays 0 and a computed 0 is sent as 0xffff (RFC 768). Bytes after
    the IPv4 packet (Ethernet padding) are kept."""
    out = bytearray(frame)
    if eth_dst is not None:
        out[0:6] = eth_dst
    if eth_src is not None:
        out[6:12] = eth_src
    if ttl is not None:
        out[22] = ttl
    if src is not None:
        out[26:30] = src.to_bytes(4, "big")
    if dst is not None:
        out[30:34] = dst.to_bytes(4, "big")
    if sport is not None:
        out[34:36] = sport.to_bytes(2, "big")
    if dport is not None:
        out[36:38] = dport.to_bytes(2, "big")
    out[24:26] = b"\0\0"
    out[24:26] = internet_checksum(bytes(out[ETH:ETH + IP])).to_bytes(2, "big")
    if (src, dst, sport, dport) != (None, None, None, None):
        proto, total = out[23], int.from_bytes(out[16:18], "big")
        at = ETH + IP + L4_CHECKSUM_AT[proto]
        if not (proto == UDP and out[at:at + 2] == b"\0\0"):
            segment = bytearray(out[ETH + IP:ETH + total])
            segment[L4_CHECKSUM_AT[proto]:L4_CHECKSUM_AT[proto] + 2] = b"\0\0"
            pseudo = bytes(out[26:34]) + struct.pack("!BBH", 0, proto, total - IP)
            csum = internet_checksum(pseudo + bytes(segment))
            if proto == UDP and csum == 0:
                csum = 0xffff
            out[at:at + 2] = csum.to_bytes(2, "big")
    return bytes(out)


def _address(name: str, text: str) -> int:
    try:
        return int(ipaddress.IPv4Address(text.strip()))
    except ValueError:
        raise ConfigError(f"{name}: {text!r} is not an IPv4 address") from None


def _prefix(name: str, text: str) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(text.strip())
    except ValueError:
        raise ConfigError(f"{name}: {text!r} is not an IPv4 prefix") from None


def _mac(name: str, text: str) -> bytes:
    parts = text.strip().split(":")
    if len(parts) != 6 or not all(1 <= len(p) <= 2 for p in parts):
        raise ConfigError(f"{name}: {text!r} is not an Ethernet address")
    try:
        return bytes(int(p, 16) for p in parts)
    except ValueError:
        raise ConfigError(f"{name}: {text!r} is not an Ethernet address") from None


def _entries(text: str) -> list[str]:
    return [e.strip() for e in text.split(",") if e.strip()]


class Function:
    """One network function: `process` a checked frame into the frame it sends, or None
    (dropped: the reason is counted in `drops`)."""

    def __init__(self) -> None:
        self.drops: Counter[str] = Counter()

    def process(self, frame: bytes) -> bytes | None:
        """The frame sent for checked ``frame``, or None when dropped."""
        raise NotImplementedError

    def drop(self, reason: str) -> None:
        """Count a drop for ``reason``."""
        self.drops[reason] += 1


class Forwarder(Function):
    """examples/nf/forwarder.py: longest-prefix next hop, TTL - 1, Ethernet rewritten."""

    DEFAULTS = {"mac": "02:00:00:00:00:01",
                "routes": "10.1.0.0/16=02:00:00:00:01:01,198.51.100.0/24=02:00:00:00:02:01,"
                          "203.0.113.0/24=02:00:00:00:02:02,0.0.0.0/0=02:00:00:00:03:01"}
    DROPS = ("ttl_expired", "no_route")

    def __init__(self, params: Mapping[str, str]) -> None:
        super().__init__()
        self.mac = _mac("mac", params["mac"])
        self.routes = []
        for entry in _entries(params["routes"]):
            net, _, hop = entry.partition("=")
            self.routes.append((_prefix("routes", net), _mac("routes", hop)))

    def process(self, frame: bytes) -> bytes | None:
        ttl = frame[22]
        if ttl <= 1:
            return self.drop("ttl_expired")
        dst = ipaddress.IPv4Address(frame[30:34])
        matches = [(net.prefixlen, hop) for net, hop in self.routes if dst in net]
        if not matches:
            return self.drop("no_route")
        hop = max(matches, key=lambda m: m[0])[1]
        return rewrite(frame, ttl=ttl - 1, eth_dst=hop, eth_src=self.mac)


@dataclass(frozen=True)
class Rule:
    """A firewall rule: its action and what it matches (None: any)."""

    allow: bool
    proto: int | None
    src: ipaddress.IPv4Network
    sports: tuple[int, int]
    dst: ipaddress.IPv4Network
    dports: tuple[int, int]

    def matches(self, flow: Flow) -> bool:
        """Whether ``flow`` is one this rule names."""
        return ((self.proto is None or self.proto == flow.proto)
                and ipaddress.IPv4Address(flow.src) in self.src
                and ipaddress.IPv4Address(flow.dst) in self.dst
                and self.sports[0] <= flow.sport <= self.sports[1]
                and self.dports[0] <= flow.dport <= self.dports[1])


def _endpoint(text: str) -> tuple[ipaddress.IPv4Network, tuple[int, int]]:
    addr, _, ports = text.partition(":")
    net = _prefix("rules", "0.0.0.0/0" if addr == "any" else addr)
    if not ports:
        return net, (0, 65535)
    low, _, high = ports.partition("-")
    try:
        span = (int(low), int(high or low))
    except ValueError:
        raise ConfigError(f"rules: {ports!r} is not a port or port range") from None
    if not 0 <= span[0] <= span[1] <= 65535:
        raise ConfigError(f"rules: {ports!r} is not a port range within 0-65535")
    return net, span


def parse_rule(text: str) -> Rule:
    """``allow|deny tcp|udp|any SRC[:PORTS] DST[:PORTS]`` as a `Rule`."""
    words = text.split()
    if len(words) != 4 or words[0] not in ("allow", "deny") or \
            words[1] not in ("tcp", "udp", "any"):
        raise ConfigError(f"rules: {text!r} is not 'allow|deny tcp|udp|any SRC DST'")
    src, sports = _endpoint(words[2])
    dst, dports = _endpoint(words[3])
    proto = {"tcp": TCP, "udp": UDP, "any": None}[words[1]]
    return Rule(words[0] == "allow", proto, src, sports, dst, dports)


class Firewall(Function):
    """examples/nf/firewall.py: the first matching rule decides a new flow; an allowed flow
    is remembered (while the table has room) so that both its directions pass after it."""

    DEFAULTS = {"rules": "allow tcp 10.1.0.0/16 198.51.100.0/24:80,"
                         "allow tcp 10.1.0.0/16 198.51.100.0/24:443,"
                         "allow udp 10.1.0.0/16 any:53,"
                         "deny tcp any 10.1.0.80/32:22,"
                         "allow tcp any 10.1.0.80/32:1-1023",
                "flows": "4096"}
    #: ``table_full`` counts allowed frames of new flows that found the table full (sent, but
    #: not remembered), not drops.
    DROPS = ("denied", "table_full")

    def __init__(self, params: Mapping[str, str]) -> None:
        super().__init__()
        self.rules = [parse_rule(r) for r in _entries(params["rules"])]
        self.capacity = int(params["flows"])
        self.flows: set[Flow] = set()

    def process(self, frame: bytes) -> bytes | None:
        flow = Flow.of(frame)
        if flow in self.flows or flow.reverse() in self.flows:
            return frame
        rule = next((r for r in self.rules if r.matches(flow)), None)
        if rule is None or not rule.allow:
            return self.drop("denied")
        if len(self.flows) < self.capacity:
            self.flows.add(flow)
        else:
            self.drops["table_full"] += 1
        return frame


class Nat(Function):
    """examples/nf/nat.py: source NAT of the inside prefix to one public address; a public
    port per (protocol, inside address, inside port), allocated in order from the range."""

    DEFAULTS = {"inside": "10.1.0.0/16", "public": "192.0.2.1", "ports": "1024-65535"}
    DROPS = ("no_port", "no_mapping", "not_nat")

    def __init__(self, params: Mapping[str, str]) -> None:
        super().__init__()
        self.inside = _prefix("inside", params["inside"])
        self.public = _address("public", params["public"])
        low, _, high = params["ports"].partition("-")
        self.next_port, self.last_port = int(low), int(high)
        self.out: dict[tuple[int, int, int], int] = {}
        self.back: dict[tuple[int, int], tuple[int, int]] = {}

    def process(self, frame: bytes) -> bytes | None:
        flow = Flow.of(frame)
        from_inside = ipaddress.IPv4Address(flow.src) in self.inside
        to_inside = ipaddress.IPv4Address(flow.dst) in self.inside
        if from_inside and not to_inside and flow.dst != self.public:
            key = (flow.proto, flow.src, flow.sport)
            if key not in self.out:
                if self.next_port > self.last_port:
                    return self.drop("no_port")
                self.out[key] = self.next_port
                self.back[(flow.proto, self.next_port)] = (flow.src, flow.sport)
                self.next_port += 1
            return rewrite(frame, src=self.public, sport=self.out[key])
        if flow.dst == self.public and not from_inside:
            inside = self.back.get((flow.proto, flow.dport))
            if inside is None:
                return self.drop("no_mapping")
            return rewrite(frame, dst=inside[0], dport=inside[1])
        return self.drop("not_nat")


def fnv1a(data: bytes) -> int:
    """32-bit FNV-1a of ``data``."""
    h = 0x811c9dc5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xffffffff
    return h


def maglev_table(names: Sequence[str], size: int) -> list[int]:
    """Maglev's lookup table (Eisenbud et al., NSDI 2016, Pseudocode 1) of ``size`` entries
    (a prime) over backends ``names``: each entry the index of a backend."""
    perms = []
    for name in names:
        digest = hashlib.sha256(name.encode()).digest()
        offset = int.from_bytes(digest[:8], "big") % size
        skip = int.from_bytes(digest[8:16], "big") % (size - 1) + 1
        perms.append((offset, skip))
    table = [-1] * size
    nexts = [0] * len(names)
    filled = 0
    while True:
        for i, (offset, skip) in enumerate(perms):
            c = (offset + nexts[i] * skip) % size
            while table[c] >= 0:
                nexts[i] += 1
                c = (offset + nexts[i] * skip) % size
            table[c] = i
            nexts[i] += 1
            filled += 1
            if filled == size:
                return table


class LoadBalancer(Function):
    """examples/nf/lb.py: each flow to the virtual address goes to the backend that Maglev's
    table gives its 5-tuple's hash; destination address and Ethernet addresses rewritten."""

    DEFAULTS = {"vip": "203.0.113.10", "mac": "02:00:00:00:00:01",
                "backends": "10.2.0.1=02:00:00:00:04:01,10.2.0.2=02:00:00:00:04:02,"
                            "10.2.0.3=02:00:00:00:04:03,10.2.0.4=02:00:00:00:04:04",
                "table": "1021"}
    DROPS = ("not_vip",)

    def __init__(self, params: Mapping[str, str]) -> None:
        super().__init__()
        self.vip = _address("vip", params["vip"])
        self.mac = _mac("mac", params["mac"])
        self.backends = []
        for entry in _entries(params["backends"]):
            addr, _, hop = entry.partition("=")
            self.backends.append((_address("backends", addr), _mac("backends", hop)))
        names = [str(ipaddress.IPv4Address(a)) for a, _ in self.backends]
        self.table = maglev_table(names, int(params["table"]))

    def backend(self, flow: Flow) -> int:
        """The index of the backend serving ``flow``."""
        key = struct.pack("!IIBHH", flow.src, flow.dst, flow.proto, flow.sport, flow.dport)
        return self.table[fnv1a(key) % len(self.table)]

    def process(self, frame: bytes) -> bytes | None:
        flow = Flow.of(frame)
        if flow.dst != self.vip:
            return self.drop("not_vip")
        addr, hop = self.backends[self.backend(flow)]
        return rewrite(frame, dst=addr, eth_dst=hop, eth_src=self.mac)


MODELS: dict[str, type[Function]] = {"forwarder": Forwarder, "firewall": Firewall,
                                     "nat": Nat, "lb": LoadBalancer}


def model(kind: str, params: Mapping[str, str] | None = None) -> Function:
    """A fresh model of ``kind`` with its defaults overridden by ``params`` (``-D`` strings)."""
    cls = MODELS[kind]
    return cls({**cls.DEFAULTS, **(params or {})})


@dataclass
class Expected:
    """What a function does with a capture: the frames it sends, in order, its counts, and
    what became of each frame (``fates[i]``: ``malformed``, ``sent`` or ``dropped``)."""

    sent: list[bytes] = field(default_factory=list)
    fates: list[str] = field(default_factory=list)
    checks: Counter[str] = field(default_factory=Counter)
    drops: Counter[str] = field(default_factory=Counter)


def run(function: Function, frames: Sequence[bytes]) -> Expected:
    """Pass ``frames`` through `check_reason` and ``function``, in order."""
    expected = Expected()
    for frame in frames:
        reason = check_reason(frame)
        if reason is not None:
            expected.checks[reason] += 1
            expected.fates.append("malformed")
            continue
        expected.checks["passed"] += 1
        out = function.process(frame)
        if out is not None:
            expected.sent.append(out)
        expected.fates.append("dropped" if out is None else "sent")
    expected.drops = Counter(function.drops)
    return expected


def expect(kind: str, frames: Sequence[bytes],
           params: Mapping[str, str] | None = None) -> Expected:
    """`run` of a fresh model of ``kind``."""
    return run(model(kind, params), frames)

