"""NIC platforms: how NIC code is compiled and started, and how many cores it has."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from floem.errors import FloemError


@dataclass(frozen=True)
class Platform:
    """A NIC platform (``--nic``): its C compiler, flags, emulator, core count and the
    instruction set its programs are built for."""

    name: str
    cc: str
    cflags: tuple[str, ...]
    emulator: tuple[str, ...]
    cores: int
    packages: str
    isa: str = "x86-64"

    def compiler(self) -> str:
        """The C compiler command (``$CC`` for the native emulation)."""
        return os.environ.get("CC", "cc") if not self.cc else self.cc

    def command(self, executable: str) -> list[str]:
        """How to start the NIC program."""
        return list(self.emulator) + [executable]

    def check_tools(self) -> None:
        """Raise a clear error when the cross compiler or emulator is not installed."""
        for tool in ([self.cc] if self.cc else []) + list(self.emulator[:1]):
            if shutil.which(tool) is None:
                raise FloemError(f"--nic {self.name} needs '{tool}' (apt-get install {self.packages})")


# The LiquidIO's cnMIPS64 III cores run MIPS64r2 with Octeon instructions of their own;
# gcc's -march=octeon3 (octeon, octeon2 too) uses DMUL, which qemu 7.2 lacks, so the build
# is scheduled for them (-mtune) without using them. The BlueField-2's Cortex-A72 has no
# LSE atomics: its atomic operations are inline exclusive pairs (no run-time choice).
PLATFORMS = {
    "emu": Platform("emu", "", (), (), 64, "gcc"),
    "bluefield": Platform("bluefield", "aarch64-linux-gnu-gcc",
                          ("-mcpu=cortex-a72", "-mno-outline-atomics", "-static"),
                          ("qemu-aarch64", "-cpu", "cortex-a72"), 16,
                          "gcc-aarch64-linux-gnu qemu-user", "aarch64"),
    "liquidio": Platform("liquidio", "mips64-linux-gnuabi64-gcc",
                         ("-march=mips64r2", "-mtune=octeon3", "-static"), ("qemu-mips64",), 12,
                         "gcc-mips64-linux-gnuabi64 qemu-user", "mips64"),
}


#: Build-time DMA cost model options (``--dma-...``): each one's unit and meaning; and the
#: runtime variables they preset (runtime/include/floem/dma.h).
DMA_OPTIONS = {"latency_ns": "NS", "gbps": "GB_PER_S", "descriptors": "N", "outstanding": "N"}
DMA_MEANINGS = {"latency_ns": "latency of a request (a PCIe round trip), ns; default 1000",
                "gbps": "bandwidth, gigabytes (not bits) a second, i.e. bytes a ns; default 8",
                "descriptors": "descriptors a request holds at most; default 16",
                "outstanding": "requests in flight at most; default 8"}
DMA_ENVIRONMENT = {"latency_ns": "FLOEM_DMA_LATENCY_NS", "gbps": "FLOEM_DMA_GBPS",
                   "descriptors": "FLOEM_DMA_DESCRIPTORS", "outstanding": "FLOEM_DMA_OUTSTANDING"}
