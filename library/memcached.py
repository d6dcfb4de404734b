"""Memcached binary protocol over UDP: parse requests, write responses.

A memcached UDP datagram is the 8-byte frame header (request id, sequence
number, total datagrams, reserved) followed by a binary-protocol message: the
24-byte header (magic, opcode, key length, extras length, data type,
vbucket/status, total body length, opaque, cas), then extras, key and value.
``library/c/memcached.h`` has the wire structs (``struct floem_mc_udp_hdr``,
``struct floem_mc_hdr``), a host-order view (``struct floem_mc_msg``), opcode
and status constants, and ``floem_mc_parse`` / ``floem_mc_build`` with bounds
checks; bodies of programs using these elements may call them.

Both elements carry frames ``(size_t size, uint8_t *data, void *buf)`` (see
`floem.library.headers`). A server path::

    FromNet() >> ParseMemcached(key="state->key", ...) >> Lookup() >> MemcachedReply(...)
              >> SwapUDP() >> SetUDPLength() >> ToNet()
"""
from __future__ import annotations

from floem import Element, Field, Input, Output, Persistent, State, Uint

from ._support import FRAME, c_file, read_frame
from .headers import HEADERS as _UDP_HEADERS, SOURCES as _UDP_SOURCES

HEADERS = _UDP_HEADERS + (c_file("memcached.h"),)
SOURCES = _UDP_SOURCES + (c_file("memcached.c"),)

#: What `ParseMemcached` can store, and the C expression (of ``msg``) giving it.
REQUEST_FIELDS = {
    "request_id": "msg.request_id", "opcode": "msg.opcode", "data_type": "msg.data_type",
    "vbucket": "msg.status", "opaque": "msg.opaque", "cas": "msg.cas",
    "extras": "(void *)msg.extras", "extlen": "msg.extras_len",
    "key": "(void *)msg.key", "keylen": "msg.key_len",
    "value": "(void *)msg.value", "vallen": "msg.value_len",
}


class MemcachedStats(State):
    """Requests a `ParseMemcached` accepted and dropped."""

    passed = Field(Uint(64))
    dropped = Field(Uint(64))
    packed = False


class ParseMemcached(Element):
    """Accept UDP frames carrying one whole memcached binary request; drop the rest.

    The frame must be Ethernet/IPv4/UDP (checked as `CheckUDP` does) and its
    UDP payload a single-datagram message (sequence 0 of 1) with magic 0x80
    whose header, extras, key and value lie within the payload; trailing bytes
    are ignored. Accepted frames go to ``out`` unchanged; the others to
    ``drop``, counted in a `MemcachedStats` state.

    Keyword arguments store parts of the request, each in the C lvalue given
    (usually a per-packet field): ``request_id``, ``opcode``, ``data_type``,
    ``vbucket``, ``opaque``, ``cas``, ``extras``, ``extlen``, ``key``,
    ``keylen``, ``value``, ``vallen``. Pointers point into the frame, lengths
    are in bytes, numbers in host byte order. Example:
    ``ParseMemcached(opcode="state->opcode", key="state->key", keylen="state->keylen")``.

    Ports: ``inp`` frame; ``out`` frame; ``drop`` frame.
    """

    c_headers = HEADERS
    c_sources = SOURCES
    stats = Persistent(MemcachedStats)

    def configure(self, **store: str) -> None:
        unknown = sorted(set(store) - set(REQUEST_FIELDS))
        if unknown:
            raise self.loc.error(f"ParseMemcached: unknown field(s) {', '.join(unknown)}; "
                                 f"known: {', '.join(REQUEST_FIELDS)}")
        self.store = store
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        self.drop = Output(*FRAME)

    def impl(self) -> None:
        stores = "\n".join(f"{lvalue} = {REQUEST_FIELDS[name]};"
                           for name, lvalue in self.store.items())
        self.run_c(f'''
            {read_frame()}
            struct floem_udp_view udp = {{0}};
            struct floem_mc_msg msg = {{0}};
            int ok = floem_udp_parse(data, size, 0, &udp) == FLOEM_UDP_OK
                && floem_mc_parse(udp.payload, udp.payload_len, &msg) == FLOEM_MC_PARSED
                && msg.magic == FLOEM_MC_REQUEST && msg.sequence == 0 && msg.total == 1;
            if (ok) {{
                floem_add(&stats->passed, 1);
                {stores}
            }} else {{
                floem_add(&stats->dropped, 1);
            }}
            output switch {{
                case ok: out(size, data, buf);
                else: drop(size, data, buf);
            }}
        ''')


class MemcachedReply(Element):
    """Rewrite a request frame's UDP payload into the response to it, in place.

    The response keeps the request id (sequence 0 of 1), opcode and opaque,
    has magic 0x81, and takes its status, cas, extras, key and value from the
    C expressions given. They may use ``req``, the parsed request (a
    ``struct floem_mc_msg``): ``key="req.key", keylen="req.key_len"`` echoes
    the key. The frame's new ``size`` goes out with it; follow with
    `SwapUDP` and `SetUDPLength`. ``capacity`` is the room at ``data`` in
    bytes: a response that would not fit, or a frame that is not a valid
    memcached datagram, goes to ``drop`` unchanged.

    Ports: ``inp`` frame; ``out`` frame; ``drop`` frame.
    """

    c_headers = HEADERS
    c_sources = SOURCES

    def configure(self, status: str = "FLOEM_MC_OK", cas: str = "0",
                  extras: str = "NULL", extlen: str = "0", key: str = "NULL",
                  keylen: str = "0", value: str = "NULL", vallen: str = "0",
                  capacity: int = 1514) -> None:
        if capacity < 42 + 32:
            raise self.loc.error(f"MemcachedReply: capacity {capacity} cannot hold a response")
        self.parts = dict(status=status, cas=cas, extras=extras, extras_len=extlen, key=key,
                          key_len=keylen, value=value, value_len=vallen)
        self.capacity = capacity
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        self.drop = Output(*FRAME)

    def impl(self) -> None:
        sets = "\n".join(f"res.{name} = {expr};" for name, expr in self.parts.items())
        self.run_c(f'''
            {read_frame()}
            struct floem_udp_view udp = {{0}};
            struct floem_mc_msg req = {{0}};
            int parsed = floem_udp_parse(data, size, 0, &udp) == FLOEM_UDP_OK
                && floem_mc_parse(udp.payload, udp.payload_len, &req) == FLOEM_MC_PARSED;
            size_t headers = parsed ? (size_t)(udp.payload - (uint8_t *)data) : 0;
            size_t n = 0;
            if (parsed && headers < {self.capacity}) {{
                struct floem_mc_msg res = {{0}};
                res.request_id = req.request_id;
                res.sequence = 0;
                res.total = 1;
                res.magic = FLOEM_MC_RESPONSE;
                res.opcode = req.opcode;
                res.opaque = req.opaque;
                {sets}
                uint8_t scratch[{self.capacity}];
                n = floem_mc_build(scratch, {self.capacity} - headers, &res);
                memcpy(udp.payload, scratch, n);
            }}
            output switch {{
                case n > 0: out(headers + n, data, buf);
                else: drop(size, data, buf);
            }}
        ''')
