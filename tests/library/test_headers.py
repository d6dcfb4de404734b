"""floem.library.headers: CheckUDP against a Python reference (under ASan), FillUDP, SwapUDP, SetUDPLength."""
from __future__ import annotations

import random
import struct

from .helpers import asan_env, run_app
from .netref import READ_RECORDS, REASONS, check, csum, frame, records

APP = r'''
from floem import CallableSegment, Element, Input, Int, Output, include, main
from floem.library.basic import Constant
from floem.library.headers import (CheckUDP, FillUDP, SetUDPLength, SwapUDP, UDPCheckStats)

include(r"""
static inline void print_hex(const char *tag, int ret, const void *p, size_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    printf("%s %d ", tag, ret);
    for (size_t i = 0; i < n; i++)
        printf("%02x", b[i]);
    printf("\n");
}
""")

from floem.library import FRAME


class PayloadLen(Element):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(Int)

    def impl(self):
        self.run_c("(size_t size, uint8_t *data, void *buf) = inp(); (void)size; (void)buf; "
                   "output { out((int)floem_udp_payload_len(data)); }")


class Shorten(Element):
    """Drop the last two payload bytes (or add three when the payload is short)."""

    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)

    def impl(self):
        self.run_c("(size_t size, uint8_t *data, void *buf) = inp(); "
                   "size_t n = floem_udp_payload_len(data) >= 2 ? size - 2 : size + 3; "
                   "output { out(n, data, buf); }")


class FrameSize(Element):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(Int)

    def impl(self):
        self.run_c("(size_t size, uint8_t *data, void *buf) = inp(); (void)data; (void)buf; "
                   "output { out((int)size); }")


plain_stats = UDPCheckStats("plain_stats")
verify_stats = UDPCheckStats("verify_stats")


class check_plain(CallableSegment):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(Int)

    def impl(self):
        c = CheckUDP(states=[plain_stats])
        self.inp >> c
        c.out >> PayloadLen() >> self.out
        c.drop >> Constant(value="-1") >> self.out


class check_verify(CallableSegment):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(Int)

    def impl(self):
        c = CheckUDP(verify_checksums=True, states=[verify_stats])
        self.inp >> c
        c.out >> PayloadLen() >> self.out
        c.drop >> Constant(value="-1") >> self.out


class fill(CallableSegment):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(Int)

    def impl(self):
        f = FillUDP(src_mac="02:00:00:00:00:01", dst_mac="0a:1b:2c:3d:4e:5f",
                    src_ip="192.168.1.10", dst_ip="10.11.12.13", src_port=4321,
                    dst_port=65535, udp_checksum=True)
        self.inp >> f >> FrameSize() >> self.out


class reply(CallableSegment):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(Int)

    def impl(self):
        c = CheckUDP()
        self.inp >> c
        c.out >> SwapUDP() >> Shorten() >> SetUDPLength() >> FrameSize() >> self.out
        c.drop >> Constant(value="-1") >> self.out


check_plain("check_plain", default_return="-9")
check_verify("check_verify", default_return="-9")
fill("fill", default_return="-9")
reply("reply", default_return="-9")

main(r"""
''' + READ_RECORDS % ("argv[1]", r'printf("C %d %d\n", check_plain(len, p, NULL), check_verify(len, p, NULL));') + r'''
''' + READ_RECORDS % ("argv[2]", r"""
            uint8_t *f = calloc(1, 42 + len);
            memcpy(f + 42, p, len);
            int r = fill(42 + len, f, NULL);
            print_hex("F", r, f, 42 + len);
            free(f);""") + r'''
''' + READ_RECORDS % ("argv[3]", r"""
            uint8_t *f = calloc(1, len + 3);
            memcpy(f, p, len);
            int r = reply(len, f, NULL);
            print_hex("R", r, f, r > 0 ? (size_t)r : len);
            free(f);""") + r'''
    printf("S %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", plain_stats->passed,
           plain_stats->dropped, verify_stats->passed, verify_stats->dropped);
    for (int i = 0; i < 8; i++)
        printf("N %" PRIu64 " %" PRIu64 "\n", plain_stats->reasons[i], verify_stats->reasons[i]);
""")
'''


def malformed(rng: random.Random) -> list[bytes]:
    """Valid frames, each way of breaking one, every truncation, and random corruptions."""
    good = [frame(b"hello world"), frame(b""), frame(bytes(range(200)), udp_csum=False),
            frame(b"opt", options=b"\x01\x01\x01\x00"), frame(b"x" * 1400, sport=53)]
    base = frame(b"0123456789abcdef")

    def patch(f: bytes, at: int, data: bytes) -> bytes:
        return f[:at] + data + f[at + len(data):]

    be = lambda v: struct.pack("!H", v)  # noqa: E731
    broken = [
        patch(base, 12, b"\x86\xdd"),                     # IPv6 EtherType
        patch(base, 14, b"\x65"),                         # version 6
        patch(base, 14, b"\x44"),                         # IHL 16 bytes
        patch(base, 14, b"\x4f"),                         # IHL 60 bytes: past the frame
        patch(base, 16, be(19)),                          # total length below the header
        patch(base, 16, be(len(base) - 14 + 1)),          # total length past the frame
        patch(base, 16, be(24)),                          # total length: no room for UDP
        patch(base, 20, be(0x2000)),                      # more fragments
        patch(base, 20, be(0x4001)),                      # fragment offset
        patch(base, 23, b"\x06"),                         # TCP
        patch(base, 38, be(7)),                           # UDP length below 8
        patch(base, 38, be(len(base) - 34 + 1)),          # UDP length past the IP packet
        patch(base, 38, be(10)),                          # short UDP length: accepted, bad sum
        patch(base, 24, b"\x00\x00"),                     # wrong IPv4 checksum
        patch(base, 40, b"\x12\x34"),                     # wrong UDP checksum
        patch(base, 40, b"\x00\x00"),                     # no UDP checksum: fine
        base + b"\0" * 20,                                # Ethernet padding: fine
    ]
    truncations = [base[:n] for n in range(len(base))]
    corrupt = []
    for _ in range(300):
        f = bytearray(rng.choice(good))
        for _ in range(rng.randint(1, 3)):
            f[rng.randrange(min(len(f), 48))] = rng.randrange(256)
        corrupt.append(bytes(f[:rng.randint(0, len(f))]) if rng.random() < 0.3 else bytes(f))
    return good + broken + truncations + corrupt


def swap_and_shorten(f: bytes) -> bytes:
    """The Python reference of reply(): swap addresses, resize the payload, fix the lengths."""
    ihl = (f[14] & 15) * 4
    udp_at = 14 + ihl
    payload_len = struct.unpack_from("!H", f, udp_at + 4)[0] - 8
    size = len(f) - 2 if payload_len >= 2 else len(f) + 3
    g = bytearray(f + b"\0" * 3)[:size]
    g[0:6], g[6:12] = f[6:12], f[0:6]
    g[26:30], g[30:34] = f[30:34], f[26:30]
    g[udp_at:udp_at + 2], g[udp_at + 2:udp_at + 4] = f[udp_at + 2:udp_at + 4], f[udp_at:udp_at + 2]
    struct.pack_into("!H", g, 16, size - 14)
    struct.pack_into("!H", g, 24, 0)
    struct.pack_into("!H", g, 24, csum(bytes(g[14:udp_at])))
    struct.pack_into("!HH", g, udp_at + 4, size - udp_at, 0)
    return bytes(g)


def test_headers(tmp_path) -> None:
    assert csum(bytes.fromhex("450000730000400040110000c0a80001c0a800c7")) == 0xb861  # RFC 1071 example
    rng = random.Random(7)
    frames = malformed(rng)
    payloads = [b"", b"a", bytes(range(256)) * 4, b"floem" * 7]
    replies = [frame(b"ping"), frame(b"a"), frame(b"\xff" * 99, options=b"\x01" * 8),
               frame(b"no sum", udp_csum=False)]
    for name, data in (("frames.bin", frames), ("payloads.bin", payloads),
                       ("replies.bin", replies)):
        (tmp_path / name).write_bytes(records(data))
    out = run_app(tmp_path, APP, str(tmp_path / "frames.bin"), str(tmp_path / "payloads.bin"),
                  str(tmp_path / "replies.bin"), env=asan_env()).splitlines()

    checks = [line.split() for line in out if line.startswith("C ")]
    expected = [(check(f, False), check(f, True)) for f in frames]
    assert [(int(a), int(b)) for _, a, b in checks] == [(p[1], v[1]) for p, v in expected]
    for f in frames[:5] + frames[-300:]:
        if check(f, True)[0] == "ok":
            assert check(f[:len(f) - 1], False)[0] in ("ok", "truncated")

    filled = [line.split() for line in out if line.startswith("F ")]
    for (_, ret, data), payload in zip(filled, payloads, strict=True):
        want = frame(payload, src_mac="02:00:00:00:00:01", dst_mac="0a:1b:2c:3d:4e:5f",
                     src_ip="192.168.1.10", dst_ip="10.11.12.13", sport=4321, dport=65535)
        assert (int(ret), bytes.fromhex(data)) == (len(want), want)
        assert check(want, True) == ("ok", len(payload))

    replied = [line.split() for line in out if line.startswith("R ")]
    for (_, ret, data), f in zip(replied, replies, strict=True):
        want = swap_and_shorten(f)
        assert (int(ret), bytes.fromhex(data)) == (len(want), want)
        assert check(want, True)[0] == "ok"

    stats = [line.split()[1:] for line in out if line[:2] in ("S ", "N ")]
    plain = [check(f, False)[0] for f in frames]
    verify = [check(f, True)[0] for f in frames]
    assert [int(x) for x in stats[0]] == [plain.count("ok"), len(frames) - plain.count("ok"),
                                          verify.count("ok"), len(frames) - verify.count("ok")]
    assert stats[1] == ["0", "0"]
    assert [[int(x) for x in row] for row in stats[2:]] == \
        [[plain.count(r), verify.count(r)] for r in REASONS[1:]]
