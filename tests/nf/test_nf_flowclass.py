"""examples/nf/flowclass.py: each reply carries its flow's byte count from a count-min sketch.

The reference is the true cumulative byte count of each packet's flow, up to and
including the packet, in the order the packets were processed (one thread: the order of
a capture, or of a live closed loop of window 1). The estimate is never below it, and with
a sketch much wider than the flows used it is exactly it (so it is not just large); a
narrow sketch overestimates. Payloads too short for the estimate are dropped and counted.
"""
from __future__ import annotations

import shutil
from collections import Counter

import pytest

from .helpers import load, replay, reply_frame, serving

needs_mips = pytest.mark.skipif(shutil.which("mips64-linux-gnuabi64-gcc") is None,
                                reason="no mips64 cross compiler")


def exact_counts(sent: list) -> list[int]:
    """Each packet's flow's bytes up to and including it, in the order of ``sent``."""
    totals: Counter[int] = Counter()
    counts = []
    for p in sent:
        totals[p.flow] += p.frame_len
        counts.append(totals[p.flow])
    return counts


def estimates(replies: list[bytes]) -> list[int]:
    """The estimates replies carry: the first 8 bytes of the UDP payload, big-endian."""
    return [int.from_bytes(r[42:50], "big") for r in replies]


@pytest.fixture(scope="module")
def workload() -> tuple[list, list[bytes]]:
    """300 packets of 40 flows, 58 to 80 bytes, and the frames to replay: those, with a
    payload of 7 bytes and a frame cut in its IPv4 header among them."""
    sent = load.packets("flowclass", 300, seed=3, flows=40, min_size=58)
    frames = [load.frame(p) for p in sent]
    short = load.frame(load.Packet(300, 0, bytes(7)))
    return sent, frames[:100] + [short] + frames[100:] + [frames[0][:30]]


@pytest.mark.parametrize("device,nic", [
    ("cpu", "emu"), ("nic", "emu"), pytest.param("nic", "liquidio", marks=needs_mips)])
def test_replay_estimates_are_exact_when_wide(workload, device: str, nic: str, tmp_path) -> None:
    sent, frames = workload
    report, replies = replay("flowclass", frames, tmp_path, f"device={device}", nic=nic)
    assert replies == [reply_frame(load.frame(p), r[42:]) for p, r in zip(sent, replies)]
    assert [r[50:] for r in replies] == [p.payload[8:] for p in sent]
    assert estimates(replies) == exact_counts(sent)
    assert report("state drops") == {"too_short": 1}
    assert report("net pcap")["freed"] == 2


def test_narrow_sketch_overestimates(workload, tmp_path) -> None:
    sent, frames = workload
    _, replies = replay("flowclass", frames, tmp_path, "width=8", "depth=2")
    pairs = list(zip(estimates(replies), exact_counts(sent), strict=True))
    assert all(estimate >= exact for estimate, exact in pairs)
    assert sum(estimate > exact for estimate, exact in pairs) > len(pairs) // 2


def test_live_closed_loop() -> None:
    """Over UDP from 30 sockets (flows), one packet at a time: exact counts; then a window of
    32, checked by the load generator (each estimate at least what was answered before)."""
    one = load.packets("flowclass", 400, seed=4, flows=30, min_size=60)
    more = load.packets("flowclass", 400, seed=5, flows=30)
    with serving("flowclass") as served:
        server = f"127.0.0.1:{served.port}"
        summary = load.run_live("flowclass", one, server, window=1, check=True)
        assert summary.ok and summary.order == list(range(400))
        got = [int.from_bytes(summary.replies[p.number][:8], "big") for p in one]
        assert got == load.flow_bounds(one, summary.order, summary.seen) == exact_counts(one)
        summary = load.run_live("flowclass", more, server, window=32, check=True)
        assert summary.ok and summary.received == 400, summary.format()
    assert served.report("state drops") == {"too_short": 0}
