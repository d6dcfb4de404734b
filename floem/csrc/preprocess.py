"""Running the system C preprocessor over the translation unit of all bodies.

pycparser reads preprocessed C only, and cannot read glibc's headers, so the
unit is preprocessed once with ``gcc -E -nostdinc -undef`` against the fake C
library in ``fake_libc/``. A header found nowhere (a DPDK header, say) is
replaced by a stub that includes the fake library, and the run is repeated.
"""
from __future__ import annotations

import atexit
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Sequence

#: The fake C library headers (package data).
FAKE_LIBC = Path(__file__).with_name("fake_libc")
#: The one header every fake header includes.
FAKE_HEADER = "_floem_fake.h"

_MAX_STUBS = 64
_DIAGNOSTIC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<message>.*)$",
                         re.MULTILINE)
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
    stubbed: list[str] = field(default_factory=list)


class _Scratch:
    """A private directory for the lifetime of the process: an empty working dir and the stubs."""

    def __init__(self) -> None:
        self._root: Path | None = None

    @property
    def root(self) -> Path:
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="floem-cpp-"))
            (self._root / "cwd").mkdir()
            (self._root / "stubs").mkdir()
            atexit.register(shutil.rmtree, self._root, True)
        return self._root


_scratch = _Scratch()


def preprocess(text: str, include_dirs: Sequence[str] = ()) -> Preprocessed:
    """Preprocess `text`; raises `PreprocessError` with the diagnostic's file and line."""
    stubs = _scratch.root / "stubs"
    command = ["gcc", "-E", "-x", "c", "-nostdinc", "-undef", "-I", str(FAKE_LIBC)]
    for directory in include_dirs:
        command += ["-I", str(directory)]
    command += ["-I", str(stubs), "-"]
    result = Preprocessed("")
    while True:
        try:
            run = subprocess.run(command, input=text, capture_output=True, text=True,
                                 cwd=_scratch.root / "cwd", check=False)
        except FileNotFoundError as e:
            raise PreprocessError("the C preprocessor (gcc -E) is not installed") from e
        if run.returncode == 0:
            result.text = run.stdout
            return result
        error = _first_error(run.stderr)
        missing = _MISSING.match(error.message)
        if missing is None or len(result.stubbed) >= _MAX_STUBS:
            raise error
        name = missing.group("name")
        _write_stub(stubs, name, error)
        result.stubbed.append(name)


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
