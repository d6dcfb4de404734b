"""The smallest forwarder: every frame received goes straight back out, unread (the
like-for-like peer of `dpdk-testpmd --forward-mode=io`; benchmarks/echo/run.py)."""
from floem import Segment
from floem.library import FromNet, ToNet


class Forward(Segment):
    def impl(self):
        FromNet() >> ToNet()


Forward("forward")
