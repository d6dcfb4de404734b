"""Checking a placement by running it: its output must be the all-CPU build's.

Each placement checked is written as an app file (`floem.place.app_file`) with the
threads it will run with and counted on the workload as `floem explore` counts a design
(`floem.explore.measure.measure`: its NIC's processes built for the NIC platform's
``--nic`` target and run under qemu-user of its ISA, every process counted by Floem's
plugin), which gives the placement's prediction from its own counts; the frames that run
sent are compared with those of the all-CPU build, one thread, on the same capture
(``floem run --net pcap``): in order when every part has one thread, as a multiset when
several threads may take packets in another order. Several threads can also change what
a program whose output depends on the order of its packets computes (a sequencer numbers
them): when the frames differ, the placement runs again with one thread in every part,
and only a difference there is the compiler's bug; the placement is then not checked
with its threads, and says why.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

import dpkt

from floem.explore.measure import Geometry, Measurement, Replay, RunFailed, Workload, measure
from floem.explore.sweep import layout
from floem.ir import Cut
from floem.place.app_file import placed_source


def sent_frames(app: str, cuts: list[Cut], defines: list[str], options: list[str],
                workload: Workload) -> list[bytes]:
    """The frames ``app`` cut by ``cuts`` sends when ``workload`` is replayed through it."""
    with tempfile.TemporaryDirectory(prefix="floem-place-") as tmp:
        placed = os.path.join(tmp, os.path.basename(app))
        with open(placed, "w") as f:
            f.write(placed_source(app, cuts, {}, placed, "checked by floem place"))
        with Replay(placed, defines, options, workload) as run:
            run.finished()
            run.stop()
            return _read_frames(run.output)


def counted_run(app: str, cuts: list[Cut], values: dict[str, Any], config: dict[str, str],
                options: list[str], workload: Workload, caches: tuple[Geometry, Geometry],
                target: str) -> tuple[Measurement, list[bytes]]:
    """``app`` cut by ``cuts`` with the parameter defaults ``values`` (the app file
    `floem place` writes), configured by ``config``, counted on ``workload`` with its
    threads, its NIC's processes built for the ``--nic`` ``target``, simulating
    ``caches`` (the NIC's, the host's): its counts, and the frames it sent."""
    with tempfile.TemporaryDirectory(prefix="floem-place-") as tmp:
        placed = os.path.join(tmp, os.path.basename(app))
        with open(placed, "w") as f:
            f.write(placed_source(app, cuts, values, placed, "counted by floem place"))
        sent = os.path.join(tmp, "sent.pcap")
        m = measure(placed, [f"{k}={v}" for k, v in config.items()], options, workload,
                    layout(placed, config), [caches], nic_target=target, sent_to=sent)
        return m, _read_frames(sent)


def _read_frames(path: str) -> list[bytes]:
    """The frames of the capture a run wrote at ``path``."""
    try:
        with open(path, "rb") as f:
            return [bytes(buf) for _ts, buf in dpkt.pcap.Reader(f)]
    except (OSError, ValueError, dpkt.dpkt.Error) as e:
        raise RunFailed(f"cannot read what the run sent: {e}") from None


def same_output(reference: list[bytes], frames: list[bytes]) -> str | None:
    """None when ``frames`` are ``reference``, in order; else what differs, in a few words."""
    if frames == reference:
        return None
    if len(frames) != len(reference):
        return f"sent {len(frames)} frames, the all-CPU build {len(reference)}"
    if sorted(frames) == sorted(reference):
        return "the same frames in another order"
    first = next(i for i, (a, b) in enumerate(zip(frames, reference)) if a != b)
    return f"frame {first} differs"


def same_frames(reference: list[bytes], frames: list[bytes]) -> str | None:
    """None when ``frames`` are ``reference`` in any order; else what differs."""
    if sorted(frames) == sorted(reference):
        return None
    if len(frames) != len(reference):
        return f"sent {len(frames)} frames, the all-CPU build {len(reference)}"
    return f"{sum(a != b for a, b in zip(sorted(frames), sorted(reference)))} frames differ"


def one_thread(cuts: list[Cut]) -> list[Cut]:
    """``cuts`` with one thread in every part."""
    return [Cut(c.segment, c.rx, c.tx, 1, 1, 1) for c in cuts]
