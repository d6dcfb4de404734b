"""Open findings of the differential test (docs/testing.md, Findings), reduced: each case
asserts what a user expects and is marked xfail(strict=True) while the bug is open, so that
its fix is noticed; with the fix it moves to tests/programs/."""
from __future__ import annotations

import pytest

from conftest import floem

#: Element `split` has an output port `drop`; another element is named `split_drop`.
PORT_NAME_CLASH = '''
from floem import CallableSegment, Element, Flow, Input, Int, Output, main


class Split(Element):
    def configure(self):
        self.inp = Input(Int)
        self.out = Output(Int)
        self.drop = Output(Int)

    def impl(self):
        self.run_c("int x = inp(); output switch { case x > 0: out(x); else: drop(x); }")


class Show(Element):
    def configure(self, what):
        self.what = what
        self.inp = Input(Int)

    def impl(self):
        self.run_c(f'printf("{self.what} %d\\\\n", inp());')


class Demo(Flow):
    def impl(self):
        class push(CallableSegment):
            def configure(self):
                self.inp = Input(Int)

            def impl(self):
                split = Split("split")
                self.inp >> split
                split.out >> Show("kept", configure=["kept"])
                split.drop >> Show("split_drop", configure=["dropped"])

        push("push")


Demo()
main(r"""
    push(1);
    push(-2);
""")
'''


@pytest.mark.xfail(strict=True, reason="an element's port functions are named ELEMENT_PORT in "
                   "the generated C, the same namespace as element names: an element named "
                   "split_drop beside element split's port drop is a gcc 'redefinition' error")
def test_an_element_may_be_named_like_another_elements_port_function(tmp_path):
    app = tmp_path / "port_name_clash.py"
    app.write_text(PORT_NAME_CLASH)
    result = floem("run", "--timeout", "60", str(app))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "kept 1\ndropped -2\n"
