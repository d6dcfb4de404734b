"""An element may leave an input port that carries a value unread (reference: "A port need
not be read at all"); its generated function marks the parameter unused, so gcc does not
warn under -Wextra (an error with FLOEM_CFLAGS=-Werror, as the tests build). Found by the
differential test (docs/testing.md)."""
from floem import CallableSegment, Element, Input, Int, main


class Ignore(Element):
    """A leaf that does not read its input."""

    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.run_c(r'printf("called\n");')


class ignore(CallableSegment):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.inp >> Ignore()


ignore("ignore")

main("ignore(1);")
