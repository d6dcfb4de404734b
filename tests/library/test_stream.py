"""floem.library.stream: the framers' Python side (their C is fuzzed by fuzz/harness/
stream_framers.c and run by tests/test_net.py and the key-value store's TCP tests).

`length_prefixed` refuses a layout that cannot be, and gives the C the layout asked for; a
program built with a framer over UDP (a datagram is a message) runs as without one, and one
built over TCP without a framer is refused by the compiler at its FromNet.
"""
from __future__ import annotations

import pytest

from conftest import floem
from floem.library import MEMCACHED, length_prefixed


@pytest.mark.parametrize("kwargs, message", [
    (dict(size=3), "size must be one of (1, 2, 4, 8), not 3"),
    (dict(order="middle"), "order must be 'big' or 'little'"),
    (dict(offset=-1), "offset must be an integer >= 0"),
    (dict(offset=2, header=4), "the header (4 bytes) must hold the length field (bytes 2 to 5)"),
    (dict(max_length=2), "max_length must be an integer from the header's 4 bytes up"),
])
def test_impossible_layouts_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        length_prefixed(**kwargs)


def test_the_layout_reaches_the_c() -> None:
    framer = length_prefixed(size=2, offset=1, order="little", header=6, whole=True,
                             max_length=4096)
    assert framer.declarations() == (
        "static const struct floem_length_prefix framer_config = {.offset = 1, .size = 2, "
        ".header = 6, .little_endian = true, .whole = true, .max = 4096ull}; "
        "static const floem_framer_t framer = {floem_frame_length_prefixed, &framer_config};")
    assert MEMCACHED.declarations() == \
        "static const floem_framer_t framer = {floem_frame_memcached, NULL};"


APP = """
from floem import Segment
from floem.library import FromNet, ToNet, length_prefixed

class echo(Segment):
    def impl(self):
        FromNet({framer}) >> ToNet()

echo("echo")
"""


def test_a_framer_over_udp_and_none_over_tcp(tmp_path) -> None:
    app = tmp_path / "echo.py"
    app.write_text(APP.format(framer="framer=length_prefixed()"))
    built = floem("build", str(app), "--net", "udp", "-o", str(tmp_path / "udp"), timeout=300)
    assert built.returncode == 0, built.stderr
    app.write_text(APP.format(framer=""))
    refused = floem("build", str(app), "--net", "tcp", "-o", str(tmp_path / "tcp"), timeout=300)
    assert refused.returncode == 1
    assert "element 'FromNet0'" in refused.stderr
    assert "--net tcp serves streams: give FromNet a framer= (floem.library.stream)" \
        in refused.stderr
