"""examples/nf/sequencer.py: per-group sequence numbers, dense and in one order.

Live over UDP with two threads, on the CPU and on the emulated NIC, from 16 client
sockets (so that both threads get packets): every group's numbers are exactly 1..n, and
ordering each group's packets by their numbers gives a graph without cycles (the
numbers of all groups agree on one order). A capture replayed on the CPU and on the
big-endian LiquidIO NIC checks the payload format: slots of groups not named come back
as they were, and short payloads and groups above 9 are dropped and counted.
"""
from __future__ import annotations

import shutil
import socket

import pytest

from .helpers import load, replay, reply_frame, serving

needs_mips = pytest.mark.skipif(shutil.which("mips64-linux-gnuabi64-gcc") is None,
                                reason="no mips64 cross compiler")
SLOTS = load.SLOTS


def with_marked_slots(packet):
    """``packet`` with the slots of the groups it does not name filled with 0xa5 bytes."""
    named = int.from_bytes(packet.payload[:2], "big")
    payload = bytearray(packet.payload)
    for g in range(load.GROUPS):
        if not named >> g & 1:
            payload[2 + 8 * g:10 + 8 * g] = b"\xa5" * 8
    return load.Packet(packet.number, packet.flow, bytes(payload))


def malformed() -> list[bytes]:
    """Payloads to drop: one byte short of the slots (too_short), group 10 named (bad_groups)."""
    return [bytes(SLOTS - 1), (1 << 10 | 1).to_bytes(2, "big") + bytes(SLOTS + 8 - 2)]


@pytest.mark.parametrize("device", ["cpu", "nic"])
def test_live_two_cores_dense_and_ordered(device: str) -> None:
    sent = load.packets("sequencer", 3000, seed=7, flows=16)
    with serving("sequencer", f"device={device}", "cores=2") as served:
        summary = load.run_live("sequencer", sent, f"127.0.0.1:{served.port}", window=32,
                                check=True)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(0.3)
            for payload in malformed():
                s.sendto(payload, ("127.0.0.1", served.port))
            with pytest.raises(socket.timeout):
                s.recv(2048)
    assert summary.ok and summary.received == 3000, summary.format()
    assert load.sequencer_errors(sent, summary.replies, dense=True) == []
    assert served.report("state drops") == {"too_short": 1, "bad_groups": 1}
    threads = served.report.thread_packets("sequencer")
    assert len(threads) == 2 and min(threads) > 0, threads


@pytest.mark.parametrize("device,nic", [("cpu", "emu"),
                                        pytest.param("nic", "liquidio", marks=needs_mips)])
def test_replay_payload_format(device: str, nic: str, tmp_path) -> None:
    sent = [with_marked_slots(p) for p in load.packets("sequencer", 200, seed=8, size=300)]
    empty = load.Packet(200, 0, bytes(SLOTS + 8))
    bad = [load.frame(load.Packet(201 + i, 0, p)) for i, p in enumerate(malformed())]
    frames = [load.frame(p) for p in sent]
    replayed = frames[:50] + bad[:1] + frames[50:] + [load.frame(empty)] + bad[1:]
    report, replies = replay("sequencer", replayed, tmp_path, f"device={device}", nic=nic)
    assert [reply_frame(f, r[42:]) for f, r in zip(frames, replies)] == replies[:200]
    assert replies[200:] == [reply_frame(load.frame(empty), empty.payload)]
    assert load.sequencer_errors(sent, {p.number: r[42:] for p, r in zip(sent, replies)},
                                 dense=True) == []
    assert report("state drops") == {"too_short": 1, "bad_groups": 1}
