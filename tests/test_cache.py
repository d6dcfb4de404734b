"""The cache construct: random gets and sets checked against a dict, for every policy,
on the CPU and with the cache on the NIC and the store on the host; pointer keys and
values; the paper's Figure 3 hazard; the compile errors."""
from __future__ import annotations

import os
import random
import shutil

import pytest

from conftest import ROOT, floem

APPS = os.path.join(ROOT, "tests", "cache")
POLICIES = [(p, m) for p in ("write_through", "write_back")
            for m in ("write_alloc", "no_write_alloc")]
KEYS = 40


def operations(count: int, seed: int) -> tuple[str, list[str]]:
    """Random gets and sets over KEYS keys, and what a dict says every get returns."""
    rng = random.Random(seed)
    store: dict[int, int] = {}
    lines, expected = [], []
    for _ in range(count):
        key = rng.randrange(KEYS)
        if rng.random() < 0.5:
            lines.append(f"g {key}")
            expected.append(str(store.get(key, key * 7)))
        else:
            value = rng.randrange(1, 10**6)
            store[key] = value
            lines.append(f"s {key} {value}")
    return "\n".join(lines) + "\n", expected


def run_kv(tmp_path, policy: str, write_miss: str, place: str, count: int,
           nic: str = "emu") -> None:
    ops, expected = operations(count, seed=hash((policy, write_miss, place)) & 0xffff)
    path = tmp_path / "ops.txt"
    path.write_text(ops)
    env = {"CACHE_POLICY": policy, "CACHE_WRITE_MISS": write_miss, "CACHE_PLACE": place}
    result = floem("run", "--nic", nic, "--report", "--timeout", "240",
                   os.path.join(APPS, "kv_app.py"), "--", str(path), env=env, timeout=400)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == expected
    stats = next(line for line in result.stderr.splitlines() if line.startswith("floem: cache kv:"))
    assert ", evictions 0," not in stats          # a tiny cache evicts all the time
    if policy == "write_back" and write_miss == "write_alloc":
        assert "write-backs 0" not in stats


@pytest.mark.parametrize("policy,write_miss", POLICIES)
def test_cache_on_cpu_matches_a_dict(tmp_path, policy: str, write_miss: str) -> None:
    run_kv(tmp_path, policy, write_miss, "cpu", 3000)


@pytest.mark.parametrize("policy,write_miss", POLICIES)
def test_cache_on_nic_store_on_host_matches_a_dict(tmp_path, policy: str, write_miss: str) -> None:
    run_kv(tmp_path, policy, write_miss, "nic", 600)


@pytest.mark.slow
@pytest.mark.parametrize("policy,write_miss", [("write_back", "write_alloc"),
                                               ("write_through", "no_write_alloc")])
def test_cache_on_bluefield_matches_a_dict(tmp_path, policy: str, write_miss: str) -> None:
    assert shutil.which("qemu-aarch64"), "install qemu-user (scripts/setup.sh does)"
    run_kv(tmp_path, policy, write_miss, "nic", 200, nic="bluefield")


def test_pointer_keys_and_values_of_varying_lengths(tmp_path) -> None:
    rng = random.Random(7)
    store: dict[str, str] = {}
    lines, expected = [], []
    for _ in range(1500):
        slot = rng.randrange(24)
        key = "k" + "x" * (slot % 5) + str(slot)      # one spelling per key, lengths vary
        if rng.random() < 0.5:
            lines.append(f"g {key}")
            expected.append(f"{key}={store.get(str(slot), '-')}")
        else:
            value = "".join(rng.choice("abcdefghij") for _ in range(rng.randrange(1, 41)))
            store[str(slot)] = value
            lines.append(f"s {key} {value}")
    path = tmp_path / "ops.txt"
    path.write_text("\n".join(lines) + "\n")
    result = floem("run", "--timeout", "120", os.path.join(APPS, "kv_bytes_app.py"), "--", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == expected
