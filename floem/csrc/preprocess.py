"""Running the system C preprocessor over the translation unit of all bodies.

pycparser reads preprocessed C only, and cannot read glibc's headers, so the
unit is preprocessed once with ``gcc -E -nostdinc -undef`` against the fake C
library in ``fake_libc/``. A header found nowhere (a DPDK header, say) is
replaced by a stub that includes the fake library, and the run is repeated;
stubs live in a scratch directory of the call, and the working directory is
an empty one, so that ``#include "x.h"`` finds nothing by accident.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

#: The fake C library headers (package data).
FAKE_LIBC = Path(__file__).with_name("fake_libc")
#: The one header every fake header includes.
FAKE_HEADER = "_floem_fake.h"

_MAX_STUBS = 64
_DIAGNOSTIC = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<message>.*)$", re.MULTILINE)
_MISSING = re.compile(r"^(?P<name>.+): No such file or directory$")


class PreprocessError(Exception):
    """The preprocessor rejected the unit: where and why."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        super().__init__(message)


@dataclass
class Preprocessed:
    """Preprocessor output and the headers that had to be stubbed."""

    text: str
    stubbed: list[str]


def preprocess(text: str, include_dirs: Sequence[str] = ()) -> Preprocessed:
    """Preprocess `text`; raises `PreprocessError` with the diagnostic's file and line."""
    with tempfile.TemporaryDirectory(prefix="floem-cpp-") as scratch:
        cwd, stubs = Path(scratch, "cwd"), Path(scratch, "stubs")
        cwd.mkdir()
        stubs.mkdir()
        command = ["gcc", "-E", "-x", "c", "-nostdinc", "-undef", "-I", str(FAKE_LIBC)]
        for directory in include_dirs:
            command += ["-I", str(directory)]
        command += ["-I", str(stubs), "-"]
        stubbed: list[str] = []
        while True:
            try:
                run = subprocess.run(command, input=text, capture_output=True, text=True,
                                     cwd=cwd, check=False)
            except FileNotFoundError as e:
                raise PreprocessError("the C preprocessor (gcc -E) is not installed") from e
            if run.returncode == 0:
                return Preprocessed(run.stdout, stubbed)
            error = _first_error(run.stderr)
            missing = _MISSING.match(error.message)
            if missing is None or len(stubbed) >= _MAX_STUBS:
                raise error
            _write_stub(stubs, missing.group("name"), error)
            stubbed.append(missing.group("name"))


def _first_error(stderr: str) -> PreprocessError:
    m = _DIAGNOSTIC.search(stderr)
    if m is None:
        return PreprocessError(stderr.strip() or "the C preprocessor failed")
    return PreprocessError(m.group("message"), m.group("file"), int(m.group("line")))


def _write_stub(stubs: Path, name: str, error: PreprocessError) -> None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise error
    stub = stubs.joinpath(*path.parts)
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text(f'#include "{FAKE_HEADER}"\n')
