"""The model's validation as docs/exploration.md states it is what the committed rows give.

`benchmarks/explore/validate.py --from docs/exploration` prints the table of the paper's
claims from the rows committed in docs/exploration/; the document must show that table as
printed, and every committed row must still describe the tree (its app's sources
unchanged since it was counted: `floem.explore.provenance.stale`), so that neither the
prose nor the rows can drift from what the code counts without a test failing.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

from conftest import ROOT
from floem.explore import provenance

DOCS = os.path.join(ROOT, "docs")


def test_the_documented_table_is_what_the_committed_rows_give() -> None:
    script = os.path.join(ROOT, "benchmarks", "explore", "validate.py")
    printed = subprocess.run([sys.executable, script, "--from", os.path.join(DOCS, "exploration")],
                             capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(DOCS, "exploration.md")) as f:
        document = f.read()
    assert printed in document, (
        "docs/exploration.md does not show the table `python3 benchmarks/explore/validate.py "
        "--from docs/exploration` prints")


def test_no_committed_row_is_stale() -> None:
    paths = sorted(glob.glob(os.path.join(DOCS, "exploration", "*.json")))
    assert paths
    for path in paths:
        with open(path) as f:
            rows = json.load(f)["rows"]
        assert rows, path
        for row in rows:
            assert provenance.stale(row) is None, (os.path.basename(path),
                                                   row.get("configuration"),
                                                   provenance.stale(row))
