"""Library elements between FromNet and ToNet on a pcap replay, on the CPU and on NIC platforms:
an encrypting echo (CheckUDP, AESEncrypt on the UDP payload, SwapUDP, SetUDPLength) whose output
capture must equal the Python/OpenSSL reference, byte for byte."""
from __future__ import annotations

import random
import shutil
import subprocess

import dpkt
import pytest

from .helpers import run_app_result
from .netref import check, csum, frame

APP = r'''
import os

from floem import Segment, target
from floem.library.aes import AESEncrypt
from floem.library.basic import Counter
from floem.library.headers import CheckUDP, SetUDPLength, SwapUDP
from floem.library.net import FRAME, FromNet, NetFree, ToNet


class encrypting_echo(Segment):
    def impl(self):
        check = CheckUDP(verify_checksums=True)
        encrypt = AESEncrypt(key="KEY_HEX", iv="IV_HEX", frame=True)
        FromNet() >> check
        check.out >> encrypt
        encrypt.out >> SwapUDP() >> SetUDPLength(udp_checksum=True) >> Counter(ty=list(FRAME)) >> ToNet()
        check.drop >> NetFree()
        encrypt.drop >> NetFree()


encrypting_echo("encrypting_echo",
                device=target.NIC if os.environ.get("PIPELINE_DEVICE") == "nic" else target.CPU)
'''

# The NIC runs the same C as the CPU on emu; BlueField is Arm, LiquidIO big-endian MIPS.
PLATFORMS = {"cpu": ("cpu", "emu"), "nic-bluefield": ("nic", "bluefield"),
             "nic-liquidio": ("nic", "liquidio")}


def openssl(data: bytes, key: bytes, iv: bytes) -> bytes:
    return subprocess.run(["openssl", "enc", "-aes-128-cbc", "-K", key.hex(), "-iv", iv.hex(),
                           "-nopad"], input=data, capture_output=True, check=True).stdout


def reply(f: bytes, key: bytes, iv: bytes) -> bytes:
    """The Python reference: the frame swapped, its payload encrypted, checksums recomputed."""
    ihl = (f[14] & 15) * 4
    udp_at = 14 + ihl
    udp_len = int.from_bytes(f[udp_at + 4:udp_at + 6], "big")
    g = bytearray(f[:udp_at + udp_len])
    g[udp_at + 8:] = openssl(bytes(g[udp_at + 8:]), key, iv)
    g[0:6], g[6:12] = f[6:12], f[0:6]
    g[26:30], g[30:34] = f[30:34], f[26:30]
    g[udp_at:udp_at + 2], g[udp_at + 2:udp_at + 4] = f[udp_at + 2:udp_at + 4], f[udp_at:udp_at + 2]
    g[24:26] = b"\0\0"
    g[24:26] = csum(bytes(g[14:udp_at])).to_bytes(2, "big")
    g[udp_at + 6:udp_at + 8] = b"\0\0"
    pseudo = bytes(g[26:34]) + bytes([0, 17]) + udp_len.to_bytes(2, "big")
    g[udp_at + 6:udp_at + 8] = (csum(pseudo + bytes(g[udp_at:])) or 0xffff).to_bytes(2, "big")
    return bytes(g)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
@pytest.mark.parametrize("platform", PLATFORMS)
def test_encrypting_echo(platform: str, tmp_path) -> None:
    device, nic = PLATFORMS[platform]
    rng = random.Random(17)
    key, iv = rng.randbytes(16), rng.randbytes(16)
    frames = [frame(rng.randbytes(1024), sport=1000 + i) for i in range(6)]
    frames += [frame(rng.randbytes(64), options=b"\x01" * 4), frame(rng.randbytes(1000)),
               frame(rng.randbytes(32))[:60], frame(rng.randbytes(16))[:-1] + b"\x00",
               frame(b"")]
    src, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    with open(src, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=65535)
        for i, fr in enumerate(frames):
            writer.writepkt(fr, ts=1_700_000_000 + i / 1000)
    source = APP.replace("KEY_HEX", key.hex()).replace("IV_HEX", iv.hex())
    run_app_result(tmp_path, source, env={"PIPELINE_DEVICE": device}, timeout=120,
                   options=("--nic", nic, "--net", "pcap", "--pcap-in", str(src),
                            "--pcap-out", str(out), "--duration", "1"))
    with open(out, "rb") as f:
        sent = [bytes(fr) for _, fr in dpkt.pcap.Reader(f)]
    valid = [fr for fr in frames
             if check(fr, True)[0] == "ok" and check(fr, True)[1] % 16 == 0]
    assert len(valid) == 8
    assert sent == [reply(fr, key, iv) for fr in valid]
