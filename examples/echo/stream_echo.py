"""Echo over TCP: every message of a connection sent back on that connection, in order.

    segment echo (-D device, -D cores):  FromNet(framer=length_prefixed()) -> ToNet

A message is a 4-byte big-endian length and that many bytes (`floem.library.stream`'s
``length_prefixed``); each one is a frame of its own, sent back as it came: the transport
writes a frame's message on the connection it belongs to, after the replies to the messages
before it. The segment runs on ``-D cores`` threads (connections are spread over them, each
served by one), on the CPU or, with ``-D device=nic``, on the NIC, whose TCP engine the
emulated NIC's process plays. Run it:

    floem run examples/echo/stream_echo.py --net tcp --port 9000
    floem run examples/echo/stream_echo.py --net tcp --port 9000 -D cores=2
    floem run examples/echo/stream_echo.py --net tcp --port 9000 -D device=nic --nic emu
"""
from floem import Segment, param, target
from floem.library import FromNet, ToNet, length_prefixed

DEVICES = {"cpu": target.CPU, "nic": target.NIC}
device = param("device", "cpu", choices=list(DEVICES), help="where the echo segment runs")
cores = param("cores", 1, help="threads serving the connections")


class echo(Segment):
    def impl(self):
        FromNet(framer=length_prefixed(size=4)) >> ToNet()


echo("echo", device=DEVICES[device], cores=list(range(cores)))
