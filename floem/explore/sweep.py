"""``floem explore``: measure every configuration of an app on a workload, predict, rank.

A *study* is an app, the values to sweep of its parameters, and a workload
capture. Its configurations are the product of the swept values (``-D
name=v1,v2``; a parameter declared with choices and not given sweeps all of
them). Each configuration is built and measured once (`measure`), then
predicted on every model platform (`predict`); a configuration that does not
build or crashes gets a row saying so and the sweep goes on. A sweep file
(TOML) holds several studies, e.g. ``benchmarks/explore/figure10.toml``.
"""
from __future__ import annotations

import itertools
import os
import shlex
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from typing import Any, Callable

from floem.builder import check_program
from floem.api import load_app
from floem.errors import FloemError
from floem.ir import Device
from floem.explore.measure import Measurement, RunFailed, Workload, measure
from floem.explore.model import ModelPlatform, Prediction, load_platform, predict
from floem.lang import params


@dataclass
class Study:
    """One app swept over parameter values on one workload (rows share ``title``)."""

    title: str
    app: str
    sweep: dict[str, list[str]]
    workload: Workload
    options: list[str] = field(default_factory=list)
    baseline: Workload | None = None


@dataclass
class Row:
    """One configuration on one platform: its measurement and prediction, or why it failed."""

    study: str
    configuration: dict[str, str]
    platform: str
    measurement: Measurement | None
    prediction: Prediction | None
    error: str | None = None

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.configuration.items()) or "(defaults)"

    @property
    def packets_per_s(self) -> float:
        return self.prediction.packets_per_s if self.prediction and not self.failed else 0.0

    @property
    def failed(self) -> str | None:
        return self.error or (self.prediction.error if self.prediction else None)

    @property
    def per_host_core(self) -> float | None:
        cores = sum(self.measurement.host_threads.values()) if self.measurement else 0
        return self.packets_per_s / cores if cores and not self.failed else None


def parse_sweep(defines: list[str]) -> dict[str, list[str]]:
    """``["a=1,2", "b=x"]`` as ``{"a": ["1", "2"], "b": ["x"]}``."""
    return {name: text.split(",") for name, text in params.parse_definitions(defines).items()}


def configurations(app: str, sweep: dict[str, list[str]]) -> list[dict[str, str]]:
    """Every combination of the swept values; a parameter with choices not given sweeps them."""
    load_app(app, {})
    values = dict(sweep)
    for p in params.declared():
        if p.choices and p.name not in values:
            values[p.name] = [params.value_text(c) for c in p.choices]
    names = list(values)
    return [dict(zip(names, combo)) for combo in itertools.product(*(values[n] for n in names))]


def host_does_io(app: str, configuration: dict[str, str]) -> bool:
    """True when the configuration's packet I/O elements run on the host (a `FloemError`
    when it does not compile)."""
    ir = check_program(load_app(app, configuration))
    return any(n.uses_network and ir.segments[n.segment].device == Device.CPU for n in ir.nodes())


def run_study(study: Study, platforms: list[ModelPlatform],
              progress: Callable[[str], None]) -> list[Row]:
    """Measure every configuration of ``study`` and predict it on every platform."""
    rows: list[Row] = []
    configs = configurations(study.app, study.sweep)
    shown_names = [n for n in configs[0]
                   if n in study.sweep or len({c[n] for c in configs}) > 1] if configs else []
    for i, config in enumerate(configs, 1):
        shown = {n: config[n] for n in shown_names}
        label = " ".join(f"{k}={v}" for k, v in shown.items()) or "(defaults)"
        progress(f"[{i}/{len(configs)}] {study.title}: {label}: measuring ...")
        measurement, error = _measure(study, config)
        progress(f"[{i}/{len(configs)}] {study.title}: {label}: "
                 + (f"failed: {error}" if error else _summary(measurement)))
        for p in platforms:
            prediction = predict(measurement, p) if measurement else None
            rows.append(Row(study.title, shown, p.name, measurement, prediction, error))
    return rows


def _measure(study: Study, config: dict[str, str]) -> tuple[Measurement | None, str | None]:
    defines = [f"{k}={v}" for k, v in config.items()]
    try:
        return measure(study.app, defines, study.options, study.workload,
                       host_does_io(study.app, config), study.baseline), None
    except (FloemError, RunFailed) as e:
        return None, str(e).replace("\n", " ")


def _summary(m: Measurement | None) -> str:
    if m is None:
        return "-"
    nic = sum(m.nic_instructions.values())
    return (f"host {sum(m.host_ns.values()):,.0f} ns/packet, NIC {nic:,.0f} instructions/packet, "
            f"DMA {m.dma_bytes:,.0f} bytes/packet")


def make_workload(command: str | None, pcap: str | None, workdir: str,
                  name: str = "workload") -> Workload:
    """The capture: ``pcap``, or the one ``command`` writes to ``{pcap}`` (run once)."""
    if pcap is not None:
        return Workload.read(pcap)
    if command is None:
        raise FloemError("floem explore needs a workload: --pcap FILE or --workload CMD")
    if "{pcap}" not in command:
        raise FloemError(f"{command!r}: the command must write the capture to {{pcap}}")
    path = os.path.join(workdir, name + ".pcap")
    argv = [a.replace("{pcap}", path) for a in shlex.split(command)]
    argv = [sys.executable if a in ("python", "python3") else a for a in argv]
    try:
        result = subprocess.run(argv, capture_output=True, text=True)
    except OSError as e:
        raise FloemError(f"cannot run the workload command {argv[0]!r}: {e.strerror}") from None
    if result.returncode != 0:
        raise FloemError(f"the workload command failed ({' '.join(argv)}): "
                         f"{result.stderr.strip()[-500:]}")
    return Workload.read(path)


def load_sweep_file(path: str, workdir: str) -> tuple[str, list[str], list[Study]]:
    """A sweep file: its title, platforms and studies (paths relative to the file)."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise FloemError(f"cannot read the sweep file: {e}", path) from None
    here = os.path.dirname(os.path.abspath(path))
    studies = []
    workloads: dict[str, Workload] = {}

    def capture(command: str) -> Workload:
        command = command.replace("{here}", here)
        if command not in workloads:
            workloads[command] = make_workload(command, None, _fresh(workdir, len(workloads)))
        return workloads[command]

    for n, s in enumerate(data.get("study", [])):
        try:
            studies.append(Study(s["title"], os.path.join(here, s["app"]),
                                 parse_sweep(list(s.get("define", []))), capture(s["workload"]),
                                 list(s.get("options", [])),
                                 capture(s["baseline"]) if "baseline" in s else None))
        except (KeyError, TypeError) as e:
            raise FloemError(f"study {n + 1} needs title, app and workload "
                             f"(and may have define, options, baseline): {e}", path) from None
    if not studies:
        raise FloemError("the sweep file has no [[study]]", path)
    return str(data.get("title", os.path.basename(path))), list(data.get("nic", [])), studies


def _fresh(workdir: str, n: int) -> str:
    return tempfile.mkdtemp(prefix=f"workload{n}-", dir=workdir)


def platforms_named(names: list[str]) -> list[ModelPlatform]:
    """The model platforms ``names`` (each checked)."""
    return [load_platform(n) for n in names]


def describe_rows(rows: list[Row]) -> list[dict[str, Any]]:
    """Every row as plain values (the JSON and CSV)."""
    out = []
    for r in rows:
        m, p = r.measurement, r.prediction
        out.append({
            "study": r.study, "configuration": r.label, "platform": r.platform,
            "host_ns_per_packet": sum(m.host_ns.values()) if m else None,
            "host_cores": sum(m.host_threads.values()) if m else None,
            "nic_instructions_per_packet": sum(m.nic_instructions.values()) if m else None,
            "nic_cores": sum(m.nic_threads.values()) if m else None,
            "nic_us_per_packet": p.nic_us if p else None,
            "nic_ns_per_packet_emulated": m.nic_ns if m else None,
            "serial_instructions_per_packet": m.serial_instructions if m else None,
            "dma_bytes_per_packet": m.dma_bytes if m else None,
            "dma_engine_bytes_per_packet": m.dma_engine_bytes if m else None,
            "engine_bytes_per_packet": m.engine_bytes.get("crypto") if m else None,
            "cache_hit_rate": m.hit_rate if m else None,
            "predicted_packets_per_s": r.packets_per_s if not r.failed else None,
            "predicted_packets_per_s_per_host_core": r.per_host_core,
            "bottleneck": p.bottleneck if p and not r.failed else None,
            "capacities": p.capacities if p and not r.failed else None,
            "error": r.failed})
    return out
