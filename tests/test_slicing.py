"""Frames across CPU and NIC, and payloads kept on the NIC (payload slicing, docs/slicing.md).

tests/slicing/forward.py decrements the TTL of every IPv4 frame (its checksum updated) and
drops malformed frames and expiring ones. Whatever its placement (all on the CPU, all on
the NIC, split: packet I/O on the NIC and the forwarding on the CPU, or the reverse) and
with slicing on or off, a capture replayed through it must come out byte for byte as a Python model of the
step says, with the kept-frame pool doing what its counters say. Over TCP, the split
placement writes each message back on its connection, in order.
"""
from __future__ import annotations

import random
import re
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import dpkt
import pytest

from conftest import ROOT, floem, floem_command, wait_until
from test_stream_echo import free_tcp_port, read_exactly

APP = str(Path(ROOT) / "tests" / "slicing" / "forward.py")
SIZES = (60, 64, 128, 300, 511, 512, 600, 1024, 1518)


def workload(seed: int = 7, count: int = 240) -> list[bytes]:
    """UDP and TCP frames of every size in `SIZES`, TTLs of 1, 2 and 64, and malformed ones
    (truncated, not IPv4, IPv4 options, a fragment, a bad total length)."""
    rng = random.Random(seed)
    frames = []
    for i in range(count):
        size = SIZES[i % len(SIZES)]
        proto = dpkt.tcp.TCP if i % 3 == 0 else dpkt.udp.UDP
        head = 14 + 20 + (20 if proto is dpkt.tcp.TCP else 8)
        body = bytes(rng.getrandbits(8) for _ in range(max(0, size - head)))
        l4 = proto(sport=1000 + i, dport=80, data=body)
        if proto is dpkt.udp.UDP:
            l4.ulen = len(l4)
        ip = dpkt.ip.IP(src=bytes([10, 0, 0, 1 + i % 200]), dst=b"\x0a\x01\x00\x01",
                        p=6 if proto is dpkt.tcp.TCP else 17, ttl=rng.choice((1, 2, 64)),
                        data=l4)
        raw = bytes(dpkt.ethernet.Ethernet(src=b"\x02\0\0\0\0\1", dst=b"\x02\0\0\0\0\2",
                                           type=0x0800, data=ip))
        kind = i % 29
        if kind == 3:
            raw = raw[:30]                                      # truncated
        elif kind == 5:
            raw = raw[:12] + b"\x86\xdd" + raw[14:]             # not IPv4
        elif kind == 7:
            raw = raw[:14] + b"\x46" + raw[15:]                 # claims IPv4 options
        elif kind == 11:
            raw = raw[:20] + b"\x20\x00" + raw[22:]             # more fragments
        elif kind == 13:
            raw = raw[:16] + b"\xff\xff" + raw[18:]             # total length past the end
        frames.append(raw)
    return frames


def forwarded(frame: bytes) -> bytes | None:
    """What the step sends for `frame` (None: dropped): TTL - 1, the IPv4 header checksum
    computed again from scratch."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[14] != 0x45:
        return None
    total = int.from_bytes(frame[16:18], "big")
    if total < 20 or 14 + total > len(frame) or int.from_bytes(frame[20:22], "big") & 0x3fff:
        return None
    proto = frame[23]
    if proto == 17 and (total < 28 or not 8 <= int.from_bytes(frame[38:40], "big") <= total - 20):
        return None
    if proto == 6 and (total < 40 or frame[46] >> 4 != 5):
        return None
    if proto not in (6, 17) or frame[22] <= 1:
        return None
    header = bytearray(frame[14:34])
    header[8] -= 1
    header[10:12] = b"\0\0"
    s = sum(int.from_bytes(header[k:k + 2], "big") for k in range(0, 20, 2))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    header[10:12] = (~s & 0xffff).to_bytes(2, "big")
    return frame[:14] + bytes(header) + frame[34:]


def replay(tmp_path: Path, *options: str, nic: str = "emu") -> tuple[list[bytes], str]:
    """Run the app over `workload()` with `options`; the frames it sent and its stderr."""
    src, out = tmp_path / "in.pcap", tmp_path / f"out{len(list(tmp_path.iterdir()))}.pcap"
    if not src.exists():
        with open(src, "wb") as f:
            writer = dpkt.pcap.Writer(f, snaplen=65535)
            for k, frame in enumerate(workload()):
                writer.writepkt(frame, ts=k / 1000)
    result = floem("run", APP, *options, "--nic", nic, "--net", "pcap", "--pcap-in", str(src),
                   "--pcap-out", str(out), "--duration", "1" if nic == "emu" else "4",
                   "--report", timeout=300)
    assert result.returncode == 0, result.stderr
    with open(out, "rb") as f:
        return [bytes(data) for _, data in dpkt.pcap.Reader(f)], result.stderr


def frames_counters(stderr: str, process: str = "nic") -> dict[str, int]:
    """The numbers of the ``floem: frames (process PROCESS): ...`` line of the process that
    keeps frames."""
    line = next(ln for ln in stderr.splitlines()
                if ln.startswith(f"floem: frames (process {process})"))
    return {k: int(v) for k, v in re.findall(r"(\w+) (\d+)", line.split("):", 1)[1])}


def _checked(frame: bytes) -> bool:
    """Passed by CheckFrame (by the port): well formed, whatever its TTL."""
    alive = bytearray(frame)
    if len(alive) > 22:
        alive[22] = 64
    return forwarded(bytes(alive)) is not None


EXPECTED = [f for f in map(forwarded, workload()) if f is not None]
CHECKED = [f for f in workload() if _checked(f)]
PLACEMENTS = [
    ["-D", "device=cpu"],
    ["-D", "device=nic"],
    ["-D", "device=split"],
    ["-D", "device=split", "--no-slicing"],
    ["-D", "device=split", "--send-all-fields"],
    ["-D", "device=split", "--slice-threshold", "0"],
    ["-D", "device=reverse", "--slice-threshold", "0"],
]


def test_the_workload_has_every_kind_of_frame():
    assert 0 < len(EXPECTED) < len(CHECKED) < len(workload())
    assert {len(f) for f in EXPECTED} >= {64, 512, 1518}


@pytest.mark.parametrize("options", PLACEMENTS, ids=" ".join)
def test_every_placement_forwards_as_the_model_says(tmp_path, options):
    sent, stderr = replay(tmp_path, *options)
    assert sent == EXPECTED
    if "device=cpu" not in options and "device=nic" not in options \
            and "--no-slicing" not in options and "--send-all-fields" not in options:
        threshold = 0 if "--slice-threshold" in options else 512
        kept = frames_counters(stderr, "nic" if "device=split" in options else "forward")
        assert kept["kept"] == sum(1 for f in CHECKED if len(f) >= threshold)
        assert kept["taken"] == sum(1 for f in EXPECTED if len(f) >= threshold)
        assert kept["dropped"] == kept["kept"] - kept["taken"]     # expired TTLs, sent back
        assert kept["stale"] == kept["full"] == kept["expired"] == kept["held"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("options", PLACEMENTS[1:], ids=" ".join)
def test_every_placement_forwards_as_the_model_says_on_liquidio(tmp_path, options):
    sent, _ = replay(tmp_path, *options, nic="liquidio")
    assert sent == EXPECTED


def test_a_full_pool_sends_frames_whole(tmp_path):
    sent, stderr = replay(tmp_path, "-D", "device=split", "--slice-threshold", "0",
                          "--slice-pool", "1")
    assert sent == EXPECTED
    kept = frames_counters(stderr)
    assert kept["full"] > 0 and kept["kept"] + kept["full"] == len(CHECKED)


def test_a_reclaimed_frame_is_never_spliced_onto_another(tmp_path):
    sent, stderr = replay(tmp_path, "-D", "device=split", "--slice-threshold", "0",
                          "--slice-pool", "4", "--slice-timeout", "0")
    kept = frames_counters(stderr)
    assert kept["expired"] > 0 and kept["stale"] > 0
    assert kept["kept"] == kept["taken"] + kept["dropped"] + kept["expired"] + kept["held"]
    # Only the frames taken back by their reference went out, each one the model sends.
    assert set(sent) <= set(EXPECTED) and len(sent) == kept["taken"] < len(EXPECTED)


def test_the_report_shows_the_header_window(tmp_path):
    result = floem("build", APP, "-D", "device=split", "--net", "pcap", "-o",
                   str(tmp_path / "out"), "--report")
    assert result.returncode == 0, result.stderr
    assert "pkt (bytes 0-26)" in result.stdout
    assert "bytes 0-26 cross, the rest stays where the frame arrived" in result.stdout
    whole = floem("build", APP, "-D", "device=split", "--net", "pcap", "--no-slicing", "-o",
                  str(tmp_path / "whole"), "--report")
    assert "pkt (whole)" in whole.stdout and "'LoadFrame0'" in whole.stdout


@pytest.mark.slow
def test_stream_messages_keep_their_connection_across_the_host(tmp_path):
    """Over --net tcp (forward.py's FromNet frames length-prefixed messages), split: each
    message's frame crosses to the host and back, sliced or (under the threshold) whole, and
    is written on its connection in order: the client reads back what it sent; every frame
    was kept by the NIC, the short ones too (their buffer is their connection)."""
    port = free_tcp_port()
    err = tmp_path / "stderr"
    with open(err, "w") as f:
        proc = subprocess.Popen(floem_command() + ["run", APP, "-D", "device=split", "--net",
                                                   "tcp", "--port", str(port), "--report",
                                                   "--timeout", "300"],
                                stdout=subprocess.DEVNULL, stderr=f, text=True)
    try:
        wait_until(lambda: "floem: net tcp: ready" in err.read_text(), "ready", proc, 300)
        stream = b"".join(struct.pack(">I", n) + bytes([n % 251]) * n
                          for n in (0, 1, 100, 1500, 1990, 200) * 20)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(stream)
            assert read_exactly(s, len(stream)) == stream
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    assert frames_counters(err.read_text())["kept"] == 120, err.read_text()
