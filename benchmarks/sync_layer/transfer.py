"""NIC -> CPU transfer of fixed-size queue entries (benchmarks/sync_layer).

Build-time parameters, from the environment (read when floem loads this file):
  ENTRY_BYTES  queue entry size: 32, 64, 128 or 256 (default 64)
  PACKETS      packets the NIC produces (default 200000)

A NIC thread produces PACKETS packets whose per-packet state is sized so that
the queue entry (8-byte header + the live fields) is exactly ENTRY_BYTES; a
host thread dequeues and counts them. main prints the time from the first
packet's arrival to the last one's, and packets/s; the NIC its DMA counters over
the transfer (nic_to_host.py, the program this shares with ../live_fields).
"""
import os

from floem import Array, Field, State, Uint

from nic_to_host import nic_to_host

ENTRY_BYTES = int(os.environ.get("ENTRY_BYTES", "64"))
PACKETS = int(os.environ.get("PACKETS", "200000"))
assert ENTRY_BYTES in (32, 64, 128, 256), "ENTRY_BYTES must be 32, 64, 128 or 256"


class Packet(State):
    seq = Field(Uint(32))
    # 8-byte entry header + 4-byte seq + pad = ENTRY_BYTES; all of it is read on the host.
    pad = Field(Array(Uint(8), ENTRY_BYTES - 12))


nic_to_host(Packet, PACKETS,
            fill="state->seq = n; memset(state->pad, (int)(uint8_t)n, sizeof state->pad);",
            check="if (state->pad[sizeof state->pad - 1] != (uint8_t)state->seq) control->bad++;",
            label=f"entry {ENTRY_BYTES} bytes")
