"""Checking a placement by running it: its output must be the all-CPU build's.

Each placement is written as an app file (`floem.place.app_file`), built for the emulated
NIC with the threads it will run with and replayed on the workload (``floem run --net
pcap``) until every frame is in and its counters stand still; the frames it sent are
compared with those of the all-CPU build, one thread, on the same capture: in order when
every part has one thread, as a multiset when several threads may take packets in another
order. Several threads can also change what a program whose output depends on the order
of its packets computes (a sequencer numbers them): when the frames differ, the placement
runs again with one thread in every part, and only a difference there is the compiler's
bug; the placement is then not checked with its threads, and says why.
"""
from __future__ import annotations

import os
import tempfile

import dpkt

from floem.explore.measure import Replay, RunFailed, Workload
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
            try:
                with open(run.output, "rb") as f:
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
