"""Echo: send every UDP packet back to where it came from.

    segment echo (-D device):  FromNet -> Echo -+-> ToNet    (addresses swapped)
                                                  +-> NetFree  (not whole Ethernet/IPv4/UDP)
    Echo = CheckUDP -> SwapUDP (floem.library.headers)

The segment runs on the CPU or on the NIC by changing only its device:
``-D device=cpu`` (default) or ``-D device=nic``. Run it (see README.md):

    floem run examples/echo/echo.py --port 9000                    # kernel UDP
    floem run examples/echo/echo.py -D device=nic --nic emu        # on the emulated NIC
    floem run examples/echo/echo.py --net pcap --pcap-in in.pcap --pcap-out out.pcap --duration 1
"""
from floem import Composite, Input, Output, Segment, param, target
from floem.library import FRAME, CheckUDP, FromNet, NetFree, SwapUDP, ToNet

DEVICES = {"cpu": target.CPU, "nic": target.NIC}


class Echo(Composite):
    """Address a frame back to its sender; frames not whole Ethernet/IPv4/UDP leave on ``drop``.

    `CheckUDP` drops (and counts by reason) frames that are not IPv4/UDP, are
    IPv4 fragments, or whose headers or stated lengths do not fit in them;
    `SwapUDP` swaps the MAC addresses, IPv4 addresses and UDP ports, which
    keeps both checksums valid, so nothing else changes.
    """

    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        self.drop = Output(*FRAME)

    def impl(self):
        check = CheckUDP()
        self.inp >> check
        check.out >> SwapUDP() >> self.out
        check.drop >> self.drop


class echo(Segment):
    def impl(self):
        swap = Echo()
        FromNet() >> swap
        swap.out >> ToNet()
        swap.drop >> NetFree()


device = param("device", "cpu", choices=list(DEVICES), help="where the echo segment runs")
echo("echo", device=DEVICES[device])
