"""AES-128-CBC encryption and decryption of buffers or UDP payloads, in place.

The result is byte for byte OpenSSL's ``aes-128-cbc`` without padding (so
lengths must be multiples of 16). On x86 CPUs with AES-NI the elements use
it; elsewhere (and on NIC cores: Arm, MIPS) they use portable table-based
C. ``portable=True``, or the environment variable ``FLOEM_AES_PORTABLE=1``
when the program runs, forces the portable code; ``engine=True`` hands the
work to the NIC platform's crypto engine (see `AESEncrypt`). ``library/c/aes.h``
(``floem_aes128_init``, ``floem_aes128_cbc_encrypt`` / ``_decrypt``) is
visible to bodies.

Each element holds one key and IV, given as 16 bytes or 32 hex digits; the
key is expanded once, by the first packet, and shared by the segment's
threads.
"""
from __future__ import annotations

from floem import Element, Input, Output, Pointer, SizeT, Uint

from ._support import FRAME, c_bytes, c_file, fixed_bytes, read_frame
from .headers import HEADERS as _UDP_HEADERS, SOURCES as _UDP_SOURCES

HEADERS = (c_file("aes.h"),)
SOURCES = (c_file("aes.c"),)

BUFFER = (Pointer(Uint(8)), SizeT)


class _AESCBC(Element):
    """Shared by `AESEncrypt` and `AESDecrypt`: ``direction`` is ``encrypt`` or ``decrypt``."""

    c_headers = _UDP_HEADERS + HEADERS
    c_sources = _UDP_SOURCES + SOURCES
    direction = ""

    def configure(self, key: bytes | str, iv: bytes | str, portable: bool = False,
                  frame: bool = False, engine: bool = False) -> None:
        try:
            self.key = fixed_bytes(key, 16, "key")
            self.iv = fixed_bytes(iv, 16, "iv")
        except ValueError as e:
            raise self.loc.error(f"{type(self).__name__}: {e}") from None
        self.allow_aesni = 0 if portable else 1
        self.engine = bool(engine)
        self.frame = frame
        types = FRAME if frame else BUFFER
        self.inp = Input(*types)
        self.out = Output(*types)
        self.drop = Output(*types)

    def impl(self) -> None:
        self.run_c(self._body(self.allow_aesni, engine=False))

    def impl_nic(self) -> None:
        """NIC cores have no AES instructions: the portable C, or the platform's engine."""
        self.run_c(self._body(0, self.engine))

    def _body(self, allow_aesni: int, engine: bool) -> str:
        if self.frame:
            read = (read_frame() + " uint8_t *at = floem_udp_payload(data);"
                    " size_t n = floem_udp_payload_len(data);")
            values = "size, data, buf"
        else:
            read = "(uint8_t *at, size_t n) = inp();"
            values = "at, n"
        # The engine, or the CPU's AES instructions: work the model charges by its rate.
        offload = "1" if engine else "ctx.aesni"
        return f'''
            static const uint8_t key[16] = {c_bytes(self.key)};
            static const uint8_t iv[16] = {c_bytes(self.iv)};
            static struct floem_aes128 ctx;
            static int ready;
            {read}
            floem_aes128_init_once(&ctx, &ready, key, {allow_aesni});
            int ok = n % 16 == 0;
            if (ok) {{
                if ({offload})
                    floem_engine_begin();
                floem_aes128_cbc_{self.direction}(&ctx, iv, at, at, n);
                if ({offload})
                    floem_engine_end(FLOEM_ENGINE_CRYPTO, n);
            }}
            output switch {{
                case ok: out({values});
                else: drop({values});
            }}
        '''


class AESEncrypt(_AESCBC):
    """Encrypt with AES-128-CBC in place: a buffer, or with ``frame=True`` a UDP payload.

    ``AESEncrypt(key=..., iv=...)``: ``inp`` carries ``(uint8_t *p, size_t
    len)``. With ``frame=True`` ports carry frames and the UDP payload of
    each (which must have passed `CheckUDP`) is encrypted. A length that is
    not a multiple of 16 sends the packet, untouched, to ``drop``.
    ``portable=True`` forces the portable C over AES-NI. ``engine=True`` (for
    NIC segments) hands the work to the platform's crypto engine: the
    portable code runs between ``floem_engine_begin()`` and
    ``floem_engine_end(FLOEM_ENGINE_CRYPTO, len)`` (runtime.h), so the
    performance model charges the engine's rate instead of the instructions,
    and ``--report`` prints the calls and bytes (the payloads encrypted) as
    ``floem: engine crypto (process P): calls N, bytes M``. Encryption with
    AES-NI is reported the same way: the model charges the CPU's AES
    instructions by their published rate (CBC is bound by their latency,
    which an instruction count does not show).

    Ports: ``inp``; ``out``; ``drop`` (all the same: buffer or frame).
    """

    direction = "encrypt"


class AESDecrypt(_AESCBC):
    """Decrypt AES-128-CBC in place; the inverse of `AESEncrypt` with the same key and IV.

    Takes the same options (``portable=``, ``frame=``, ``engine=``).

    Ports: ``inp``; ``out``; ``drop`` (all the same: buffer or frame).
    """

    direction = "decrypt"
