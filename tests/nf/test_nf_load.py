"""examples/nf/load.py, the load generator of the network functions, without them.

The workload (sizes, payload formats, flows, determinism), the pcap it writes, and live
runs against small fake servers in this process: an echo (whose replies a sequencer
check must reject), one that answers only some packets (timeouts), and the command line's
errors.
"""
from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator

import dpkt
import pytest

from .helpers import NF, load

LOAD = f"{NF}/load.py"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, LOAD, *args], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("kind,options,lengths", [
    ("aes", (), {1018}),                                   # 976 bytes: whole AES blocks
    ("aes", ("--size", "100"), {90}),
    ("flowclass", (), {80}),
    ("flowclass", ("--min-size", "60", "--flows", "7"), set(range(60, 81))),
    ("sequencer", (), {1024}),
])
def test_pcap_count_and_sizes(kind: str, options: tuple[str, ...], lengths: set[int],
                              tmp_path, capsys) -> None:
    path = tmp_path / "out.pcap"
    assert load.main([kind, "--pcap", str(path), "--count", "300", *options]) == 0
    assert capsys.readouterr().out == f"wrote 300 {kind} frames to {path}\n"
    with open(path, "rb") as f:
        frames = [dpkt.ethernet.Ethernet(data) for _, data in dpkt.pcap.Reader(f)]
    assert len(frames) == 300
    assert {len(bytes(f)) for f in frames} <= lengths
    assert len(lengths) == 1 or len({len(bytes(f)) for f in frames}) > 10
    udp = [f.data.data for f in frames]
    assert all(u.dport == 9000 and u.ulen == 8 + len(u.data) for u in udp)
    if "--flows" in options:
        assert len({(f.data.src, u.sport) for f, u in zip(frames, udp)}) == 7


def test_payload_formats() -> None:
    sent = load.packets("sequencer", 2000, seed=9)
    assert sent == load.packets("sequencer", 2000, seed=9) != load.packets("sequencer", 2000)
    bitmaps = [int.from_bytes(p.payload[:2], "big") for p in sent]
    assert all(0 < b < 1 << 10 for b in bitmaps)
    assert 4.8 < sum(bin(b).count("1") for b in bitmaps) / len(bitmaps) < 5.2
    assert all(p.payload[2:load.SLOTS] == bytes(80) for p in sent)
    assert [load.packet_number("sequencer", p.payload) for p in sent] == list(range(2000))
    flows = load.packets("flowclass", 5000, flows=100, zipf=1.0)
    assert [load.packet_number("flowclass", p.payload) for p in flows] == list(range(5000))
    assert all(p.payload[:8] == bytes(8) for p in flows)
    popular = Counter(p.flow for p in flows).most_common()
    assert popular[0][0] == 0 and popular[0][1] > 3 * popular[10][1]
    uniform = Counter(p.flow for p in load.packets("flowclass", 5000, flows=10, zipf=0))
    assert max(uniform.values()) < 1.3 * min(uniform.values())


@contextlib.contextmanager
def fake_server(answer: Callable[[int, bytes], bytes | None]) -> Iterator[str]:
    """A UDP server on 127.0.0.1 answering the i-th datagram with ``answer(i, datagram)``
    (None: no answer); yields HOST:PORT."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.05)
    stop = threading.Event()

    def serve() -> None:
        count = 0
        while not stop.is_set():
            try:
                data, peer = sock.recvfrom(65536)
            except TimeoutError:
                continue
            reply = answer(count, data)
            count += 1
            if reply is not None:
                sock.sendto(reply, peer)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        sock.close()


def test_live_summary_and_checks() -> None:
    with fake_server(lambda i, data: data) as echo:
        result = run_cli("sequencer", "--server", echo, "--count", "500", "--window", "8")
        assert result.returncode == 0, result.stderr
        first, latency, dropped, errors = result.stdout.splitlines()
        assert first.startswith("sequencer: sent 500, received 500 in ")
        assert first.endswith(" packets/s)") and latency.startswith("latency: p50 ")
        assert (dropped, errors) == ("dropped: 0 timeouts, 0 late, 0 unknown", "errors: 0")
        checked = load.run_live("sequencer", load.packets("sequencer", 50), echo, check=True)
        assert not checked.ok and "a number was given twice" in checked.errors[0]
        summary = load.run_live("flowclass", load.packets("flowclass", 300), echo, rate=3000,
                                check=True)
        assert summary.received == 300 and summary.elapsed >= 0.09
        assert len(summary.errors) == 300 and "is below" in summary.errors[0]


def test_live_timeouts() -> None:
    with fake_server(lambda i, data: None if i % 3 == 0 else data) as lossy:
        summary = load.run_live("aes", load.packets("aes", 30, size=100), lossy, window=4,
                                timeout=0.1)
    assert (summary.sent, summary.received, summary.timeouts) == (30, 20, 10)
    assert not summary.ok


@pytest.mark.parametrize("args,message", [
    (("aes", "--pcap", "x", "--size", "50"), "aes frames must be from 58 to 65549 bytes, not 50"),
    (("sequencer", "--pcap", "x", "--size", "100"), "sequencer frames must be from 132"),
    (("aes", "--pcap", "x", "--min-size", "60"), "--min-size is for flowclass"),
    (("flowclass", "--pcap", "x", "--min-size", "90"), "the least flowclass frame must be"),
    (("aes", "--server", "127.0.0.1:9", "--window", "2", "--rate", "5"), "not allowed with"),
])
def test_command_line_errors(args: tuple[str, ...], message: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit:
        load.main(args)
    assert exit.value.code == 2
    assert message in capsys.readouterr().err
