"""NIC -> CPU transfer of a 256-byte per-packet state of which only part is live
(benchmarks/live_fields).

Build-time parameters, from the environment (read when floem loads this file):
  LIVE_QUARTERS  how many of the four 64-byte fields the host reads: 1, 2, 3 or 4 (default 1)
  PACKETS        packets the NIC produces (default 1000000)

The NIC fills all four fields a, b, c, d of every packet; the host reads only
the first LIVE_QUARTERS of them, so only those cross the queue, unless the app
is built with --send-all-fields. main prints the time from the first packet's
arrival to the last one's, and packets/s; the NIC its DMA counters over the
transfer (../sync_layer/nic_to_host.py, the program this shares with transfer.py).
"""
import os
import sys

from floem import Array, Field, State, Uint

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sync_layer"))
from nic_to_host import nic_to_host  # noqa: E402

LIVE_QUARTERS = int(os.environ.get("LIVE_QUARTERS", "1"))
PACKETS = int(os.environ.get("PACKETS", "1000000"))
assert LIVE_QUARTERS in (1, 2, 3, 4), "LIVE_QUARTERS must be 1, 2, 3 or 4"
FIELDS = "abcd"


class Packet(State):
    """256 bytes of per-packet state: four 64-byte fields."""
    a = Field(Array(Uint(8), 64))
    b = Field(Array(Uint(8), 64))
    c = Field(Array(Uint(8), 64))
    d = Field(Array(Uint(8), 64))


nic_to_host(Packet, PACKETS,
            fill=" ".join(f"memset(state->{f}, (int)(uint8_t)n, sizeof state->{f});"
                          for f in FIELDS),
            check=" ".join(f"if (state->{f}[63] != state->a[0]) control->bad++;"
                           for f in FIELDS[:LIVE_QUARTERS]),
            label=f"live {LIVE_QUARTERS}/4 of 256 bytes")
