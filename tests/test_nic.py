"""The NIC target: NIC programs on every platform, core limits, crashes, host memory only by DMA."""
from __future__ import annotations

import os
import shutil
import time

import pytest

from conftest import PROGRAMS, floem

NIC_APPS = sorted(f[:-3] for f in os.listdir(PROGRAMS) if f.startswith("nic_") and f.endswith(".py"))
PLATFORMS = {
    "emu": [],
    "bluefield": ["aarch64-linux-gnu-gcc", "qemu-aarch64"],
    "liquidio": ["mips64-linux-gnuabi64-gcc", "qemu-mips64"],
}


def platform_param(name: str) -> object:
    marks = [pytest.mark.slow] if PLATFORMS[name] else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("platform", [platform_param(p) for p in PLATFORMS])
@pytest.mark.parametrize("app", NIC_APPS)
def test_nic_program_same_output_on_every_platform(app: str, platform: str) -> None:
    missing = [t for t in PLATFORMS[platform] if shutil.which(t) is None]
    assert not missing, f"install {missing} (scripts/setup.sh does)"
    with open(os.path.join(PROGRAMS, app + ".expected")) as f:
        expected = f.read()
    result = floem("run", "--nic", platform, "--timeout", "120", os.path.join(PROGRAMS, app + ".py"),
                   timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected


@pytest.mark.parametrize("name", ["nic_roundtrip", "nic_lossy_room"])
def test_blocking_dma_instead_of_the_sync_layer_gives_the_same_output(name: str) -> None:
    app = os.path.join(PROGRAMS, name + ".py")
    result = floem("run", "--no-sync-layer", "--timeout", "60", app)
    assert result.returncode == 0, result.stderr
    with open(app[:-3] + ".expected") as f:
        assert result.stdout == f.read()


@pytest.mark.parametrize("name", ["nic_steering", "nic_lossy_room"])
def test_inline_managers_give_the_same_output(name: str) -> None:
    app = os.path.join(PROGRAMS, name + ".py")
    result = floem("run", "--nic-managers", "0", "--timeout", "60", app)
    assert result.returncode == 0, result.stderr
    with open(app[:-3] + ".expected") as f:
        assert result.stdout == f.read()


LIMIT_APP = '''
from floem import Element, Input, Output, Queue, Segment, target
class Src(Element):
    def configure(self):
        self.out = Output()
    def impl(self):
        self.run_c("output { out(); }")
class Sink(Element):
    def configure(self):
        self.inp = Input()
q = Queue("q", inst=12)
toward = Queue("toward")
class Rx(Segment):
    def impl(self):
        Src() >> q
class Work(Segment):
    def impl(self):
        q >> Sink()
class Host(Segment):
    def impl(self):
        Src() >> toward
class Up(Segment):
    def impl(self):
        toward >> Sink()
Rx("rx", device=target.NIC, cores=list(range(4)))
Host("host")                            # a queue to the NIC: the sync layer's manager runs
Up("up", device=target.NIC)
Work("work", device=target.NIC, cores=list(range(7)))   # <-- 4 + 1 + 7 + 1 manager > 12
'''


def test_liquidio_core_limit_is_an_error_at_the_segment(tmp_path) -> None:
    app = tmp_path / "app.py"
    app.write_text(LIMIT_APP)
    line = LIMIT_APP.splitlines().index(next(ln for ln in LIMIT_APP.splitlines() if "<--" in ln)) + 1
    result = floem("build", str(app), "--nic", "liquidio", "-o", str(tmp_path / "out"))
    assert result.returncode == 1
    assert f"{app}:{line}: error: " in result.stderr
    assert "beyond the 12 of --nic liquidio" in result.stderr
    assert "Traceback" not in result.stderr
    inline = floem("build", str(app), "--nic", "liquidio", "--nic-managers", "0",
                   "-o", str(tmp_path / "out2"))
    assert inline.returncode == 0, inline.stderr
    # Without a queue between the NIC and the host no manager runs, so none is counted.
    alone = tmp_path / "alone.py"
    alone.write_text(LIMIT_APP.replace('Host("host")', "").replace(
        'Up("up", device=target.NIC)', "").replace("range(7)", "range(8)"))
    nic_only = floem("build", str(alone), "--nic", "liquidio", "-o", str(tmp_path / "out3"))
    assert nic_only.returncode == 0, nic_only.stderr


CRASH_APP = '''
from floem import (CallableSegment, Element, Field, Flow, Input, Int, Output, PerPacket, Persistent,
                   Queue, Segment, State, main, target)
class Count(State):
    n = Field(Int)
class P(State):
    x = Field(Int)
class Make(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output()
    def impl(self):
        self.run_c("state->x = inp(); output { out(); }")
class Touch(Element):
    count = Persistent(Count)
    def states(self, count):
        self.count = count
    def configure(self):
        self.inp = Input()
    def impl(self):
        self.run_c("count->n += state->x;   /* a host address: faults on the NIC */")
count = Count("count")
q = Queue("q")
class F(Flow):
    state = PerPacket(P)
    def impl(self):
        class send(CallableSegment):
            def configure(self):
                self.inp = Input(Int)
            def impl(self):
                self.inp >> Make() >> q
        class touch(Segment):
            def impl(self):
                q >> Touch(states=[count])
        send("send")
        touch("touch", device=target.NIC)
F()
main("send(1); while (count->n == 0) usleep(1000); printf(\\"not reached\\\\n\\");")
'''


def test_dereferencing_a_host_address_crashes_the_nic_and_is_reported(tmp_path) -> None:
    app = tmp_path / "app.py"
    app.write_text(CRASH_APP)
    start = time.monotonic()
    result = floem("run", "--timeout", "60", str(app))
    assert time.monotonic() - start < 45
    assert "process 'nic' was killed by SIGSEGV" in result.stderr
    assert result.returncode != 0
    assert "not reached" not in result.stdout
