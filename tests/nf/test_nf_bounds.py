"""The network functions never read or write past a packet, under AddressSanitizer.

Each function, on the CPU, gets whole UDP frames whose payloads run from empty to a
little past the shortest it handles, and every prefix of one of them: it answers exactly
the payloads it can handle and counts the others in its drops (prefixes cut into the
headers are CheckUDP's).
"""
from __future__ import annotations

import os

import pytest

from .helpers import load, replay

#: Per function: payload lengths to send, those answered, and its drop counts.
CASES = {
    "aes": (range(49), [0, 16, 32, 48], {"not_blocks": 45}),
    "flowclass": (range(17), list(range(8, 17)), {"too_short": 8}),
    "sequencer": (range(91), list(range(82, 91)), {"too_short": 82, "bad_groups": 0}),
}


@pytest.mark.parametrize("kind", CASES)
def test_short_payloads_under_asan(kind: str, tmp_path) -> None:
    lengths, answered, drops = CASES[kind]
    payloads = [b"\0\1"[:n] + bytes(max(0, n - 2)) for n in lengths]   # sequencer: group 0
    frames = [load.frame(load.Packet(n, 0, p)) for n, p in enumerate(payloads)]
    prefixes = [frames[-1][:n] for n in range(len(frames[-1]))]
    cflags = (os.environ.get("FLOEM_CFLAGS", "")
              + " -fsanitize=address,undefined -fno-sanitize-recover=all")
    report, replies = replay(kind, frames + prefixes, tmp_path, env={"FLOEM_CFLAGS": cflags})
    assert "Sanitizer" not in report.stderr
    assert [len(r) - 42 for r in replies] == answered
    assert report("state drops") == drops
    assert report("net pcap")["freed"] == len(lengths) - len(answered) + len(prefixes)
