"""Hashing keys and flows, and steering packets to queue instances by hash.

The key hashes (`JenkinsHash`, `CRC32CHash`, `ToeplitzHash`) read a key as
``(void *data, size_t length)`` and give a ``uint32_t``. Where the key and
the hash live is configurable, so the same element serves a plain value
pipeline and a per-packet-state flow:

* by default the key arrives on ``inp`` and the hash leaves on ``out``;
* ``data="state->key", length="state->keylen"`` (C expressions) read the key
  there instead; ``inp`` then carries no value;
* ``into="state->hash"`` (a C lvalue) stores the hash there instead; ``out``
  then passes on what ``inp`` carried.

The C functions (``floem_hashlittle``, ``floem_crc32c``, ``floem_toeplitz``,
``floem_rss_default_key``; ``library/c/hash.h``) are visible to bodies.
"""
from __future__ import annotations

from floem import Element, Input, Output, Pointer, SizeT, Uint, Void

from ._support import FRAME, c_bytes, c_file, read_frame, read_values
from .headers import HEADERS as _UDP_HEADERS, SOURCES as _UDP_SOURCES

HEADERS = (c_file("hash.h"),)
SOURCES = (c_file("hash.c"),)

#: The standard RSS key (Microsoft RSS specification, also DPDK's and most NICs' default).
RSS_KEY = bytes.fromhex("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c"
                        "6a42b73bbeac01fa")

KEY = (Pointer(Void), SizeT)


class _KeyHash(Element):
    """A hash of ``(data, length)``: `_call` gives the C expression computing it."""

    c_headers = HEADERS
    c_sources = SOURCES

    def _ports(self, data: str | None, length: str | None, into: str | None) -> None:
        if (data is None) != (length is None):
            raise self.loc.error(f"{type(self).__name__}: give both data= and length=, or neither")
        self.into, self.key = into, (None if data is None or length is None else (data, length))
        in_types = list(KEY) if data is None else []
        self.inp = Input(*in_types)
        self.out = Output(*(in_types if into is not None else [Uint(32)]))

    def _call(self, data: str, length: str) -> str:
        """The C expression hashing ``length`` bytes at ``data`` (defined by each hash)."""
        raise NotImplementedError

    def _prelude(self) -> str:
        """C declarations the hash needs (constants), placed first in the body."""
        return ""

    def impl(self) -> None:
        read, names = read_values("inp", self.inp.types, "k")
        data, length = self.key or (names[0], names[1])
        store = "" if self.into is None else f"{self.into} = h;"
        fire = "h" if self.into is None else ", ".join(names)
        self.run_c(f'''
            {self._prelude()}
            {read}
            uint32_t h = {self._call(data, length)};
            {store}
            output {{ out({fire}); }}
        ''')


class JenkinsHash(_KeyHash):
    """Bob Jenkins' lookup3 ``hashlittle`` of a key, with a ``seed`` (its ``initval``).

    Ports: ``inp`` (``void *``, ``size_t``); ``out`` (``uint32_t``); see the
    module doc for ``data=``, ``length=``, ``into=``.
    """

    def configure(self, seed: int = 0, data: str | None = None, length: str | None = None,
                  into: str | None = None) -> None:
        self.seed = seed & 0xffffffff
        self._ports(data, length, into)

    def _call(self, data: str, length: str) -> str:
        return f"floem_hashlittle({data}, {length}, {self.seed}u)"


class CRC32CHash(_KeyHash):
    """The CRC-32C (Castagnoli) of a key, as iSCSI and the SSE4.2 ``crc32`` instruction define it.

    Ports: ``inp`` (``void *``, ``size_t``); ``out`` (``uint32_t``); see the
    module doc for ``data=``, ``length=``, ``into=``.
    """

    def configure(self, data: str | None = None, length: str | None = None,
                  into: str | None = None) -> None:
        self._ports(data, length, into)

    def _call(self, data: str, length: str) -> str:
        return f"floem_crc32c(0, {data}, {length})"


class ToeplitzHash(_KeyHash):
    """The Toeplitz hash of a key under a secret ``rss_key`` (default: the standard `RSS_KEY`).

    The key must be at most ``len(rss_key) - 4`` bytes (36 with the standard
    key); longer keys hash to 0.

    Ports: ``inp`` (``void *``, ``size_t``); ``out`` (``uint32_t``); see the
    module doc for ``data=``, ``length=``, ``into=``.
    """

    def configure(self, rss_key: bytes | str = RSS_KEY, data: str | None = None,
                  length: str | None = None, into: str | None = None) -> None:
        self.rss_key = bytes.fromhex(rss_key) if isinstance(rss_key, str) else bytes(rss_key)
        if len(self.rss_key) < 8:
            raise self.loc.error("ToeplitzHash: rss_key must have at least 8 bytes")
        self._ports(data, length, into)

    def _call(self, data: str, length: str) -> str:
        return f"floem_toeplitz(rss_key, {len(self.rss_key)}, {data}, {length})"

    def _prelude(self) -> str:
        return f"static const uint8_t rss_key[{len(self.rss_key)}] = {c_bytes(self.rss_key)};"


class RSSHash(Element):
    """The receive-side-scaling hash of a checked UDP frame, as a NIC computes it.

    Toeplitz over source address, destination address, source port and
    destination port (12 bytes, network order) with ``rss_key`` (default:
    the standard `RSS_KEY`); the frame must have passed `CheckUDP`. The hash
    is stored in ``into`` (a C lvalue, e.g. ``"state->hash"``) when given,
    else passed on after the frame as a fourth value.

    Ports: ``inp`` frame; ``out`` frame (+ ``uint32_t`` hash without ``into``).
    """

    c_headers = _UDP_HEADERS + HEADERS
    c_sources = _UDP_SOURCES + SOURCES

    def configure(self, rss_key: bytes | str = RSS_KEY, into: str | None = None) -> None:
        self.rss_key = bytes.fromhex(rss_key) if isinstance(rss_key, str) else bytes(rss_key)
        if len(self.rss_key) < 16:
            raise self.loc.error("RSSHash: rss_key must have at least 16 bytes")
        self.into = into
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME) if into is not None else Output(*FRAME, Uint(32))

    def impl(self) -> None:
        store, extra = (f"{self.into} = h;", "") if self.into is not None else ("", ", h")
        self.run_c(f'''
            {read_frame()}
            static const uint8_t rss_key[{len(self.rss_key)}] = {c_bytes(self.rss_key)};
            struct floem_flow_key key;
            floem_udp_flow_key(data, &key);
            uint32_t h = floem_toeplitz(rss_key, sizeof rss_key, &key, 12);
            {store}
            output {{ out(size, data, buf{extra}); }}
        ''')


class Steer(Element):
    """Choose the queue instance of a packet: ``state->qid = hash % n``.

    The hash arrives on ``inp``, or is read from ``hash`` (a C expression,
    e.g. ``"state->hash"``; ``inp`` then carries nothing). ``qid`` names the
    lvalue to set (default ``state->qid``, the field queues read). Put it
    right before ``q.enq[...]`` of a queue with ``inst=n``.

    Ports: ``inp`` (``uint32_t``, or nothing with ``hash=``); ``out`` (no value).
    """

    def configure(self, n: int, hash: str | None = None, qid: str = "state->qid") -> None:
        if not isinstance(n, int) or n < 1:
            raise self.loc.error(f"Steer: n must be a positive integer, not {n!r}")
        self.n, self.hash, self.qid = n, hash, qid
        self.inp = Input() if hash is not None else Input(Uint(32))
        self.out = Output()

    def impl(self) -> None:
        h = f"inp(); uint32_t h = {self.hash};" if self.hash is not None else "uint32_t h = inp();"
        self.run_c(f'''
            {h}
            {self.qid} = (int)(h % {self.n}u);
            output {{ out(); }}
        ''')
