"""The shallow network functions of examples/nf (forwarder, firewall, nat, lb).

Each replays a capture of examples/nf/traffic.py (UDP and TCP flows both ways, frames of
64 to 1518 bytes, malformed and truncated frames among them). What it sends must be, byte
for byte, what examples/nf/shallow_model.py computes (every changed checksum recomputed
from scratch there, updated incrementally in the apps), whatever the placement (``split``,
``cpu``, ``nic``) and slicing mode, so the placements and modes send the same bytes as each
other; every checksum it sends is verified with dpkt; the
frames and drops it counts are the model's, and every frame not sent is freed where it was
received. Fast cases run the emulated NIC on a mixed-size capture; slow ones the LiquidIO
NIC under qemu and every size.
"""
from __future__ import annotations

import ipaddress
import random
import re
import shutil
import sys
from collections import Counter
from collections.abc import Sequence

import dpkt
import pytest

from conftest import floem
from .helpers import NF, Report, app, defines
from .helpers import replay as replay_for

sys.path.insert(0, NF)
import shallow_model  # noqa: E402
import traffic  # noqa: E402

KINDS = ("forwarder", "firewall", "nat", "lb")
#: (device, build options): every placement, and split with slicing off.
PLACEMENTS = [("split", ()), ("split", ("--no-slicing",)), ("cpu", ()), ("nic", ())]
#: The placements each function runs in the fast suite besides split with and without
#: slicing (test_replay_every_size, slow, runs them all).
FAST = {"forwarder": ("cpu",), "firewall": ("nic",), "nat": ("cpu",), "lb": ("nic",)}
ALL_SIZES = (64, 65, 128, 256, 511, 512, 1024, 1500, 1518)
#: Frames shorter than this cross whole (floem build --slice-threshold's default).
THRESHOLD = 512
#: Seconds a replay on the emulated NIC runs: three segments and the NIC's threads share the
#: machine's cores, and a frame the run did not send in time fails the comparison.
SECONDS = "1.5"
needs_mips = pytest.mark.skipif(shutil.which("mips64-linux-gnuabi64-gcc") is None,
                                reason="no mips64 cross compiler")


def replay(kind: str, frames: list[bytes], tmp_path, *values: str, nic: str = "emu",
           options: Sequence[str] = (), duration: str = SECONDS) -> tuple[Report, list[bytes]]:
    """`helpers.replay` for `SECONDS` unless told otherwise."""
    return replay_for(kind, frames, tmp_path, *values, nic=nic, options=options,
                      duration=duration)


def placement_id(placement: tuple[str, Sequence[str]]) -> str:
    """``split``, ``split-no-slicing``, ..."""
    device, options = placement
    return "-".join([device, *(o.lstrip("-") for o in options)])


def check_frame_counts(report: Report) -> tuple[int, int]:
    """(passed, dropped) of the run's `CheckFrame`, from its element counters."""
    match = re.search(r"floem:\s+CheckFrame\d*\s+\S+\s+(\d+)\s+\d+\s+out (\d+), drop (\d+)",
                      report.stderr)
    assert match, report.stderr
    return int(match[2]), int(match[3])


def verify_checksums(frame: bytes) -> None:
    """The IPv4 checksum of ``frame`` and its TCP or UDP checksum (unless a UDP 0) are right,
    by dpkt's own computation."""
    eth = dpkt.ethernet.Ethernet(frame)
    ip = eth.data
    header = bytearray(frame[14:34])
    header[10:12] = b"\0\0"
    assert ip.sum == dpkt.dpkt.in_cksum(bytes(header))
    segment = bytearray(frame[34:14 + ip.len])
    at = shallow_model.L4_CHECKSUM_AT[ip.p]
    stored = int.from_bytes(segment[at:at + 2], "big")
    if ip.p == shallow_model.UDP and stored == 0:
        return
    segment[at:at + 2] = b"\0\0"
    pseudo = ip.src + ip.dst + bytes([0, ip.p]) + len(segment).to_bytes(2, "big")
    expected = dpkt.dpkt.in_cksum(pseudo + bytes(segment))
    if ip.p == shallow_model.UDP and expected == 0:
        expected = 0xffff
    assert stored == expected


def check_run(kind: str, frames: list[bytes], report: Report, sent: list[bytes],
              params: dict[str, str] | None = None, placement=("split", ())) -> None:
    """``sent`` and ``report`` are what the model says of ``frames``, run in ``placement``
    (device, build options): see `check_buffers`."""
    expected = shallow_model.expect(kind, frames, params)
    assert len(sent) == len(expected.sent)
    mismatched = [i for i, (a, b) in enumerate(zip(sent, expected.sent)) if a != b]
    assert not mismatched, f"{len(mismatched)} frames differ from the model, first #{mismatched[0]}"
    for frame in sent:
        verify_checksums(frame)
    passed = expected.checks["passed"]
    assert check_frame_counts(report) == (passed, len(frames) - passed)
    assert report("state checks") == {"passed": passed}, report.stderr
    model_cls = shallow_model.MODELS[kind]
    assert report("state drops") == {r: expected.drops[r] for r in model_cls.DROPS}, \
        report.stderr
    check_buffers(frames, expected, report, placement)


def check_buffers(frames: list[bytes], expected: shallow_model.Expected, report: Report,
                  placement) -> None:
    """Every received frame's buffer was sent or given back to the network, where it was
    received. Placed ``split`` with slicing, the NIC kept every checked frame of
    `THRESHOLD` bytes or more while its headers were on the host: the function's frames
    were taken back and sent in their own buffers, its drops dropped by reference, nothing
    expired or refused. Frames crossing whole leave their buffer behind (given back) and
    are sent in a new one."""
    device, options = placement
    sliced = device == "split" and "--no-slicing" not in options
    kept = [fate for frame, fate in zip(frames, expected.fates)
            if sliced and fate != "malformed" and len(frame) >= THRESHOLD]
    pool = report("frames")
    if sliced:
        assert pool == {"kept": len(kept), "taken": kept.count("sent"), "full": 0, "stale": 0,
                        "expired": 0, "dropped": kept.count("dropped"), "held 0 of": 1024}
    else:
        assert pool.get("kept", 0) == 0
    in_own_buffer = kept.count("sent") if device == "split" else len(expected.sent)
    net = report("net pcap")
    assert (net["rx"], net["tx"], net["freed"]) == (len(frames), len(expected.sent),
                                                    len(frames) - in_own_buffer)


@pytest.fixture(scope="module")
def mixed() -> dict[str, list[bytes]]:
    """Per function: 300 frames of 64 and 1518 bytes, 15% malformed."""
    return {kind: traffic.frames(kind, 300, (64, 1518), seed=11, flows=24, malformed=0.15)
            for kind in KINDS}


def check_affinity(frames: list[bytes], sent: list[bytes]) -> None:
    """The load balancer sent every frame of a flow to one backend, and used all four."""
    vip = ipaddress.IPv4Address("203.0.113.10").packed
    to_vip = [f for f in frames if shallow_model.check_reason(f) is None and f[30:34] == vip]
    assert len(sent) == len(to_vip)
    backends: dict[shallow_model.Flow, set[bytes]] = {}
    for request, out in zip(to_vip, sent):
        backends.setdefault(shallow_model.Flow.of(request), set()).add(out[30:34])
    assert all(len(b) == 1 for b in backends.values())
    assert len(set().union(*backends.values())) == 4


@pytest.mark.parametrize("kind,placement", [
    pytest.param(kind, p, id=f"{kind}-{placement_id(p)}") for kind in KINDS for p in PLACEMENTS
    if p[0] == "split" or p[0] in FAST[kind]])
def test_replay_matches_model(kind: str, placement, mixed, tmp_path) -> None:
    device, options = placement
    report, sent = replay(kind, mixed[kind], tmp_path, f"device={device}", options=options)
    check_run(kind, mixed[kind], report, sent, placement=placement)
    if kind == "lb":
        check_affinity(mixed[kind], sent)


#: Parameters that take each function's rarer decisions: no default route, a table too
#: small for the flows, ports running out, other backends.
EDGE_PARAMS = {
    "forwarder": {"routes": "10.1.0.0/16=02:00:00:00:01:01,198.51.100.128/25=02:00:00:00:02:01,"
                            "198.51.100.0/24=02:00:00:00:02:02", "mac": "02:aa:bb:cc:dd:ee"},
    "firewall": {"flows": "3", "rules": "allow any 10.1.0.0/16 any,deny udp any any"},
    "nat": {"ports": "40000-40005", "public": "192.0.2.1"},
    "lb": {"backends": "10.3.0.1=02:00:00:00:05:01,10.3.0.2=02:00:00:00:05:02", "table": "13"},
}


@pytest.mark.parametrize("kind", [
    "firewall", "nat", pytest.param("forwarder", marks=pytest.mark.slow),
    pytest.param("lb", marks=pytest.mark.slow)])
def test_edge_parameters(kind: str, tmp_path) -> None:
    params = EDGE_PARAMS[kind]
    frames = traffic.frames(kind, 300, (64, 200), seed=5, flows=24, malformed=0.05,
                            params=params)
    expected = shallow_model.expect(kind, frames, params)
    rare = {"forwarder": "no_route", "firewall": "table_full", "nat": "no_port",
            "lb": None}[kind]
    if rare:
        assert expected.drops[rare] > 0
    report, sent = replay(kind, frames, tmp_path, "device=split",
                          *(f"{k}={v}" for k, v in params.items()))
    check_run(kind, frames, report, sent, params)


def test_any_slicing_options_send_the_same(tmp_path) -> None:
    """Slicing every frame (threshold 60) into a pool too small for the frames in flight:
    frames the pool cannot keep cross whole, and what is sent is still the model's."""
    frames = traffic.frames("nat", 300, (64, 300, 1518), seed=13, flows=24, malformed=0.1)
    report, sent = replay("nat", frames, tmp_path, "device=split",
                          options=("--slice-threshold", "60", "--slice-pool", "8"))
    expected = shallow_model.expect("nat", frames)
    assert sent == expected.sent
    pool = report("frames")
    assert pool["kept"] + pool["full"] == expected.checks["passed"]
    assert pool["kept"] == pool["taken"] + pool["dropped"]
    assert (pool["stale"], pool["expired"]) == (0, 0)


def test_firewall_passes_replies_of_allowed_flows_only(tmp_path) -> None:
    """A flow started from outside is denied; its inside end's answers too. A flow the rules
    allow from inside is answered through the table, though no rule allows the answers."""
    build = traffic.build
    rng = random.Random(1)
    inside, outside = int(ipaddress.IPv4Address("10.1.2.3")), int(ipaddress.IPv4Address(
        "198.51.100.7"))
    tcp = shallow_model.TCP
    frames = [build(tcp, outside, 5555, inside, 80, 64, rng),         # denied: no rule
              build(tcp, inside, 80, outside, 5555, 64, rng),         # its answer: denied
              build(tcp, inside, 40000, outside, 443, 64, rng),       # allowed, remembered
              build(tcp, outside, 443, inside, 40000, 64, rng),       # answer: established
              build(tcp, outside, 443, inside, 40001, 64, rng)]       # another port: denied
    report, sent = replay("firewall", frames, tmp_path, "device=split")
    assert sent == [frames[2], frames[3]]
    assert report("state drops") == {"denied": 3, "table_full": 0}


def test_nat_translates_both_ways(tmp_path) -> None:
    """Two inside endpoints get the first two ports; an answer to the second goes back to
    it, with its checksums right; an answer to a port not given out is dropped."""
    rng = random.Random(2)
    a, b = (int(ipaddress.IPv4Address(x)) for x in ("10.1.0.5", "10.1.9.9"))
    server, public = (int(ipaddress.IPv4Address(x)) for x in ("198.51.100.1", "192.0.2.1"))
    udp, tcp = shallow_model.UDP, shallow_model.TCP
    frames = [traffic.build(udp, a, 1111, server, 53, 100, rng),
              traffic.build(tcp, b, 2222, server, 80, 100, rng),
              traffic.build(tcp, server, 80, public, 30001, 100, rng),
              traffic.build(tcp, server, 80, public, 30002, 100, rng)]
    report, sent = replay("nat", frames, tmp_path, "device=split", "ports=30000-30099")
    flows = [shallow_model.Flow.of(f) for f in sent]
    assert [(f.src, f.sport) for f in flows[:2]] == [(public, 30000), (public, 30001)]
    assert (flows[2].dst, flows[2].dport) == (b, 2222)
    assert len(sent) == 3
    for frame in sent:
        verify_checksums(frame)
    assert report("state drops") == {"no_port": 0, "no_mapping": 1, "not_nat": 0}


@pytest.mark.parametrize("kind,value,message", [
    ("forwarder", "routes=10.0.0.1/8=02:00:00:00:00:01", "is not an IPv4 prefix"),
    ("forwarder", "mac=02:00:00:00:01", "is not an Ethernet address"),
    ("firewall", "rules=allow tcp any", "is not 'allow|deny tcp|udp|any SRC DST'"),
    ("firewall", "rules=allow tcp any:99999 any", "is not a port or port range"),
    ("nat", "ports=2000-1000", "is not a port or port range"),
    ("nat", "public=10.1.0.1", "is inside -D inside="),
    ("lb", "table=1000", "must be a prime"),
    ("lb", "backends=10.2.0.1", "is not ADDRESS=MAC"),
    ("forwarder", "device=gpu", "device"),
])
def test_parameter_errors(kind: str, value: str, message: str) -> None:
    result = floem("check", app(kind), *defines(value))
    assert result.returncode == 1
    assert message in result.stderr
    assert f"{app(kind)}:" in result.stderr or "device" in value
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("placement", PLACEMENTS, ids=placement_id)
@pytest.mark.parametrize("kind", KINDS)
def test_replay_every_size(kind: str, placement, tmp_path) -> None:
    frames = traffic.frames(kind, 1500, ALL_SIZES, seed=21, flows=96, malformed=0.1)
    device, options = placement
    report, sent = replay(kind, frames, tmp_path, f"device={device}", options=options,
                          duration="2")
    check_run(kind, frames, report, sent, placement=placement)
    if kind == "lb":
        check_affinity(frames, sent)


@pytest.mark.slow
@needs_mips
@pytest.mark.parametrize("placement", [p for p in PLACEMENTS if p[0] != "cpu"],
                         ids=placement_id)
@pytest.mark.parametrize("kind", KINDS)
def test_replay_liquidio(kind: str, placement, tmp_path) -> None:
    frames = traffic.frames(kind, 600, ALL_SIZES, seed=31, flows=48, malformed=0.1)
    device, options = placement
    report, sent = replay(kind, frames, tmp_path, f"device={device}", options=options,
                          nic="liquidio", duration="4")
    check_run(kind, frames, report, sent, placement=placement)


class TestModel:
    """The oracle itself, against dpkt and the properties its functions promise."""

    def test_checksum_agrees_with_dpkt(self) -> None:
        rng = random.Random(4)
        for n in (0, 1, 2, 19, 20, 1500, 1501):
            data = rng.randbytes(n)
            assert shallow_model.internet_checksum(data) == dpkt.dpkt.in_cksum(data)

    def test_rewrite_keeps_checksums_right_and_padding(self) -> None:
        rng = random.Random(5)
        for proto in (shallow_model.TCP, shallow_model.UDP):
            frame = traffic.build(proto, 1, 2, 3, 4, 128, rng, padding=10)
            out = shallow_model.rewrite(frame, src=0x0a010203, dport=9, ttl=7)
            verify_checksums(out)
            assert out[-10:] == bytes(10) and len(out) == len(frame)
        frame = traffic.build(shallow_model.UDP, 1, 2, 3, 4, 80, rng, no_checksum=True)
        assert shallow_model.rewrite(frame, dst=5)[40:42] == b"\0\0"

    @pytest.mark.parametrize("how,reasons", [
        ("short", {"truncated"}), ("cut", {"bad_ip_length"}),
        ("version", {"ip_options"}), ("ip_options", {"ip_options"}),
        ("fragment", {"fragment"}), ("ip_length_long", {"bad_ip_length"}),
        ("ip_length_short", {"bad_ip_length", "truncated"}), ("udp_length", {"bad_udp_length"}),
        ("non_ip", {"not_ipv4"}), ("other_protocol", {"not_udp_tcp"}),
        ("tcp_options", {"tcp_options"})])
    def test_every_malformation_is_caught(self, how: str, reasons: set[str]) -> None:
        rng = random.Random(6)
        for size in (64, 300, 1518):
            for proto in (shallow_model.TCP, shallow_model.UDP):
                frame = traffic.build(proto, 1, 2, 3, 4, size, rng)
                assert shallow_model.check_reason(frame) is None
                broken = traffic.break_frame(frame, how, rng)
                assert shallow_model.check_reason(broken) in reasons, (how, size, proto)

    def test_maglev_spreads_and_moves_few_flows(self) -> None:
        names = [f"10.2.0.{i}" for i in range(1, 6)]
        table = shallow_model.maglev_table(names, 1021)
        shares = Counter(table)
        assert set(shares) == set(range(5))
        assert max(shares.values()) - min(shares.values()) <= 1       # turns of one entry
        smaller = shallow_model.maglev_table(names[:4], 1021)
        moved = sum(1 for a, b in zip(table, smaller) if a != 4 and a != b)
        assert moved < 0.1 * 1021          # only entries of the removed backend move, mostly

    def test_nat_runs_out_of_ports(self) -> None:
        nat = shallow_model.model("nat", {"ports": "100-101"})
        rng = random.Random(7)
        server = int(ipaddress.IPv4Address("198.51.100.1"))
        outs = [nat.process(traffic.build(6, 0x0a010000 + i, 1000, server, 80, 64, rng))
                for i in range(3)]
        assert [shallow_model.Flow.of(o).sport for o in outs[:2]] == [100, 101]
        assert outs[2] is None and nat.drops == {"no_port": 1}


class TestTraffic:
    """examples/nf/traffic.py."""

    def test_deterministic_sizes_and_checksums(self) -> None:
        frames = traffic.frames("nat", 500, (64, 1518), seed=9, malformed=0)
        assert frames == traffic.frames("nat", 500, (64, 1518), seed=9, malformed=0)
        assert frames != traffic.frames("nat", 500, (64, 1518), seed=10, malformed=0)
        assert {len(f) for f in frames} == {64, 1518}
        for frame in frames:
            assert shallow_model.check_reason(frame) is None
            verify_checksums(frame)

    def test_every_decision_is_taken(self) -> None:
        for kind in KINDS:
            frames = traffic.frames(kind, 2000, (64, 1518), seed=1)
            expected = shallow_model.expect(kind, frames)
            assert set(expected.checks) == {"passed", *shallow_model.CHECK_REASONS}, kind
            assert 0.3 * len(frames) < len(expected.sent) < len(frames), kind
            never = {"forwarder": {"no_route"}, "firewall": {"table_full"},
                     "nat": {"no_port"}, "lb": set()}[kind]
            assert set(expected.drops) == set(shallow_model.MODELS[kind].DROPS) - never, kind

    def test_command_line(self, tmp_path) -> None:
        out = tmp_path / "fw.pcap"
        assert traffic.main(["firewall", "--pcap", str(out), "--count", "50", "--size",
                             "100,200", "--seed", "3"]) == 0
        with open(out, "rb") as f:
            frames = [bytes(b) for _, b in dpkt.pcap.Reader(f)]
        assert frames == traffic.frames("firewall", 50, (100, 200), seed=3)
        with pytest.raises(SystemExit):
            traffic.main(["firewall", "--pcap", str(out), "--size", "20"])
