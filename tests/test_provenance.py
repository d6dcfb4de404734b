"""A result row is stale when what it was made from has changed: its app's sources, or a
platform file its prediction read."""
from __future__ import annotations

import os
import shutil

import pytest

from floem.explore import provenance


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """An app directory and a copy of the platform files, both the test's to change."""
    app = tmp_path / "app" / "app.py"
    app.parent.mkdir()
    app.write_text("from floem import *\n")
    platforms = tmp_path / "platforms"
    shutil.copytree(provenance.PLATFORM_DIR, platforms)
    monkeypatch.setattr(provenance, "PLATFORM_DIR", str(platforms))
    row = {"app": str(app), "app_sources": provenance.app_sources_hash(str(app)),
           "platform_sources": {n: provenance.platform_hash(n)
                                for n in ("liquidio", "xeon-x5650")}}
    return app, platforms, row


def test_a_row_made_from_the_tree_is_not_stale(tree) -> None:
    _, _, row = tree
    assert provenance.stale(row) is None


def test_a_changed_platform_figure_makes_its_rows_stale(tree) -> None:
    _, platforms, row = tree
    path = platforms / "xeon-x5650.toml"
    text = path.read_text()
    path.write_text(text.replace('source = """', 'source = """Cited again. ', 1))
    assert provenance.stale(row) is None, "a source text is not a figure"
    assert "\nghz = 2.67\n" in text
    path.write_text(text.replace("\nghz = 2.67\n", "\nghz = 2.93\n"))
    assert provenance.stale(row) == "floem/platforms/xeon-x5650.toml changed since the row was predicted"


def test_a_changed_app_source_or_a_row_without_hashes_is_stale(tree) -> None:
    app, _, row = tree
    assert provenance.stale({k: v for k, v in row.items() if k != "platform_sources"}) == \
        "records no platform files"
    (app.parent / "helper.c").write_text("int x;\n")
    assert "sources changed" in provenance.stale(row)
    os.remove(app)
    assert provenance.stale(row).endswith("is gone")
