"""Write the benchmark capture: N Ethernet/IPv4/UDP frames carrying a 32-byte key each.

    python3 capture.py OUT.pcap N [--seed S]

Every frame is 74 bytes: Ethernet (14) + IPv4 without options (20, correct
header checksum) + UDP (8, checksum 0 = none) + a 32-byte key, one of
KEYS = 10,000 keys chosen uniformly with a fixed seed, between 16 clients and
one server. All frames are whole and valid (every program takes its fast
path); classic little-endian pcap, microsecond timestamps.
"""
from __future__ import annotations

import argparse
import random
import struct

KEYS = 10_000
KEY_BYTES = 32


def ipv4_checksum(header: bytes) -> int:
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def frame(client: int, key: bytes) -> bytes:
    eth = bytes.fromhex("020000000001") + bytes([2, 0, 0, 0, 1, client]) + b"\x08\x00"
    udp_len = 8 + len(key)
    src, dst = bytes([10, 0, 1, client]), bytes([10, 0, 0, 1])
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, client, 0x4000, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", 40000 + client, 11211, udp_len, 0)
    return eth + ip + udp + key


def write(path: str, n: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    keys = [b"key:%028d" % k for k in range(KEYS)]
    assert all(len(k) == KEY_BYTES for k in keys)
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i in range(n):
            data = frame(rng.randrange(16), keys[rng.randrange(KEYS)])
            f.write(struct.pack("<IIII", 1_700_000_000 + i // 1_000_000, i % 1_000_000,
                                len(data), len(data)))
            f.write(data)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    write(a.out, a.n, a.seed)
