"""Packet I/O alone, to measure what a frame costs this machine's DPDK port
(calibrate_this.py): every frame received is sent back out unread (``-D send=true``), or
given back unread (``-D send=false``: receiving alone)."""
from floem import Segment, param
from floem.library import FromNet, NetFree, ToNet

send = param("send", True, help="send each frame back (false: free it)")


class Io(Segment):
    def impl(self):
        FromNet() >> (ToNet() if send else NetFree())


Io("io")
