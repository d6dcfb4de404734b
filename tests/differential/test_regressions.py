"""Bugs the differential test found that are not fixed yet (docs/testing.md).

Each program in ``regressions/`` prints its ``.expected`` file once its bug is fixed, so
it is an ``xfail(strict=True)`` case here: the fix makes it pass, which fails this test
until the program moves to ``tests/programs/`` (where every program must pass) and its
entry below goes.
"""
from __future__ import annotations

import os

import pytest

from conftest import floem

REGRESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regressions")

#: Each program's `floem run` options and the bug it shows.
KNOWN = {
    # --nic-managers 0: the NIC thread runs the manager after each packet, so the first
    # enqueue always comes before the first read (with a manager core, most runs drop too).
    "nic_lossy_room": (["--nic-managers", "0"],
                       "a NIC enqueue into a lossy queue in host memory drops the packet while "
                       "the sync layer's manager has not yet read which host entries are free "
                       "(floem_sync_enq_reserve returns NULL before that read, and the enqueue "
                       "of queues.c.j2 drops on NULL): the host instance has room, so on the "
                       "CPU nothing is dropped"),
}


def run(app: str, *options: str) -> tuple[str, str]:
    """``floem run`` one regression program (it must exit 0); its stdout and the expected."""
    path = os.path.join(REGRESSIONS, app + ".py")
    with open(os.path.join(REGRESSIONS, app + ".expected")) as f:
        expected = f.read()
    result = floem("run", "--timeout", "60", *options, path)
    assert result.returncode == 0, result.stderr
    return result.stdout, expected


@pytest.mark.parametrize("app", [pytest.param(name, marks=pytest.mark.xfail(strict=True,
                                                                            reason=reason))
                                 for name, (_, reason) in KNOWN.items()])
def test_known_bug(app: str) -> None:
    stdout, expected = run(app, *KNOWN[app][0])
    assert stdout == expected


def test_lossy_room_on_the_cpu_drops_nothing() -> None:
    """The expectation of nic_lossy_room holds where the queue has no NIC side."""
    stdout, expected = run("nic_lossy_room", "-D", "device=cpu")
    assert stdout == expected
