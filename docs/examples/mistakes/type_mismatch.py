"""Deliberately wrong: connects an int output to a uint8_t input."""
from floem import CallableSegment, Element, Input, Int, Uint


class Narrow(Element):
    def configure(self):
        self.inp = Input(Uint(8))

    def impl(self):
        self.run_c("inp();")


class narrow(CallableSegment):
    def configure(self):
        self.inp = Input(Int)

    def impl(self):
        self.inp >> Narrow()


narrow("narrow")
