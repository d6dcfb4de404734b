"""The counting plugin (floem/explore/count_plugin.c) under qemu-user of each ISA, with the
runtime's counting calls (runtime/src/count.c): a program whose turns do a known number of
atomic adds on as many lines and stream through an array, in two threads one after the
other.

Each thread is named by the function it started in (pthread_create is wrapped as in a
counting build), counts only its turns, and counts each atomic add once in its ISA's terms
(a lock-prefixed add on x86-64, an exclusive pair on AArch64, an LLD/SCD pair on MIPS64);
the same program counted twice gives the same instructions and atomics; with caches
simulated, each thread misses its own first level as the other does, while the last level,
shared, was warmed by the first thread for the second; a second level is each thread's own,
as the first is. A NIC manager core's sync-layer rounds are counted when they move entries,
and apart when they do not (floem_count_idle), with how many there were, and the DMA
engine's work inside a round (a pause) is not. With element
functions named, each
thread's counts are charged to the element running (the functions it calls that are not
elements included), with each element's calls of another and of floem_engine_end.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import ROOT
from floem.builder import cache_root
from floem.explore.plugin import plugin_arguments, read_counts

PROGRAM = r"""
#include "floem/runtime.h"
#include <pthread.h>

#define TURNS 10
#define LINES 1024                              /* 64 KB: 16 times the first level */
static uint64_t counters[LINES * 8];            /* one in each 64-byte line */
static unsigned char array[LINES * 64];

static void *worker(void *arg)
{
    unsigned sum = 0;
    for (int turn = 0; turn < TURNS; turn++) {
        floem_packet_begin();
        for (int i = 0; i < LINES; i++)
            __atomic_fetch_add(&counters[i * 8], 1, __ATOMIC_RELAXED);
        for (int i = 0; i < LINES; i++)
            sum += ((volatile unsigned char *)array)[i * 64];
        floem_count_turn_end();
        for (int i = 0; i < 100; i++)                   /* not counted */
            __atomic_fetch_add(&counters[0], 1, __ATOMIC_RELAXED);
    }
    *(unsigned *)arg = sum;
    return NULL;
}

static void *manager(void *arg)
{
    (void)arg;
    floem_count_manager();
    for (int round = 0; round < 4; round++) {       /* rounds 1 and 3 move nothing */
        floem_count_pause();                        /* as floem_sync_manage does */
        bool counting = floem_count_sync_begin();
        for (int i = 0; i < 100; i++)
            __atomic_fetch_add(&counters[i * 8], 1, __ATOMIC_RELAXED);
        floem_count_pause();                        /* the DMA engine's work: not counted */
        for (int i = 0; i < 50; i++)
            __atomic_fetch_add(&counters[i * 8], 1, __ATOMIC_RELAXED);
        floem_count_resume();
        floem_count_sync_end(counting, round % 2 == 0);
        floem_count_resume();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        pthread_t thread;
        return pthread_create(&thread, NULL, manager, NULL) || pthread_join(thread, NULL);
    }
    unsigned sums[2];
    for (int i = 0; i < 2; i++) {                   /* one after the other */
        pthread_t thread;
        if (pthread_create(&thread, NULL, worker, &sums[i]) != 0 || pthread_join(thread, NULL))
            return 1;
    }
    return counters[0] == 2 * TURNS * (1 + 100) ? 0 : 2;
}
"""

#: ISA -> (C compiler and flags, qemu-user and its flags), as floem/platforms builds and runs
ISAS = {
    "x86-64": (["cc"], ["qemu-x86_64"]),
    "aarch64": (["aarch64-linux-gnu-gcc", "-mcpu=cortex-a72", "-mno-outline-atomics",
                 "-static"], ["qemu-aarch64", "-cpu", "cortex-a72"]),
    "mips64": (["mips64-linux-gnuabi64-gcc", "-march=mips64r2", "-mtune=octeon3", "-static"],
               ["qemu-mips64"]),
}
#: I1:D1:LL: 4 KB first levels, a 1 MB last level, 64-byte lines
GEOMETRY = "4096,4,64:4096,4,64:1048576,16,64"
#: I1:D1:L2:LL: the same with a 256 KB second level, room for both arrays
SECOND = "4096,4,64:4096,4,64:262144,8,64:1048576,16,64"


def build(tmp_path, isa: str, program: str = PROGRAM, name: str = "program") -> str:
    source = tmp_path / f"{name}.c"
    source.write_text(program)
    executable = str(tmp_path / f"{name}-{isa}")
    runtime = os.path.join(ROOT, "runtime")
    subprocess.run([*ISAS[isa][0], "-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra",
                    "-Werror", "-pthread", "-DFLOEM_COUNT_INSTRUCTIONS",
                    f"-I{runtime}/include", "-o", executable, str(source),
                    f"{runtime}/src/count.c", "-Wl,--wrap=pthread_create"], check=True)
    return executable


def counted(executable: str, isa: str, out: str, geometry: str | None = None,
            *args: str):
    subprocess.run([*ISAS[isa][1], *plugin_arguments(cache_root(), out, geometry),
                    executable, *args], check=True, timeout=120)
    return read_counts(out)


@pytest.mark.parametrize("isa", list(ISAS))
def test_each_thread_counts_its_turns_and_atomics_in_its_isa(tmp_path, isa: str) -> None:
    executable = build(tmp_path, isa)
    threads = counted(executable, isa, str(tmp_path / "count"))
    again = counted(executable, isa, str(tmp_path / "again"))
    assert [t.root for t in threads] == ["main", "worker", "worker"]
    main, first, second = threads
    assert main.counts["Ir"] == 0                           # main has no turns
    for t in (first, second):
        assert t.counts["Ge"] == 10 * 1024                  # its turns' adds, once each
        assert t.counts["Ir"] > 10 * 2 * 1024               # an add and a load at least
        assert t.counts["I1mr"] == t.counts["D1mr"] == 0    # no cache simulated
    assert first.counts["Ir"] == second.counts["Ir"]
    assert [t.counts for t in again] == [t.counts for t in threads]


@pytest.mark.parametrize("isa", list(ISAS))
def test_each_thread_has_its_own_first_level_and_shares_the_last(tmp_path, isa: str) -> None:
    executable = build(tmp_path, isa)
    main, first, second = counted(executable, isa, str(tmp_path / "count"), GEOMETRY)
    # every turn adds to 1,024 lines and loads 1,024 others, through a 64-line first
    # level: all miss (an atomic add is a load), in each thread
    for t in (first, second):
        assert 10 * 2048 <= t.counts["D1mr"] <= 10 * 2048 + 100
    # the last level holds both arrays after the first thread's first turn
    assert 2040 <= first.counts["DLmr"] <= 2048 + 100
    assert second.counts["DLmr"] < 50
    assert first.counts["I1mr"] >= first.counts["ILmr"] > 0


@pytest.mark.parametrize("isa", ["x86-64", "mips64"])
def test_a_second_level_is_each_threads_own(tmp_path, isa: str) -> None:
    executable = build(tmp_path, isa)
    main, first, second = counted(executable, isa, str(tmp_path / "count"), SECOND)
    for t in (first, second):
        assert 10 * 2048 <= t.counts["D1mr"] <= 10 * 2048 + 100
        # its own second level holds both arrays after its first turn: those miss it
        assert 2040 <= t.counts["D2mr"] <= 2048 + 100
    assert 2040 <= first.counts["DLmr"] <= 2048 + 100      # the shared last level, warmed
    assert second.counts["DLmr"] < 50
    without = counted(executable, isa, str(tmp_path / "without"), GEOMETRY)
    assert without[1].counts["D2mr"] == without[1].counts["D1mr"]   # none: every miss goes on


def test_a_manager_counts_the_rounds_that_move_entries_and_apart_those_that_do_not(
        tmp_path) -> None:
    executable = build(tmp_path, "x86-64")
    main, manager = counted(executable, "x86-64", str(tmp_path / "count"), None, "manager")
    assert manager.root == "manager"
    assert manager.counts["Ge"] == 2 * 100                  # rounds 0 and 2 of four
    assert (manager.rounds, manager.idle_rounds) == (4, 2)
    assert manager.idle["Ge"] == 2 * 100                    # rounds 1 and 3
    assert manager.idle["Ir"] == manager.counts["Ir"]       # the same work each round
    assert main.idle_rounds == 0 and not main.idle


ELEMENTS = r"""
#include "floem/runtime.h"

static unsigned long lines[64 * 8];

__attribute__((noinline)) static void helper(int n)    /* not an element: its caller's */
{
    for (int i = 0; i < n; i++)
        __atomic_fetch_add(&lines[i * 8], 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) void second(void)
{
    helper(3);
    floem_engine_begin();                                  /* an engine's work: not counted */
    floem_engine_end(0, 16);                               /* its two adds: second's */
}

__attribute__((noinline)) void first(void)
{
    helper(5);
    second();
    __atomic_fetch_add(&lines[0], 1, __ATOMIC_RELAXED);    /* after it returns: first's */
}

int main(void)
{
    for (int turn = 0; turn < 10; turn++) {
        floem_packet_begin();
        first();
        __atomic_fetch_add(&lines[8], 1, __ATOMIC_RELAXED);  /* outside every element */
        floem_count_turn_end();
    }
    return 0;
}
"""


@pytest.mark.parametrize("isa", list(ISAS))
def test_counts_are_charged_to_the_element_running(tmp_path, isa: str) -> None:
    executable = build(tmp_path, isa, ELEMENTS, "elements")
    names = tmp_path / "elements.txt"
    names.write_text("first\nsecond\n")
    out = str(tmp_path / "count")
    subprocess.run([*ISAS[isa][1], *plugin_arguments(cache_root(), out, None, str(names)),
                    executable], check=True, timeout=120)
    (main,) = read_counts(out)
    assert main.counts["Ge"] == 10 * (5 + 3 + 2 + 1 + 1)
    assert main.elements["first"]["Ge"] == 10 * (5 + 1)
    assert main.elements["second"]["Ge"] == 10 * (3 + 2)
    assert main.calls == {("first", "second"): 10, ("second", "floem_engine_end"): 10}
    inside = main.elements["first"]["Ir"] + main.elements["second"]["Ir"]
    assert 0 < inside < main.counts["Ir"]                  # the outside add and the loop
