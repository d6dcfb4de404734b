"""Echo: send every UDP packet back to where it came from.

    segment echo (ECHO_DEVICE):  FromNet -> Echo -+-> ToNet      (addresses swapped)
                                                  +-> NetFree    (not Ethernet/IPv4/UDP, or cut short)

The segment runs on the CPU or on the NIC by changing only its device:
``ECHO_DEVICE=cpu`` (default) or ``ECHO_DEVICE=nic``. Run it (see README.md):

    floem run examples/echo/echo.py --port 9000                    # kernel UDP
    ECHO_DEVICE=nic floem run examples/echo/echo.py --nic emu      # on the emulated NIC
    floem run examples/echo/echo.py --net pcap --pcap-in in.pcap --pcap-out out.pcap --duration 1
"""
import os

from floem import Element, Input, Output, Segment, target
from floem.library.net import FRAME, FromNet, NetFree, ToNet

DEVICES = {"cpu": target.CPU, "nic": target.NIC}


class Echo(Element):
    """Swap the Ethernet, IPv4 and UDP source and destination of a frame (checksums stay valid).

    A frame that is not Ethernet + IPv4 + UDP, is an IPv4 fragment, or whose
    headers or stated lengths do not fit in it goes to ``drop`` instead.
    """

    def configure(self):
        self.inp = Input(*FRAME)
        self.out = Output(*FRAME)
        self.drop = Output(*FRAME)

    def impl(self):
        self.run_c(r'''
            (size_t size, uint8_t *data, void *buffer) = inp();
            size_t ihl = size >= 14 + 20 ? (size_t)(data[14] & 0x0f) * 4 : 0;
            bool ok = size >= 14 + 20 + 8
                && data[12] == 0x08 && data[13] == 0x00          /* IPv4 */
                && (data[14] >> 4) == 4 && ihl >= 20
                && data[23] == 17                                /* UDP */
                && (data[20] & 0x3f) == 0 && data[21] == 0       /* not a fragment */
                && 14 + ihl + 8 <= size;
            if (ok) {
                size_t ip_len = (size_t)data[16] << 8 | data[17];
                size_t udp_len = (size_t)data[14 + ihl + 4] << 8 | data[14 + ihl + 5];
                ok = ip_len >= ihl + 8 && 14 + ip_len <= size
                    && udp_len >= 8 && udp_len <= ip_len - ihl;
            }
            if (ok) {
                uint8_t tmp[6];
                uint8_t *udp = data + 14 + ihl;
                memcpy(tmp, data, 6);                  /* Ethernet destination <-> source */
                memcpy(data, data + 6, 6);
                memcpy(data + 6, tmp, 6);
                memcpy(tmp, data + 26, 4);             /* IPv4 source <-> destination */
                memcpy(data + 26, data + 30, 4);
                memcpy(data + 30, tmp, 4);
                memcpy(tmp, udp, 2);                   /* UDP source port <-> destination port */
                memcpy(udp, udp + 2, 2);
                memcpy(udp + 2, tmp, 2);
            }
            output switch {
                case ok: out(size, data, buffer);
                else: drop(size, data, buffer);
            }
        ''')


class echo(Segment):
    def impl(self):
        swap = Echo()
        FromNet() >> swap
        swap.out >> ToNet()
        swap.drop >> NetFree()


device = os.environ.get("ECHO_DEVICE", "cpu")
if device not in DEVICES:
    raise SystemExit(f"ECHO_DEVICE must be cpu or nic, not {device!r}")
echo("echo", device=DEVICES[device])
