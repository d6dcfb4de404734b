"""Python reference for Ethernet/IPv4/UDP frames: building, checksums, and the checks of CheckUDP."""
from __future__ import annotations

import ipaddress
import struct

REASONS = ("ok", "truncated", "not_ipv4", "bad_ip_header", "fragment", "not_udp",
           "bad_udp_length", "bad_checksum")


def csum(data: bytes) -> int:
    """RFC 1071 Internet checksum of ``data``."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def ip(text: str) -> bytes:
    return ipaddress.IPv4Address(text).packed


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def udp_checksum(src: bytes, dst: bytes, udp: bytes) -> int:
    """UDP checksum of a datagram (its checksum field zero) with the IPv4 pseudo-header."""
    c = csum(src + dst + struct.pack("!BBH", 0, 17, len(udp)) + udp)
    return c or 0xffff


def frame(payload: bytes, src_mac: str = "02:00:00:00:00:01", dst_mac: str = "02:00:00:00:00:02",
          src_ip: str = "10.0.0.1", dst_ip: str = "10.0.0.2", sport: int = 1234,
          dport: int = 11211, options: bytes = b"", udp_csum: bool = True, ttl: int = 64,
          frag: int = 0x4000, ident: int = 0) -> bytes:
    """A well-formed Ethernet/IPv4/UDP frame carrying ``payload``."""
    ihl = (20 + len(options)) // 4
    udp_len = 8 + len(payload)
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0) + payload
    if udp_csum:
        udp = udp[:6] + struct.pack("!H", udp_checksum(ip(src_ip), ip(dst_ip), udp)) + udp[8:]
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + udp_len, ident, frag, ttl, 17,
                      0, ip(src_ip), ip(dst_ip)) + options
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return mac(dst_mac) + mac(src_mac) + b"\x08\x00" + hdr + udp


def check(f: bytes, verify: bool) -> tuple[str, int]:
    """What CheckUDP does with ``f``: ("ok", payload length) or (drop reason, -1)."""
    be16 = lambda at: struct.unpack_from("!H", f, at)[0]  # noqa: E731
    n = len(f)
    if n < 14:
        return "truncated", -1
    if f[12:14] != b"\x08\x00":
        return "not_ipv4", -1
    if n < 34:
        return "truncated", -1
    ihl = (f[14] & 15) * 4
    if f[14] >> 4 != 4 or ihl < 20:
        return "bad_ip_header", -1
    if 14 + ihl > n:
        return "truncated", -1
    total = be16(16)
    if total < ihl:
        return "bad_ip_header", -1
    if 14 + total > n:
        return "truncated", -1
    if verify and csum(f[14:14 + ihl]) != 0:
        return "bad_checksum", -1
    if be16(20) & 0x3fff:
        return "fragment", -1
    if f[23] != 17:
        return "not_udp", -1
    if total < ihl + 8:
        return "truncated", -1
    udp_at = 14 + ihl
    udp_len = be16(udp_at + 4)
    if udp_len < 8 or ihl + udp_len > total:
        return "bad_udp_length", -1
    if verify and be16(udp_at + 6) != 0:
        pseudo = f[26:34] + struct.pack("!BBH", 0, 17, udp_len)
        if csum(pseudo + f[udp_at:udp_at + udp_len]) != 0:
            return "bad_checksum", -1
    return "ok", udp_len - 8


def records(frames: list[bytes]) -> bytes:
    """Frames as the test apps read them: a 4-byte little-endian length, then the bytes."""
    return b"".join(struct.pack("<I", len(f)) + f for f in frames)


# C for floem.main: read such records from FILE and run STMT for each (len, bytes in p).
READ_RECORDS = r"""
    {
        FILE *in = fopen(%s, "rb");
        uint32_t len;
        while (in && fread(&len, 4, 1, in) == 1) {
            uint8_t *p = malloc(len ? len : 1);
            if (fread(p, 1, len, in) != len)
                return 2;
            %s
            free(p);
        }
        if (in)
            fclose(in);
    }
"""


def hexdump(data: bytes) -> str:
    return data.hex()
