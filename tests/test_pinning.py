"""Host segment threads run on the CPUs their `cores=` name; without `cores=` the OS places them.

Each thread prints, once, how many CPUs it may run on (its affinity) and the one it is on.
"""
from __future__ import annotations

import os
import re

from conftest import floem

APP = '''
from floem import Element, Input, Output, Segment, SizeT

class WhereAmI(Element):
    def configure(self, label):
        self.label = label
        self.out = Output(SizeT)

    def impl(self):
        self.run_c(r"""
            static _Thread_local int told;
            if (!told) {
                cpu_set_t set;
                pthread_getaffinity_np(pthread_self(), sizeof set, &set);
                fprintf(stderr, "%s[%d]: allowed %d, on %d\\n", "SEGMENT", floem_core_id,
                        CPU_COUNT(&set), sched_getcpu());
                told = 1;
            }
            output { out(0); }
        """.replace("SEGMENT", self.label))

class Pace(Element):
    def configure(self):
        self.inp = Input(SizeT)

    def impl(self):
        self.run_c("(void)inp(); usleep(1000);")

def segment(name, **kw):
    class s(Segment):
        def impl(self):
            WhereAmI(label=name) >> Pace()
    s(name, **kw)

segment("pinned", cores=[1, 0])
segment("floating")
'''


def test_threads_run_on_their_cores(tmp_path) -> None:
    app = tmp_path / "where.py"
    app.write_text(APP)
    env = {"FLOEM_CFLAGS": os.environ.get("FLOEM_CFLAGS", "")
           + " -include sched.h -include pthread.h -include unistd.h"}
    result = floem("run", str(app), "--duration", "1", env=env)
    assert result.returncode == 0, result.stderr
    seen = {(seg, int(i)): (int(allowed), int(on)) for seg, i, allowed, on in
            re.findall(r"^(\w+)\[(\d+)\]: allowed (\d+), on (\d+)$", result.stderr, re.M)}
    cpus = sorted(os.sched_getaffinity(0))
    # cores=[1, 0]: thread 0 on the second CPU this process may use, thread 1 on the first
    # (a core number beyond them wraps around)
    assert seen[("pinned", 0)] == (1, cpus[1 % len(cpus)])
    assert seen[("pinned", 1)] == (1, cpus[0])
    assert seen[("floating", 0)][0] == len(cpus)
