"""An exploration's results: progress, the table printed, CSV, JSON and a plot."""
from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import sys
from typing import TextIO

from floem.explore.model import Platform
from floem.explore.sweep import Row, describe_rows

COLUMNS = ["configuration", "NIC", "host", "ISA (NIC/host)", "threads", "host instr/pkt", "NIC instr/pkt", "NIC µs/pkt",
           "PCIe B/pkt", "hit rate", "predicted pkt/s", "pkt/s per host core",
           "p50 µs", "p99 µs", "bottleneck"]
#: Width of the progress bar, in characters.
BAR = 30


class Progress:
    """A progress bar over the configurations (or builds) on ``out`` (a terminal), redrawn
    in place, with a line for each one done; elsewhere (a file, a pipe) the lines alone.
    ``command`` begins each line."""

    def __init__(self, total: int, out: TextIO = sys.stderr, command: str = "explore") -> None:
        self.total, self.out, self.count, self.command = total, out, 0, command
        self.live = out.isatty()

    def start(self, label: str) -> None:
        """Counting ``label`` begins."""
        self.count += 1
        if self.live:
            self._bar(f"{label}: counting")
        else:
            self._line(f"{label}: counting ...")

    def finish(self, label: str, result: str) -> None:
        """``label`` is done: ``result`` says what it counted, or why it failed."""
        if self.live:
            self.out.write("\r\033[K")
        self._line(f"{label}: {result}")

    def done(self) -> None:
        """Every configuration is done."""
        if self.live:
            self.out.write("\r\033[K")
            self.out.flush()

    def _line(self, text: str) -> None:
        self.out.write(f"floem: {self.command} [{self.count}/{self.total}] {text}\n")
        self.out.flush()

    def _bar(self, text: str) -> None:
        filled = BAR * (self.count - 1) // max(self.total, 1)
        self.out.write(f"\r\033[K[{'#' * filled}{'.' * (BAR - filled)}] "
                       f"{self.count}/{self.total} {text}"[:200])
        self.out.flush()


def ranked(rows: list[Row], per_core: bool = False) -> list[Row]:
    """Best first: by predicted packets/s (or per host core); failed rows last."""
    def key(r: Row) -> float:
        value = (r.per_host_core or 0.0) if per_core else r.packets_per_s
        return -value if not r.failed else 1.0
    return sorted(rows, key=key)


def table(rows: list[Row]) -> str:
    """A Markdown table of ``rows`` in their order."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(_cells(r)) + " |")
    return "\n".join(lines)


def _cells(r: Row) -> list[str]:
    m, p = r.measurement, r.prediction
    if m is None or p is None or r.failed:
        return [r.label, r.platform, r.host, "-", r.threads or "as written"] \
            + ["-"] * (len(COLUMNS) - 6) + [f"failed: {r.failed}"]
    nic, host = m.side(True), m.side(False)
    described = describe_rows([r])[0]
    return [r.label, r.platform, r.host, f"{m.nic_isa}/{m.host_isa}", r.threads or "as written",
            f"{sum(s.instructions for s in host.values()):,.0f}" if host else "-",
            f"{sum(s.instructions for s in nic.values()):,.0f}" if nic else "-",
            f"{described['nic_us_per_packet']:.2f}" if nic else "-",
            f"{described['pcie_bytes_per_packet']:,.0f}",
            f"{100 * m.hit_rate:.1f}%" if m.hit_rate is not None else "-",
            rate_text(r.packets_per_s), rate_text(r.per_host_core) if r.per_host_core else "-",
            us_text(p.latency.p50_us), us_text(p.latency.p99_us), p.bottleneck]


def us_text(value: float) -> str:
    """Microseconds, or ``overloaded`` for an infinite latency."""
    return "overloaded" if math.isinf(value) else f"{value:,.1f}"


def rate_text(value: float) -> str:
    """Packets per second, short: ``1.25 M``, ``830.00 k``, ``512``."""
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:,.2f} {unit}"
    return f"{value:,.0f}"


def write(rows: list[Row], platforms: list[Platform], base: str, title: str) -> list[str]:
    """``base``.csv, .json, .svg and .png; returns the paths written."""
    os.makedirs(os.path.dirname(os.path.abspath(base)), exist_ok=True)
    described = describe_rows(rows)
    with open(base + ".csv", "w", newline="") as f:
        fields = [k for k in described[0] if k not in ("capacities", "segments", "machines")] \
            if described else []
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(described)
    with open(base + ".json", "w") as f:
        json.dump({"title": title, "platforms": [dataclasses.asdict(p) for p in platforms],
                   "rows": described}, f, indent=2)
    plot(rows, title, base)
    return [base + ext for ext in (".csv", ".json", ".svg", ".png")]


def plot(rows: list[Row], title: str, base: str) -> None:
    """Horizontal bars of predicted packets/s per configuration, one colour per pair of a
    NIC and a host platform."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    studies = list(dict.fromkeys(r.study for r in rows))
    platforms = list(dict.fromkeys(_pair(r) for r in rows))
    height = sum(len({r.label for r in rows if r.study == s}) for s in studies)
    fig, axes = pyplot.subplots(len(studies), 1, squeeze=False,
                                figsize=(9, 1.2 + 0.32 * height * len(platforms) + len(studies)))
    for ax, study in zip(axes[:, 0], studies):
        mine = [r for r in rows if r.study == study]
        labels = list(dict.fromkeys(r.label for r in mine))
        width = 0.8 / len(platforms)
        for k, platform in enumerate(platforms):
            values = [next((r.packets_per_s for r in mine
                            if r.label == label and _pair(r) == platform), 0.0) / 1e6
                      for label in labels]
            ax.barh([i + k * width for i in range(len(labels))], values, height=width,
                    label=platform)
        ax.set_yticks([i + width * (len(platforms) - 1) / 2 for i in range(len(labels))])
        ax.set_yticklabels(labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(study, fontsize=10)
        ax.set_xlabel("predicted Mpackets/s")
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    for ext in (".svg", ".png"):
        fig.savefig(base + ext, dpi=110)
    pyplot.close(fig)


def _pair(r: Row) -> str:
    return f"{r.platform} + {r.host}"
