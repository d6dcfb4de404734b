"""How benchmarks/explore/calibrate_this.py reads this machine for the ``this`` platform, and
how this_machine.py tells a platform file measured on another processor: the rules, with
the measurements given (the scripts themselves run in tests/test_benchmarks_model.py)."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "benchmarks", "explore"))
import calibrate_this  # noqa: E402
import this_machine  # noqa: E402

MIB = 1 << 20


def scan(monkeypatch, latencies: dict[int, float], sysfs: int = 32 * MIB) -> tuple[int, dict]:
    """The last level found when a dependent load through each size takes ``latencies``
    (4 MiB, the first size, 19 ns; DRAM 200 ns)."""
    monkeypatch.setattr(calibrate_this, "nanoseconds",
                        lambda binary, what, size, repeat: latencies[int(size)])
    return calibrate_this.last_level("calibrate", sysfs, 4 * MIB, 19.0, 200.0, 3)


def test_the_last_level_is_the_largest_size_nearer_a_hit_than_dram(monkeypatch) -> None:
    """This shared machine: sysfs's 32 MiB, but 8 MiB and more take nearly DRAM's time."""
    gets, scanned = scan(monkeypatch, {8 * MIB: 135.0, 16 * MIB: 166.0, 32 * MIB: 176.0})
    assert gets == 4 * MIB
    assert scanned == {4 * MIB: 19.0, 8 * MIB: 135.0, 16 * MIB: 166.0, 32 * MIB: 176.0,
                       256 * MIB: 200.0}


def test_a_core_with_the_whole_last_level_gets_sysfs_size(monkeypatch) -> None:
    gets, _ = scan(monkeypatch, {8 * MIB: 21.0, 16 * MIB: 30.0, 32 * MIB: 95.0})
    assert gets == 32 * MIB


def test_a_slow_size_below_a_fast_one_does_not_end_the_scan(monkeypatch) -> None:
    """A neighbour's burst during one size's loads: the largest fast size still counts."""
    gets, _ = scan(monkeypatch, {8 * MIB: 150.0, 16 * MIB: 60.0, 32 * MIB: 170.0})
    assert gets == 16 * MIB


def test_no_size_beyond_sysfs_is_loaded(monkeypatch) -> None:
    gets, scanned = scan(monkeypatch, {8 * MIB: 20.0}, sysfs=8 * MIB)
    assert gets == 8 * MIB
    assert sorted(scanned) == [4 * MIB, 8 * MIB, 256 * MIB]


@pytest.mark.parametrize("recorded", ['cpu = "AMD EPYC, family 25, model 17"\n', ""],
                         ids=["another processor", "none recorded"])
def test_a_platform_file_of_another_processor_is_named(monkeypatch, tmp_path,
                                                        recorded: str) -> None:
    platform = tmp_path / "this.toml"
    platform.write_text(f"[cores]\n{recorded}count = 2\n")
    monkeypatch.setattr(calibrate_this, "PLATFORM", str(platform))
    monkeypatch.setattr(calibrate_this, "cpu_name", lambda: "AMD EPYC, family 25, model 1")
    line = this_machine.platform_cpu()
    assert line is not None
    assert "this machine is AMD EPYC, family 25, model 1" in line
    assert "calibrate_this.py --write" in line


def test_a_platform_file_of_this_processor_is_not_named(monkeypatch, tmp_path) -> None:
    platform = tmp_path / "this.toml"
    platform.write_text('[cores]\ncpu = "AMD EPYC, family 25, model 17"\n')
    monkeypatch.setattr(calibrate_this, "PLATFORM", str(platform))
    monkeypatch.setattr(calibrate_this, "cpu_name", lambda: "AMD EPYC, family 25, model 17")
    assert this_machine.platform_cpu() is None


def test_this_processor_is_named_as_the_platform_file_records_it() -> None:
    """cpu_name reads /proc/cpuinfo: the model name, family and model, in that form."""
    name = calibrate_this.cpu_name()
    assert ", family " in name and ", model " in name
