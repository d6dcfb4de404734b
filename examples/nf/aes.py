"""Encryption (Floem paper, section 7.1): AES-128-CBC of every UDP payload, in place.

    segment aes (-D device, -D cores):  FromNet -> CheckUDP -> Encrypt -> Reply -> ToNet
    Encrypt = AESEncrypt(frame=True), payloads not a multiple of 16 bytes counted in drops

The reply carries the ciphertext, byte for byte ``openssl enc -aes-128-cbc -nopad
-K KEY -iv IV`` of the payload (each packet is encrypted from the IV on). Parameters:

* ``-D key=HEX``, ``-D iv=HEX``: 32 hex digits each; the defaults are the FIPS-197 /
  NIST SP 800-38A CBC example key and IV.
* ``-D aesni=true|false`` (CPU): AES-NI when the CPU has it, or the library's portable
  table-based C. On the NIC it is ignored: NIC cores have no AES-NI, the NIC always
  runs the portable code (or its engine).
* ``-D engine=true|false`` (NIC, default false): true hands the work to the NIC
  platform's crypto engine (``AESEncrypt(engine=True)``) where the element runs on the NIC;
  an error with ``-D device=cpu``.

    floem run examples/nf/aes.py --port 9000
    floem run examples/nf/aes.py -D device=nic -D engine=true --nic liquidio --port 9000
"""
from floem import Composite, Field, Input, Output, State, Uint, param
from floem.library import FRAME, AESEncrypt

import nf

NIST_KEY = "2b7e151628aed2a6abf7158809cf4f3c"
NIST_IV = "000102030405060708090a0b0c0d0e0f"

where = nf.placement()
key = nf.hex_param("key", NIST_KEY, 16, help="AES-128 key, 32 hex digits")
iv = nf.hex_param("iv", NIST_IV, 16, help="CBC initialisation vector, 32 hex digits")
aesni = param("aesni", True, help="CPU: AES-NI when the CPU has it (false: portable C)")
engine = param("engine", False, help="NIC: hand AES to the NIC's crypto engine")
if engine and where.device == "cpu":
    raise nf.app_error("-D engine=true: the crypto engine is on the NIC; use -D device=nic")


class AESDrops(State):
    """Payloads the encryption dropped: their length is not a multiple of 16 bytes."""

    not_blocks = Field(Uint(64))
    packed = False
    report = True


drops = AESDrops("drops")


class Encrypt(Composite):
    """Encrypt the UDP payload in place; payloads that are not whole blocks leave on ``drop``."""

    def configure(self) -> None:
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        self.drop = Output(*FRAME)

    def impl(self) -> None:
        aes = AESEncrypt(key=key, iv=iv, frame=True, engine=engine,
                         portable=not aesni)
        self.inp >> aes
        aes.out >> self.out
        aes.drop >> nf.Tally(field="not_blocks", states=[drops]) >> self.drop


nf.serve("aes", Encrypt, where)
