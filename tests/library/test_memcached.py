"""floem.library.memcached: ParseMemcached and MemcachedReply against Python (struct) references."""
from __future__ import annotations

import struct

from .helpers import run_app
from .netref import READ_RECORDS, frame, records

APP = r'''
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Pointer,
                   State, Uint, include, main)
from floem.library.basic import Constant
from floem.library.headers import SetUDPLength, SwapUDP
from floem.library.memcached import MemcachedReply, MemcachedStats, ParseMemcached

include(r"""
static inline void print_hex(const void *p, size_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    printf(" ");
    for (size_t i = 0; i < n; i++)
        printf("%02x", b[i]);
    if (n == 0)
        printf("-");
}
""")

from floem.library import FRAME


class Request(State):
    request_id = Field(Uint(16))
    opcode = Field(Uint(8))
    data_type = Field(Uint(8))
    vbucket = Field(Uint(16))
    opaque = Field(Uint(32))
    cas = Field(Uint(64))
    extras = Field(Pointer(Uint(8)))
    extlen = Field(Uint(8))
    key = Field("char *")
    keylen = Field(Uint(16))
    value = Field(Pointer(Uint(8)))
    vallen = Field(Uint(32))


class Show(Element):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(Int)

    def impl(self):
        self.run_c(r"""
            inp();
            printf("P %u %u %u %u %u %llu", state->request_id, state->opcode, state->data_type,
                   state->vbucket, state->opaque, (unsigned long long)state->cas);
            print_hex(state->extras, state->extlen);
            print_hex(state->key, state->keylen);
            print_hex(state->value, state->vallen);
            printf("\n");
            output { out(0); }
        """)


class FrameSize(Element):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(Int)

    def impl(self):
        self.run_c("(size_t size, uint8_t *data, void *buf) = inp(); (void)data; (void)buf; "
                   "output { out((int)size); }")


stats = MemcachedStats("stats")


class Server(Flow):
    state = PerPacket(Request)

    def impl(self):
        class parse(CallableSegment):
            def configure(self):
                self.inp = Input(*FRAME)
                self.out = Output(Int)

            def impl(self):
                p = ParseMemcached(states=[stats], **{f: "state->" + f for f in (
                    "request_id", "opcode", "data_type", "vbucket", "opaque", "cas", "extras",
                    "extlen", "key", "keylen", "value", "vallen")})
                self.inp >> p
                p.out >> Show() >> self.out
                p.drop >> Constant(value="-1") >> self.out

        parse("parse")


Server()

class reply(CallableSegment):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(Int)

    def impl(self):
        r = MemcachedReply(
            status="req.opcode == FLOEM_MC_GET ? FLOEM_MC_KEY_NOT_FOUND : FLOEM_MC_OK",
            cas="req.cas + 1", extras=r'(const uint8_t *)"\xde\xad\xbe\xef"', extlen="4",
            key="req.key", keylen="req.key_len", value="req.value", vallen="req.value_len")
        self.inp >> r
        r.out >> SwapUDP() >> SetUDPLength(udp_checksum=True) >> FrameSize() >> self.out
        r.drop >> Constant(value="-1") >> self.out


reply("reply")

main(r"""
''' + READ_RECORDS % ("argv[1]", r"""
            printf("R %d\n", parse(len, p, NULL));
            uint8_t *f = calloc(1, len > 1514 ? len : 1514);
            memcpy(f, p, len);
            int n = reply(len, f, NULL);
            printf("A %d", n);
            print_hex(f, n > 0 ? (size_t)n : 0);
            printf("\n");
            free(f);""") + r'''
    printf("S %llu %llu\n", (unsigned long long)stats->passed, (unsigned long long)stats->dropped);
""")
'''

GET, SET, DELETE, GETK = 0x00, 0x01, 0x04, 0x0c


def datagram(opcode: int, key: bytes = b"", value: bytes = b"", extras: bytes = b"",
             opaque: int = 0, cas: int = 0, request_id: int = 1, seq: int = 0, total: int = 1,
             magic: int = 0x80, vbucket: int = 0, data_type: int = 0, body_len: int | None = None,
             trailing: bytes = b"") -> bytes:
    """A memcached UDP datagram: frame header, binary header, extras, key, value."""
    body = len(extras) + len(key) + len(value) if body_len is None else body_len
    return (struct.pack("!HHHH", request_id, seq, total, 0)
            + struct.pack("!BBHBBHIIQ", magic, opcode, len(key), len(extras), data_type,
                          vbucket, body, opaque, cas)
            + extras + key + value + trailing)


def parse_msg(d: bytes) -> dict | None:
    """The Python reference of floem_mc_parse: the message's parts, or None."""
    if len(d) < 32:
        return None
    rid, seq, total, _ = struct.unpack_from("!HHHH", d)
    magic, op, klen, elen, dtype, vb, body, opaque, cas = struct.unpack_from("!BBHBBHIIQ", d, 8)
    if magic not in (0x80, 0x81) or elen + klen > body or 32 + body > len(d):
        return None
    extras, key = d[32:32 + elen], d[32 + elen:32 + elen + klen]
    value = d[32 + elen + klen:32 + body]
    return dict(request_id=rid, sequence=seq, total=total, magic=magic, opcode=op,
                data_type=dtype, vbucket=vb, opaque=opaque, cas=cas, extras=extras, key=key,
                value=value)


def parse(d: bytes) -> dict | None:
    """The Python reference of ParseMemcached: a single-datagram request, or None (dropped)."""
    msg = parse_msg(d)
    if msg is None or msg["magic"] != 0x80 or msg["sequence"] != 0 or msg["total"] != 1:
        return None
    return msg


def response(req: dict) -> bytes:
    """The datagram the test's MemcachedReply writes for ``req``."""
    status = 1 if req["opcode"] == GET else 0
    body = b"\xde\xad\xbe\xef" + req["key"] + req["value"]
    return (struct.pack("!HHHH", req["request_id"], 0, 1, 0)
            + struct.pack("!BBHBBHIIQ", 0x81, req["opcode"], len(req["key"]), 4, 0, status,
                          len(body), req["opaque"], (req["cas"] + 1) % 2**64) + body)


def hexs(b: bytes) -> str:
    return b.hex() or "-"


def test_memcached(tmp_path) -> None:
    flags_expiry = struct.pack("!II", 0xcafe, 300)
    datagrams = [
        datagram(GET, key=b"k" * 32, opaque=0x01020304, request_id=7),
        datagram(SET, key=b"key:1", value=b"v" * 64, extras=flags_expiry, cas=2**64 - 1),
        datagram(GETK, key=b"\x00\xff", vbucket=513, data_type=1, request_id=65535),
        datagram(DELETE, key=b"gone", trailing=b"junk after the body"),
        datagram(SET, key=b"big", value=b"x" * 1450, extras=flags_expiry),   # reply too big
        datagram(0x0a),                                                       # NOOP, no body
        datagram(GET, key=b"short")[:-1],                                     # body cut short
        datagram(GET, key=b"k")[:31],                                         # header cut short
        datagram(GET, key=b"k", magic=0x42),
        datagram(GET, key=b"k", magic=0x81),                                  # a response
        datagram(GET, key=b"k", seq=1, total=2),                              # multi-datagram
        datagram(GET, key=b"k", total=0),
        datagram(SET, key=b"abc", extras=b"12345678", body_len=10),           # extras + key > body
        datagram(GET, key=b"abc", body_len=2**32 - 1),                        # body past the end
        b"",
    ]
    frames = [frame(d, sport=40000 + i) for i, d in enumerate(datagrams)]
    frames.append(frame(datagrams[0])[:50])                                   # truncated UDP
    datagrams.append(b"")
    (tmp_path / "frames.bin").write_bytes(records(frames))
    out = run_app(tmp_path, APP, str(tmp_path / "frames.bin")).splitlines()

    lines = iter(out)
    passed = 0
    for i, (d, _) in enumerate(zip(datagrams, frames, strict=True)):
        req = parse(d) if i < len(frames) - 1 else None
        if req is None:
            assert next(lines) == "R -1"
        else:
            passed += 1
            want = (f"P {req['request_id']} {req['opcode']} {req['data_type']} {req['vbucket']} "
                    f"{req['opaque']} {req['cas']} {hexs(req['extras'])} {hexs(req['key'])} "
                    f"{hexs(req['value'])}")
            assert (next(lines), next(lines)) == (want, "R 0")
        answer = next(lines).split()
        msg = parse_msg(d) if i < len(frames) - 1 else None
        want_frame = msg and frame(response(msg), src_mac="02:00:00:00:00:02",
                                   dst_mac="02:00:00:00:00:01", src_ip="10.0.0.2",
                                   dst_ip="10.0.0.1", sport=11211, dport=40000 + i)
        if not want_frame or len(want_frame) > 1514:
            assert answer == ["A", "-1", "-"]
        else:
            assert answer == ["A", str(len(want_frame)), want_frame.hex()]
    assert next(lines) == f"S {passed} {len(frames) - passed}"
