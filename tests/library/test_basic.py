"""floem.library.basic: Drop, Print, Display, Constant, Identity, Counter, Inject, Probe."""
from __future__ import annotations

from .helpers import run_app

APP = r'''
from floem import CallableSegment, Double, Input, Int, Output, Segment, Uint, main
from floem.library.basic import (Constant, Counter, Counts, Display, Drop, Identity, Inject,
                                 Print, Probe)

done = Counts("done")
shared = Counts("shared")


class squares(Segment):
    def impl(self):
        (Inject(gen="i * i", count=20) >> Identity() >> Print(label="square")
         >> Probe(n=8, log="seen") >> Counter(ty=Int, states=[done]) >> Drop())


class workers(Segment):
    def impl(self):
        Inject(count=1000, ty=Uint(64)) >> Counter(ty=Uint(64), size=0, states=[shared])


class pair(CallableSegment):
    def configure(self):
        self.inp = Input(Int, Uint(64))
        self.out = Output(Double)

    def impl(self):
        (self.inp >> Print(ty=[Int, Uint(64)], label="pair %") >> Identity(ty=[Int, Uint(64)])
         >> Display(ty=[Int, Uint(64)], fmt='%d+%" PRIu64 "'))
        self.inp >> Constant(value="2.5", ty=Double) >> self.out


squares("squares")
workers("workers", cores=[0, 1])
pair("pair")

main(r"""
    while (__atomic_load_n(&done->packets, __ATOMIC_ACQUIRE) < 20)
        usleep(1000);
    printf("seen %" PRIu64 ":", seen->count);
    for (int k = 0; k < 8; k++)
        printf(" %d", floem_probe_last(seen, k));
    printf("\n");
    printf("returned %g\n", pair(-3, 18446744073709551615ull));
    while (__atomic_load_n(&shared->packets, __ATOMIC_ACQUIRE) < 1000)
        usleep(1000);
    usleep(20000);
    printf("shared %" PRIu64 " %" PRIu64 "\n", shared->packets, shared->bytes);
""")
'''


def test_basic_elements(tmp_path) -> None:
    out = run_app(tmp_path, APP).splitlines()
    assert out[:20] == [f"square {i * i}" for i in range(20)]
    assert out[20] == "seen 20: " + " ".join(str(i * i) for i in range(19, 11, -1))
    assert out[21:24] == ["pair % -3 18446744073709551615", "-3+18446744073709551615",
                          "returned 2.5"]
    assert out[24] == f"shared 1000 {sum(range(1000))}"
    assert len(out) == 25
