"""The user documentation speaks about the software, not about the work that produced it:
no "issue 14", "issues 13 and 14" or "this issue" in docs/*.md and the READMEs (the verb,
as in "each DMA issue" or "issue a request", is fine), and no file outside the repository
(a path under /work/ or ../shared/) that a reader of a clone does not have."""
from __future__ import annotations

import glob
import os
import re

import pytest

from conftest import ROOT

TRACKER_REFERENCE = re.compile(r"\bissues? \d+|\bthis issue\b", re.IGNORECASE)
OUTSIDE_THE_REPOSITORY = re.compile(r"/work/|\.\./shared/")
DOC_PATTERNS = ("README.md", "docs/*.md", "examples/**/README.md", "benchmarks/**/README.md")


def doc_files() -> list[str]:
    """The documentation files, relative to the repository."""
    return sorted({os.path.relpath(path, ROOT) for pattern in DOC_PATTERNS
                   for path in glob.glob(os.path.join(ROOT, pattern), recursive=True)})


def tracker_references(text: str) -> list[str]:
    """Each line of ``text`` that names an issue, as 'LINE: text'."""
    return [f"{number}: {line.strip()}" for number, line in enumerate(text.splitlines(), 1)
            if TRACKER_REFERENCE.search(line)]


@pytest.mark.parametrize("text, names_an_issue", [
    ("redone** (issue 14 item 4). Same command", True),
    ("### Used bytes only, idle back-off (issues 13 and 14)", True),
    ("a burst to `ToNet` at once. Not attempted in this issue.", True),
    ("loaded with acquire since Issue 14's change", True),
    ("max(issue + latency, completion of the previous request) + bytes / bandwidth", False),
    ("each DMA issue, each call of the sync layer's worker routines", False),
    ("entry was finished since the previous round; issue the next read.", False),
    ("estimate (40% of the peak issue width) and say so.", False),
])
def test_only_a_reference_to_an_issue_is_found(text: str, names_an_issue: bool) -> None:
    assert tracker_references(text) == ([f"1: {text}"] if names_an_issue else [])


def test_there_are_doc_files() -> None:
    files = doc_files()
    assert {"README.md", "docs/guide.md", "examples/nf/README.md",
            "benchmarks/echo/README.md"} <= set(files)


@pytest.mark.parametrize("path", doc_files())
def test_doc_names_no_issue(path: str) -> None:
    with open(os.path.join(ROOT, path)) as f:
        assert tracker_references(f.read()) == []


@pytest.mark.parametrize("path", doc_files())
def test_doc_names_no_file_outside_the_repository(path: str) -> None:
    with open(os.path.join(ROOT, path)) as f:
        outside = [f"{number}: {line.strip()}" for number, line in enumerate(f, 1)
                   if OUTSIDE_THE_REPOSITORY.search(line)]
    assert outside == []
