"""benchmarks/codegen_overhead: each generated program and its hand-written twin build and
give the same answers on a short capture (what run.py measures under callgrind is only
meaningful if they do the same work). Built as run.py builds them, with warnings as errors
and AddressSanitizer/UBSan (the pool's buffers unaddressable past each frame, leaks checked
at exit); not timed."""
from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys

import pytest

from conftest import ROOT, floem_command

_spec = importlib.util.spec_from_file_location(
    "codegen_overhead_run", os.path.join(ROOT, "benchmarks", "codegen_overhead", "run.py"))
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

sys.path.insert(0, bench.KVS_DIR)
import protocol as kvp  # noqa: E402

CHECKED = ["-Werror", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
# run.py's build() finds the hand-written side's CFLAGS in the `generated` build.
GENERATED = ("generated", "gen", CHECKED)
HAND = ("hand-written", "hand", CHECKED)


def append_frames(path: str, extra: list[bytes]) -> None:
    """Append frames to a classic little-endian pcap file."""
    with open(path, "ab") as f:
        for i, frame in enumerate(extra):
            f.write(struct.pack("<IIII", 1_800_000_000, i, len(frame), len(frame)) + frame)


def kvs_capture(path: str) -> None:
    """The paper's workload, short (a SET of 300 keys, 600 requests), then datagrams
    ParseRequest drops, one for each reason but IPv4 options."""
    bench.kvs_capture(path, 300, 600)
    get = bench.frames(path)[-1]
    request = get[42:]                  # the memcached datagram: frame header, header, key

    def frame(datagram: bytes) -> bytes:
        return kvp.build_frame(datagram, get[6:12], get[:6], get[26:30], get[30:34],
                               *struct.unpack("!HH", get[34:38]))

    append_frames(path, [
        get[:30],                                               # not_udp: cut short
        frame(request[:20]),                                    # too_short
        frame(request[:4] + b"\x00\x02" + request[6:]),          # multi_datagram: 1 of 2
        frame(request[:8] + b"\x81" + request[9:]),       # incomplete: text without a "\n"
        frame(request + b"\x00"),                                # bad_length
    ])


def replay(exe: str, pcap_in: str, pcap_out: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("FLOEM_REPORT", "FLOEM_SHM")}
    result = subprocess.run([exe], env={**env, "FLOEM_PCAP_IN": pcap_in,
                                        "FLOEM_PCAP_OUT": pcap_out},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Sanitizer" not in result.stderr and "runtime error" not in result.stderr
    return result.stdout


@pytest.mark.parametrize("app", list(bench.APPS))
def test_generated_and_hand_written_give_the_same_answers(app: str, tmp_path) -> None:
    work, spec = str(tmp_path), bench.APPS[app]
    floem = floem_command()
    if len(floem) > 1:
        pytest.skip("run.py needs the installed floem command")
    pcap_in = str(tmp_path / "in.pcap")
    if app == "kvs":
        kvs_capture(pcap_in)
    else:
        bench.capture.write(pcap_in, 500)
    outputs = {}
    for variant in (GENERATED, HAND):
        exe, _ = bench.build(floem[0], work, app, variant)
        out = str(tmp_path / f"out-{variant[1]}.pcap")
        printout = replay(exe, pcap_in, out)
        outputs[variant[1]] = (printout if spec["stdout"] else None,
                               bench.frames(out) if spec["pcap_out"] else None)
    assert outputs["gen"] == outputs["hand"]        # what run.py compares for this app
    printout, sent = outputs["hand"]
    if app == "echo":
        assert len(sent) == 500
    elif app == "hashcount":
        assert printout.startswith("hashcount: passed 500, dropped 0,")
    else:
        # 300 preload SETs and 600 requests answered, one datagram each; every GET hits
        # (every key was set first); the five bad datagrams dropped by reason, not answered.
        assert len(sent) == 900
        stats = dict(part.rsplit(" ", 1) for line in printout.splitlines()
                     for part in line.split(": ", 1)[1].split(", "))
        assert stats["items"] == "300" and stats["gets"] == stats["hits"] != "0"
        assert int(stats["gets"]) + int(stats["sets"]) == 900
        assert (stats["dropped not_udp"], stats["ip_options"], stats["too_short"],
                stats["multi_datagram"], stats["incomplete"], stats["bad_length"]) \
            == ("1", "0", "1", "1", "1", "1")
