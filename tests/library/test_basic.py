"""floem.library.basic: Drop, Print, Display, Constant, Identity, Counter, Inject, Probe."""
from __future__ import annotations

import subprocess

from floem.ir.scalars import SCALARS
from floem.lang.types import Type
from floem.library.basic import printf_format

from .helpers import run_app, run_app_result

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


COUNTED = 200000
COUNTING = r"""
from floem import Element, Int, Output, Segment
from floem.library import Counter, Counts


class Numbers(Element):
    # A source: the numbers 1..%d, shared out among the threads running it.

    def configure(self):
        self.out = Output(Int)

    def impl(self):
        self.run_c('''
            static int next = 1;
            int n = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
            output switch { case n <= %d: out(n); }
        ''')


class Seen(Counts):
    report = True


one, two = Seen("one"), Seen("two")


class CountAlone(Segment):
    def impl(self):
        Numbers() >> Counter(configure=[Int, 0], states=[one])


class CountTogether(Segment):
    def impl(self):
        Numbers() >> Counter(configure=[Int, 0], states=[two])


CountAlone("alone")
CountTogether("together", cores=[0, 1])
""" % (COUNTED, COUNTED)


def test_a_counter_alone_adds_plainly_and_counters_together_atomically(tmp_path) -> None:
    """The same packets counted by the library's Counter in a segment of one thread (its
    state's only writer: `floem_add` adds plainly) and in one of two threads (atomic adds);
    `--report` prints both `report` states. A lost update would leave one short."""
    result = run_app_result(tmp_path, COUNTING, options=("--report", "--duration", "1"))
    total = COUNTED * (COUNTED + 1) // 2
    for name in ("one", "two"):
        assert f"floem: state {name} (Seen): packets {COUNTED}, bytes {total}\n" in result.stderr


def test_print_has_a_conversion_gcc_accepts_for_every_scalar_type(tmp_path) -> None:
    """Print's printf conversions come from the one table of scalar types: each one, for a
    value of its type, passes gcc's -Wformat checks and prints the value."""
    lines = [f'printf("{printf_format(Type(name))}\\n", ({name})65);' for name in SCALARS]
    source = tmp_path / "formats.c"
    source.write_text("#include <inttypes.h>\n#include <stdbool.h>\n#include <stdio.h>\n"
                      "#include <sys/types.h>\nint main(void)\n{\n    "
                      + "\n    ".join(lines) + "\n    return 0;\n}\n")
    subprocess.run(["gcc", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Wformat=2",
                    "-Werror", "-o", str(tmp_path / "formats"), str(source)], check=True)
    out = subprocess.run([str(tmp_path / "formats")], capture_output=True, text=True,
                         check=True).stdout.split()
    expected = {"char": "A", "bool": "1", "_Bool": "1"}
    assert out == [expected.get(name, "65") for name in SCALARS]
