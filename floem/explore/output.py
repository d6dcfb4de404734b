"""An exploration's results: the table printed, CSV, JSON and a plot of predicted throughput."""
from __future__ import annotations

import csv
import dataclasses
import json
import os

from floem.explore.model import ModelPlatform
from floem.explore.sweep import Row, describe_rows

COLUMNS = ["configuration", "platform", "host ns/pkt", "NIC instr/pkt", "NIC µs/pkt",
           "DMA B/pkt", "hit rate", "predicted pkt/s", "pkt/s per host core", "bottleneck"]


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
        return [r.label, r.platform] + ["-"] * (len(COLUMNS) - 3) + [f"failed: {r.failed}"]
    nic = sum(m.nic_instructions.values())
    return [r.label, r.platform,
            f"{sum(m.host_ns.values()):,.0f}" if m.host_ns else "-",
            f"{nic:,.0f}" if m.nic_threads else "-",
            f"{p.nic_us:.2f}" if m.nic_threads else "-",
            f"{m.dma_bytes + (m.frame_bytes * (1 + m.replies) if m.host_io else 0):,.0f}",
            f"{100 * m.hit_rate:.1f}%" if m.hit_rate is not None else "-",
            _rate(r.packets_per_s), _rate(r.per_host_core) if r.per_host_core else "-",
            p.bottleneck]


def _rate(value: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:,.2f} {unit}"
    return f"{value:,.0f}"


def write(rows: list[Row], platforms: list[ModelPlatform], base: str, title: str) -> list[str]:
    """``base``.csv, .json, .svg and .png; returns the paths written."""
    os.makedirs(os.path.dirname(os.path.abspath(base)), exist_ok=True)
    described = describe_rows(rows)
    with open(base + ".csv", "w", newline="") as f:
        fields = [k for k in described[0] if k != "capacities"] if described else []
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(described)
    with open(base + ".json", "w") as f:
        json.dump({"title": title, "platforms": [dataclasses.asdict(p) for p in platforms],
                   "rows": described}, f, indent=2)
    plot(rows, title, base)
    return [base + ext for ext in (".csv", ".json", ".svg", ".png")]


def plot(rows: list[Row], title: str, base: str) -> None:
    """Horizontal bars of predicted packets/s per configuration, one colour per platform."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    studies = list(dict.fromkeys(r.study for r in rows))
    platforms = list(dict.fromkeys(r.platform for r in rows))
    height = sum(len({r.label for r in rows if r.study == s}) for s in studies)
    fig, axes = pyplot.subplots(len(studies), 1, squeeze=False,
                                figsize=(9, 1.2 + 0.32 * height * len(platforms) + len(studies)))
    for ax, study in zip(axes[:, 0], studies):
        mine = [r for r in rows if r.study == study]
        labels = list(dict.fromkeys(r.label for r in mine))
        width = 0.8 / len(platforms)
        for k, platform in enumerate(platforms):
            values = [next((r.packets_per_s for r in mine
                            if r.label == label and r.platform == platform), 0.0) / 1e6
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
