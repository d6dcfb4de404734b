"""floem.library.hash: lookup3, CRC32C and Toeplitz against published vectors and Python
references; RSSHash on UDP frames; hashing into per-packet state and steering to queue instances."""
from __future__ import annotations

import random

from .hashref import (CRC32C_VECTORS, LOOKUP3_VECTORS, RSS_IPV4_VECTORS, RSS_KEY, crc32c,
                      hashlittle, rss_input, toeplitz)
from .helpers import run_app
from .netref import READ_RECORDS, frame, records

APP = r'''
from floem import (CallableSegment, Element, Field, Flow, Input, Output, PerPacket, Pointer,
                   Queue, SizeT, State, Uint, Void, main)
from floem.library import FRAME
from floem.library.hash import CRC32CHash, JenkinsHash, RSSHash, Steer, ToeplitzHash

KEY = (Pointer(Void), SizeT)


def hasher(name, make):
    class seg(CallableSegment):
        def configure(self):
            self.inp = Input(*KEY)
            self.out = Output(Uint(32))

        def impl(self):
            self.inp >> make() >> self.out
    seg(name)


hasher("jenkins0", lambda: JenkinsHash())
hasher("jenkins1", lambda: JenkinsHash(seed=1))
hasher("jenkins_dead", lambda: JenkinsHash(seed=0xdeadbeef))
hasher("crc", lambda: CRC32CHash())
hasher("toeplitz", lambda: ToeplitzHash())


class LastValue(Element):
    def configure(self):
        self.inp = Input(*FRAME, Uint(32))
        self.out = Output(Uint(32))

    def impl(self):
        self.run_c("(size_t n, uint8_t *d, void *b, uint32_t h) = inp(); (void)n; (void)d; (void)b; "
                   "output { out(h); }")


class rss(CallableSegment):
    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(Uint(32))

    def impl(self):
        self.inp >> RSSHash() >> LastValue() >> self.out


rss("rss")

class Request(State):
    key = Field(Pointer(Void))
    keylen = Field(SizeT)
    hash = Field(Uint(32))
    qid = Field("int")


class SetKey(Element):
    def configure(self):
        self.inp = Input(*KEY)
        self.out = Output()

    def impl(self):
        self.run_c("(void *k, size_t n) = inp(); state->key = k; state->keylen = n; "
                   "output { out(); }")


class GetHash(Element):
    def configure(self):
        self.inp = Input()
        self.out = Output(Uint(32))

    def impl(self):
        self.run_c("output { out(state->hash); }")


requests = Queue("requests", inst=3, size=64)


class Steering(Flow):
    state = PerPacket(Request)

    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(*KEY)

            def impl(self):
                (self.inp >> SetKey()
                 >> JenkinsHash(data="state->key", length="state->keylen", into="state->hash")
                 >> CRC32CHash(data="state->key", length="state->keylen") >> Steer(n=3)
                 >> requests)

        class pop(CallableSegment):
            def configure(self):
                self.inp = Input("int")
                self.out = Output(Uint(32))

            def impl(self):
                self.inp >> requests.qid
                requests >> GetHash() >> self.out

        push("push")
        pop("pop", default_return="0xffffffffu")


Steering()

main(r"""
''' + READ_RECORDS % ("argv[1]", r"""printf("K %u %u %u %u %u\n", jenkins0(p, len), jenkins1(p, len),
                                     jenkins_dead(p, len), crc(p, len), toeplitz(p, len));""") + r'''
''' + READ_RECORDS % ("argv[2]", r'printf("R %u\n", rss(len, p, NULL));') + r'''
    static uint8_t keys[100][40];
    int n = 0;
''' + READ_RECORDS % ("argv[1]", r"""if (n < 100 && len <= 40) { memcpy(keys[n], p, len); push(keys[n], len); n++; }""") + r'''
    for (int qid = 0; qid < 3; qid++) {
        uint32_t h;
        printf("Q%d", qid);
        while ((h = pop(qid)) != 0xffffffffu)
            printf(" %u", h);
        printf("\n");
    }
""")
'''


def test_hashes(tmp_path) -> None:
    rng = random.Random(3)
    keys = [k for k, _, _ in LOOKUP3_VECTORS] + [k for k, _ in CRC32C_VECTORS]
    keys += [bytes(rng.randrange(256) for _ in range(n)) for n in list(range(1, 37)) + [7] * 20]
    keys += [rss_input(*v[:4]) for v in RSS_IPV4_VECTORS] + [rss_input(*v[:4])[:8] for v in RSS_IPV4_VECTORS]
    frames = [frame(b"x", src_ip=s, dst_ip=d, sport=sp, dport=dp, udp_csum=False)
              for d, dp, s, sp, _, _ in RSS_IPV4_VECTORS]
    (tmp_path / "keys.bin").write_bytes(records(keys))
    (tmp_path / "frames.bin").write_bytes(records(frames))
    out = run_app(tmp_path, APP, str(tmp_path / "keys.bin"),
                  str(tmp_path / "frames.bin")).splitlines()

    hashes = {k: [int(x) for x in line.split()[1:]]
              for k, line in zip(keys, [x for x in out if x.startswith("K ")], strict=True)}
    for key, initval, want in LOOKUP3_VECTORS:
        assert hashes[key][{0: 0, 1: 1, 0xdeadbeef: 2}[initval]] == want
    for key, want in CRC32C_VECTORS:
        assert hashes[key][3] == want
    for d, dp, s, sp, ip_only, with_ports in RSS_IPV4_VECTORS:
        assert hashes[rss_input(d, dp, s, sp)][4] == with_ports
        assert hashes[rss_input(d, dp, s, sp)[:8]][4] == ip_only
    for key, got in hashes.items():
        assert got == [hashlittle(key, 0), hashlittle(key, 1), hashlittle(key, 0xdeadbeef),
                       crc32c(key), toeplitz(RSS_KEY, key)]

    assert [int(x.split()[1]) for x in out if x.startswith("R ")] == \
        [v[5] for v in RSS_IPV4_VECTORS]

    queues = [line.split()[1:] for line in out if line.startswith("Q")]
    assert queues == [[str(hashlittle(k)) for k in keys if crc32c(k) % 3 == qid]
                      for qid in range(3)]
