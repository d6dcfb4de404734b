"""Configuration mistakes in library elements are FloemErrors at the app line that made the element."""
from __future__ import annotations

import pytest

from conftest import floem

CASES = {
    "bad MAC": ('from floem.library.headers import FillUDP\n'
                'FillUDP(src_mac="02:00", dst_mac="02:00:00:00:00:01", src_ip="10.0.0.1",'
                ' dst_ip="10.0.0.2", src_port=1, dst_port=2)',
                "FillUDP: not a MAC address: '02:00'"),
    "bad port": ('from floem.library.headers import FillUDP\n'
                 'FillUDP(src_mac="02:00:00:00:00:01", dst_mac="02:00:00:00:00:01", '
                 'src_ip="10.0.0.1", dst_ip="10.0.0.2", src_port=1, dst_port=70000)',
                 "FillUDP: port 70000 is not in 0..65535"),
    "AES key length": ('from floem.library.aes import AESEncrypt\n'
                       'AESEncrypt(key="0011", iv=bytes(16))',
                       "AESEncrypt: key must be 16 bytes, got 2"),
    "memcached field": ('from floem.library.memcached import ParseMemcached\n'
                        'ParseMemcached(keys="state->k")',
                        "ParseMemcached: unknown field(s) keys"),
    "steer n": ('from floem.library.hash import Steer\nSteer(n=0)',
                "Steer: n must be a positive integer, not 0"),
    "hash key half given": ('from floem.library.hash import JenkinsHash\n'
                            'JenkinsHash(data="state->key")',
                            "JenkinsHash: give both data= and length=, or neither"),
    "sketch shape": ('from floem.library.sketch import CountMin\nCountMin(width=0)',
                     "CountMin: width and depth must be positive integers"),
    "batch size": ('from floem.library.batch import Batcher\nBatcher(n=0)',
                   "Batcher: n must be a positive integer, not 0"),
    "sequencer groups": ('from floem.library.sequencer import Sequencer\nSequencer(groups=0)',
                         "Sequencer: groups must be a positive integer, not 0"),
    "probe size": ('from floem.library.basic import Probe\nProbe(n=0)',
                   "Probe: n must be >= 1, not 0"),
    "print type": ('from floem.library.basic import Print\nPrint(ty="struct point")',
                   "Print: no printf format for struct point; give fmt="),
    "counter size": ('from floem.library.basic import Counter\nCounter(ty="int", size=1)',
                     "Counter: size=1 names no value"),
    "framer": ('from floem.library import FromNet\nFromNet(framer="memcached")',
               "FromNet: framer must be a floem.library.Framer, not 'memcached'"),
}


@pytest.mark.parametrize("case", CASES)
def test_configuration_error(case: str, tmp_path) -> None:
    source, message = CASES[case]
    app = tmp_path / "app.py"
    app.write_text(source + "\n")
    result = floem("check", str(app))
    assert result.returncode == 1
    assert result.stderr.startswith(f"{app}:2: error: "), result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
