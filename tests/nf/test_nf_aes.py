"""examples/nf/aes.py: every payload's ciphertext byte for byte `openssl enc -aes-128-cbc -nopad`.

On the CPU with AES-NI and with the portable code, on the NIC (emulated and LiquidIO,
big-endian under qemu) with and without the crypto engine, whose calls and bytes the
process reports (the CPU's AES instructions count as its engine). Payloads that are not whole blocks are dropped and counted; bad
parameters are errors at the app's line.
"""
from __future__ import annotations

import shutil
import socket

import pytest

from conftest import floem

from .helpers import app, defines, line_of, load, replay, reply_frame, serving

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
needs_mips = pytest.mark.skipif(shutil.which("mips64-linux-gnuabi64-gcc") is None,
                                reason="no mips64 cross compiler")
KEY, IV = "000102030405060708090a0b0c0d0e0f", "f0e0d0c0b0a090807060504030201000"


@pytest.fixture(scope="module")
def workload() -> tuple[list[bytes], list[bytes], list[bytes]]:
    """Frames to replay, the valid ones, and each valid one's expected ciphertext."""
    valid = load.frames("aes", 24, seed=5) + [load.frame(load.Packet(24, 0, b""))]
    odd = [load.frame(load.Packet(n, 0, bytes(size))) for n, size in ((25, 20), (26, 1))]
    frames = valid[:10] + odd[:1] + valid[10:] + odd[1:] + [valid[0][:30]]
    return frames, valid, load.aes_expected([f[42:] for f in valid], KEY, IV)


@pytest.mark.parametrize("values,nic", [
    pytest.param(("device=cpu", "aesni=true"), "emu", id="cpu-aesni"),
    pytest.param(("device=nic", "engine=false"), "emu", id="nic-emu"),
    pytest.param(("device=nic", "engine=true"), "emu", id="nic-emu-engine"),
    pytest.param(("device=nic", "engine=false"), "liquidio", marks=needs_mips, id="liquidio"),
    pytest.param(("device=nic", "engine=true"), "liquidio", marks=needs_mips,
                 id="liquidio-engine"),
])
def test_replay_matches_openssl(workload, values: tuple[str, ...], nic: str, tmp_path) -> None:
    frames, valid, ciphertexts = workload
    report, sent = replay("aes", frames, tmp_path, *values, f"key={KEY}", f"iv={IV}", nic=nic)
    assert sent == [reply_frame(f, c) for f, c in zip(valid, ciphertexts)]
    assert report("state drops") == {"not_blocks": 2}
    assert report("net pcap")["freed"] == 3
    engine = report("engine crypto")
    if "engine=true" in values or ("aesni=true" in values and cpu_has_aes()):
        assert engine == {"calls": len(valid), "bytes": sum(len(c) for c in ciphertexts)}
    else:
        assert engine == {}


def cpu_has_aes() -> bool:
    """This CPU has AES-NI (the elements use it unless told not to)."""
    with open("/proc/cpuinfo") as f:
        return any(line.startswith("flags") and " aes " in f" {line.split(':', 1)[1]} "
                   for line in f)


def test_live_portable_on_two_cores() -> None:
    """Over UDP, the portable code on two threads; a payload of 20 bytes gets no answer."""
    sent = load.packets("aes", 200, seed=2)
    with serving("aes", "aesni=false", "cores=2") as served:
        summary = load.run_live("aes", sent, f"127.0.0.1:{served.port}", window=16, check=True)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(bytes(20), ("127.0.0.1", served.port))
            s.settimeout(0.3)
            with pytest.raises(socket.timeout):
                s.recv(2048)
    assert (summary.sent, summary.received, summary.errors) == (200, 200, [])
    assert summary.ok
    assert served.report("state drops") == {"not_blocks": 1}
    assert sum(served.report.thread_packets("aes")) >= 201


@pytest.mark.parametrize("values,line,message", [
    (("engine=true",), "raise nf.app_error(\"-D engine=true",
     "-D engine=true: the crypto engine is on the NIC; use -D device=nic"),
    (("key=00",), "key = nf.hex_param(", "-D key=00: must be 32 hex digits (16 bytes)"),
    (("iv=" + "g" * 32,), "iv = nf.hex_param(", f"-D iv={'g' * 32}: must be 32 hex digits"),
    (("device=nic", "cores=0"), "where = nf.placement()",
     "-D cores=0: the segment needs at least one thread"),
], ids=["engine-on-cpu", "short-key", "bad-iv", "no-cores"])
def test_bad_parameters(values: tuple[str, ...], line: str, message: str) -> None:
    """A FloemError at the app's line, no traceback."""
    result = floem("check", app("aes"), *defines(*values))
    assert result.returncode != 0
    assert f"{app('aes')}:{line_of('aes', line)}: error: {message}" in result.stderr
    assert "Traceback" not in result.stderr
