"""What `floem place`'s search costs, counted: the predictions and compiles one search makes
with its bounds, against predicting every placement, and whether both rank the same 15
best. AES (`-D engine=true`) and flow classification on the LiquidIO beside the Xeon, for
three objectives; each app's probes counted once (callgrind), then every search run on
those counts. Deterministic: no timing.

    .venv/bin/python benchmarks/place/search_cost.py [--json] [--short]
    PYTHONPATH=OTHER_TREE .venv/bin/python benchmarks/place/search_cost.py   (another version)

--short searches AES alone, on 200 packets, for the first objective (what the slow tests
run, to keep the script working).
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import floem.place.command as place
from floem.explore.measure import Workload
from floem.explore.model import load_platform
from floem.explore.output import Progress
from floem.place.search import Figures, Placement, rank, rank_key

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NF = os.path.join(ROOT, "examples", "nf")
#: app: (its file, its -D values, examples/nf/load.py's arguments)
APPS = {"aes": ("aes.py", {"device": "auto", "engine": "true"},
                ["aes", "--size", "1024", "--count", "2000"]),
        "flowclass": ("flowclass.py", {"device": "auto"},
                      ["flowclass", "--size", "80", "--count", "5000"])}
NIC, HOST = load_platform("liquidio", "nic"), load_platform("xeon-e5-2680v3", "host")
#: (objective, its rate, host cores)
SEARCHES = [("throughput", None, 1), ("per-host-core", None, 12), ("host-cores-at", 2e6, 12)]


def counting() -> dict[str, int]:
    """Count `floem.place.command`'s predictions and first compiles of a cut from now on."""
    calls = {"predictions": 0, "compiles": 0}
    predict, compiled = place.predict, place.Search.compiled

    def counted_predict(*args: Any, **kwargs: Any) -> Any:
        calls["predictions"] += 1
        return predict(*args, **kwargs)

    def counted_compiled(self: place.Search, cuts: list) -> Any:
        calls["compiles"] += place._key(cuts) not in self.layouts
        return compiled(self, cuts)
    place.predict = counted_predict
    place.Search.compiled = counted_compiled   # type: ignore[method-assign]
    return calls


def searched(app: str, config: dict[str, str], figures: Figures, workload: Workload,
             objective: str, rate: float | None, cores: int, wanted: int | None,
             calls: dict[str, int]) -> tuple[list[Placement], dict[str, int]]:
    """One search of ``app`` on a fresh `Search` (no cut compiled yet): its ranked rows,
    and its predictions, compiles and placements left out."""
    search = place._search(app, config, [], ["device"])
    calls.update(predictions=0, compiles=0)
    rows = place._predict(search, figures, workload, NIC, HOST, 1, cores, objective, rate,
                          wanted)
    return rank(rows, objective, rate), {**calls, "left_out": search.pruned}


def main() -> None:
    calls = counting()
    results = []
    short = "--short" in sys.argv
    apps = dict(list(APPS.items())[:1]) if short else APPS
    with tempfile.TemporaryDirectory() as tmp:
        for name, (file, config, load) in apps.items():
            app, pcap = os.path.join(NF, file), os.path.join(tmp, f"{name}.pcap")
            if short:
                load = [*load[:-1], "200"]
            subprocess.run([sys.executable, os.path.join(NF, "load.py"), *load, "--pcap", pcap],
                           check=True, capture_output=True)
            search = place._search(app, config, [], ["device"])
            workload = Workload.read(pcap)
            figures = place._count(app, search, [], workload, search.probes(), NIC, HOST,
                                   Progress(3, out=io.StringIO()))
            for objective, rate, cores in SEARCHES[:1] if short else SEARCHES:
                key = rank_key(objective, rate)
                bounded, cost = searched(app, config, figures, workload, objective, rate,
                                         cores, 15, calls)
                every, cost_all = searched(app, config, figures, workload, objective, rate,
                                           cores, None, calls)
                results.append({"app": name, "objective": objective, "host_cores": cores,
                                **cost, "predicted": len(bounded), "every_placement": cost_all,
                                "same_15_best": [key(p) for p in bounded[:15]]
                                == [key(p) for p in every[:15]]})
    if "--json" in sys.argv:
        json.dump(results, sys.stdout, indent=1)
        return
    print("| search (host cores) | predictions | compiles | left out | predicting every "
          "placement: predictions, compiles | the same 15 best |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in results:
        every = r["every_placement"]
        print(f"| {r['app']}, {r['objective']} ({r['host_cores']}) | {r['predictions']} | "
              f"{r['compiles']} | {r['left_out']} | {every['predictions']}, "
              f"{every['compiles']} | {'yes' if r['same_15_best'] else 'NO'} |")


if __name__ == "__main__":
    main()
