"""IR dumps: a golden dump after the whole pipeline, and ``floem build --dump-after``.

The golden program is golden/calc_app.py, a complete app; golden/calc_app.txt
is its ``ir.dump()`` after every pass, checked by hand: per-packet uses,
fan-out in program order, the composite flattened, the join marked, the
run_order edge, sources, and the two processes each holding a main.
"""
from __future__ import annotations

import os
import runpy

from conftest import floem

from floem.passes import pass_names, run_pipeline

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
APP = os.path.join(GOLDEN, "calc_app.py")


def golden_text() -> str:
    with open(os.path.join(GOLDEN, "calc_app.txt")) as f:
        return f.read()


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


def test_dump_after_the_whole_pipeline_matches_the_golden_file():
    program = runpy.run_path(APP)["p"]
    assert run_pipeline(program).dump() == golden_text()


def test_build_dump_after_all_writes_one_readable_dump_per_pass(tmp_path):
    out = tmp_path / "out"
    result = floem("build", APP, "--dump-after", "all", "-o", str(out))
    assert result.returncode == 0, result.stderr
    dumps = sorted(f for f in os.listdir(out) if f.startswith("ir-"))
    assert dumps == [f"ir-{i:02d}-{name}.txt" for i, name in enumerate(pass_names(), 1)]
    texts = {name: read(out / f) for name, f in zip(pass_names(), dumps)}
    for name, text in texts.items():
        assert text.startswith(f"# IR after pass {name}\n")
    assert texts["plan_code"] == "# IR after pass plan_code\n" + golden_text()
    # what each stage adds shows in the dump
    assert "source=-" in texts["build_graph"] and "form=" not in texts["build_graph"]
    assert "form=block uses=[] writes=['key']" in texts["parse_bodies"]
    assert "add: Add [join]  in:" in texts["build_graph"]      # several input ports
    assert "source=calc_args" in texts["check_segments"]
    assert "uses doubled, key" not in texts["check_callables"]
    assert "uses doubled, key" in texts["liveness"] and "process " not in texts["liveness"]
    assert "plan:" not in texts["place_memory"] and "plan: body 2 lines; thread source" \
        in texts["plan_code"]


def test_build_dump_after_one_pass(tmp_path):
    out = tmp_path / "out"
    result = floem("build", APP, "--dump-after", "check_types", "-o", str(out))
    assert result.returncode == 0, result.stderr
    dump = f"ir-{pass_names().index('check_types') + 1:02d}-check_types.txt"
    assert [f for f in os.listdir(out) if f.startswith("ir-")] == [dump]
    text = read(out / dump)
    assert text.startswith("# IR after pass check_types\nsegment calc (callable) device=CPU")
    assert "      out -> save.inp\n" in text


def test_dump_after_an_unknown_pass_is_a_clear_error(tmp_path):
    out = tmp_path / "out"
    result = floem("build", APP, "--dump-after", "check_type", "-o", str(out))
    assert result.returncode == 2           # a wrong command line
    assert result.stderr.endswith("floem build: error: argument --dump-after: no pass named "
                                  "'check_type' (passes: " + ", ".join(pass_names()) + ", all)\n")
    assert not out.exists()
