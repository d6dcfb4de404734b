"""Framers: where a message ends in a byte stream (``--net tcp``), for `FromNet`.

Over ``--net tcp`` the runtime accepts connections and hands the program one frame per
message (``runtime/include/floem/net.h``, "Streams"); a `Framer` given to
``FromNet(framer=...)`` says where each message ends, as a C function the runtime calls
with the bytes a connection has received from the start of its next message:

* `MEMCACHED_TEXT`: memcached's text protocol, a command line ending in ``\\n`` and, after
  a storage command (``set``, ``add``, ``replace``, ``append``, ``prepend``, ``cas``,
  ``ms``), the data block it announces (``<bytes>\\r\\n``), exactly where memcached 1.6
  reads or swallows one; a line of more than 2,048 bytes without ``\\n`` that is not a
  ``get`` closes the connection, as memcached closes it.
* `MEMCACHED_BINARY`: memcached's binary protocol, a 24-byte header and the body its
  length field announces; a byte other than the request magic (0x80) where a header
  starts closes the connection, as memcached closes it.
* `MEMCACHED`: either, chosen by the first byte of each connection (memcached's
  ``-B auto``).
* `length_prefixed`: any protocol whose messages carry their length in a field of 1, 2, 4
  or 8 bytes at a fixed place.

A program may give its own C function: ``Framer("my_framer", headers=(...), sources=(...))``.
"""
from __future__ import annotations

from .memcached import HEADERS as _MEMCACHED_HEADERS, SOURCES as _MEMCACHED_SOURCES
from ._support import c_file
from .net import Framer

__all__ = ["Framer", "MEMCACHED", "MEMCACHED_BINARY", "MEMCACHED_TEXT", "length_prefixed"]

MEMCACHED_TEXT = Framer("floem_frame_memcached_text", headers=_MEMCACHED_HEADERS,
                        sources=_MEMCACHED_SOURCES)
MEMCACHED_BINARY = Framer("floem_frame_memcached_binary", headers=_MEMCACHED_HEADERS,
                          sources=_MEMCACHED_SOURCES)
MEMCACHED = Framer("floem_frame_memcached", headers=_MEMCACHED_HEADERS,
                   sources=_MEMCACHED_SOURCES)

_SIZES = (1, 2, 4, 8)


def length_prefixed(size: int = 4, offset: int = 0, order: str = "big",
                    header: int | None = None, whole: bool = False,
                    max_length: int = 1 << 20) -> Framer:
    """A framer of messages that start with a ``header`` of fixed size (default: up to the
    end of the length field) holding a ``size``-byte length field at ``offset``, in
    ``order`` ("big" or "little"); the field is the length of the whole message when
    ``whole``, else of what follows the header. A message longer than ``max_length`` bytes
    (or shorter than its header) closes the connection. Raises ValueError on a layout that
    cannot be."""
    if size not in _SIZES:
        raise ValueError(f"length_prefixed: size must be one of {_SIZES}, not {size!r}")
    if order not in ("big", "little"):
        raise ValueError(f"length_prefixed: order must be 'big' or 'little', not {order!r}")
    if not isinstance(offset, int) or offset < 0:
        raise ValueError(f"length_prefixed: offset must be an integer >= 0, not {offset!r}")
    header = offset + size if header is None else header
    if not isinstance(header, int) or header < offset + size:
        raise ValueError(f"length_prefixed: the header ({header!r} bytes) must hold the "
                         f"length field (bytes {offset} to {offset + size - 1})")
    if not isinstance(max_length, int) or not header <= max_length < 1 << 63:
        raise ValueError(f"length_prefixed: max_length must be an integer from the header's "
                         f"{header} bytes up, not {max_length!r}")
    config = (f"{{.offset = {offset}, .size = {size}, .header = {header}, "
              f".little_endian = {'true' if order == 'little' else 'false'}, "
              f".whole = {'true' if whole else 'false'}, .max = {max_length}ull}}")
    return Framer("floem_frame_length_prefixed", "struct floem_length_prefix", config,
                  headers=(c_file("stream.h"),), sources=(c_file("stream.c"),))
