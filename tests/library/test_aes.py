"""floem.library.aes: AES-128-CBC, AES-NI and portable, byte for byte against `openssl enc`."""
from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from .helpers import run_app
from .netref import READ_RECORDS, frame, records

APP = r'''
from floem import CallableSegment, Input, Int, Output, Pointer, SizeT, Uint, include, main
from floem.library import FRAME
from floem.library.aes import AESDecrypt, AESEncrypt
from floem.library.basic import Constant
from floem.library.headers import CheckUDP

KEY = "KEY_HEX"
IV = "IV_HEX"

include(r"""
static inline void print_hex(const char *tag, int ret, const void *p, size_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    printf("%s %d ", tag, ret);
    for (size_t i = 0; i < n; i++)
        printf("%02x", b[i]);
    printf("-\n");
}
""")


def crypt(name, make, frame=False):
    class seg(CallableSegment):
        def configure(self):
            self.inp = Input(*FRAME) if frame else Input(Pointer(Uint(8)), SizeT)
            self.out = Output(Int)

        def impl(self):
            c = make()
            if frame:
                check = CheckUDP()
                self.inp >> check
                check.out >> c
                check.drop >> Constant(value="-2") >> self.out
            else:
                self.inp >> c
            c.out >> Constant(value="0") >> self.out
            c.drop >> Constant(value="-1") >> self.out
    seg(name)


crypt("enc_fast", lambda: AESEncrypt(key=KEY, iv=IV))
crypt("enc_portable", lambda: AESEncrypt(key=KEY, iv=IV, portable=True))
crypt("dec_fast", lambda: AESDecrypt(key=KEY, iv=IV))
crypt("dec_portable", lambda: AESDecrypt(key=bytes.fromhex(KEY), iv=bytes.fromhex(IV), portable=True))
crypt("enc_engine", lambda: AESEncrypt(key=KEY, iv=IV, engine=True))
crypt("dec_engine", lambda: AESDecrypt(key=KEY, iv=IV, engine=True))
crypt("enc_frame", lambda: AESEncrypt(key=KEY, iv=IV, frame=True), frame=True)

main(r"""
    printf("aesni %d\n", floem_aes_ni_usable());
''' + READ_RECORDS % ("argv[1]", r"""
            uint8_t *b = malloc(len + 1);
            int (*const fns[6])(uint8_t *, size_t) = {enc_fast, enc_portable, dec_fast, dec_portable,
                                                      enc_engine, dec_engine};
            const char *tags[6] = {"E", "EP", "D", "DP", "EE", "DE"};
            for (int i = 0; i < 6; i++) {
                memcpy(b, p, len);
                int r = fns[i](b, len);
                print_hex(tags[i], r, b, len);
            }
            free(b);""") + READ_RECORDS % ("argv[2]", r"""
            int r = enc_frame(len, p, NULL);
            print_hex("F", r, p, len);""") + r'''
""")
'''


def openssl(data: bytes, key: bytes, iv: bytes, decrypt: bool = False) -> bytes:
    command = ["openssl", "enc", "-aes-128-cbc", "-K", key.hex(), "-iv", iv.hex(), "-nopad"]
    return subprocess.run(command + (["-d"] if decrypt else []), input=data,
                          capture_output=True, check=True).stdout


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_aes_matches_openssl(tmp_path) -> None:
    rng = random.Random(11)
    key, iv = rng.randbytes(16), rng.randbytes(16)
    payloads = [rng.randbytes(1024) for _ in range(4)] + [b"", rng.randbytes(16),
                                                          rng.randbytes(48), rng.randbytes(17)]
    frames = [frame(rng.randbytes(1024)), frame(rng.randbytes(1000)), frame(b"")[:30]]
    (tmp_path / "payloads.bin").write_bytes(records(payloads))
    (tmp_path / "frames.bin").write_bytes(records(frames))
    source = APP.replace("KEY_HEX", key.hex()).replace("IV_HEX", iv.hex())
    args = (str(tmp_path / "payloads.bin"), str(tmp_path / "frames.bin"))
    native = run_app(tmp_path, source, *args).splitlines()
    portable = run_app(tmp_path, source, *args, env={"FLOEM_AES_PORTABLE": "1"}).splitlines()

    with open("/proc/cpuinfo") as f:
        has_aes = " aes " in f.read().replace("\n", " ")
    assert native[0] == f"aesni {int(has_aes)}"
    assert portable[0] == "aesni 0"
    assert native[1:] == portable[1:]

    want = []
    for p in payloads:
        if len(p) % 16:
            want += [f"{tag} -1 {p.hex()}-" for tag in ("E", "EP", "D", "DP", "EE", "DE")]
            continue
        enc, dec = openssl(p, key, iv), openssl(p, key, iv, decrypt=True)
        want += [f"{tag} 0 {enc.hex()}-" for tag in ("E", "EP")]
        want += [f"{tag} 0 {dec.hex()}-" for tag in ("D", "DP")]
        want += [f"EE 0 {enc.hex()}-", f"DE 0 {dec.hex()}-"]
    want.append(f"F 0 {(frames[0][:42] + openssl(frames[0][42:], key, iv)).hex()}-")
    want += [f"F -1 {frames[1].hex()}-", f"F -2 {frames[2].hex()}-"]
    assert native[1:] == want
