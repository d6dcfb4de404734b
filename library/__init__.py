"""The Floem element library (``floem.library``): reusable elements, one small class each."""
from floem.library.net import FRAME, FromNet, NetAlloc, NetFree, ToNet

__all__ = ["FRAME", "FromNet", "NetAlloc", "NetFree", "ToNet"]

from floem.library.aes import AESDecrypt, AESEncrypt
from floem.library.basic import (Constant, Counter, Counts, Display, Drop, Identity, Inject, Print,
                                 Probe)
from floem.library.batch import Batcher, Debatcher
from floem.library.hash import CRC32CHash, JenkinsHash, RSSHash, Steer, ToeplitzHash
from floem.library.headers import CheckUDP, FillUDP, SetUDPLength, SwapUDP, UDPCheckStats
from floem.library.memcached import MemcachedReply, MemcachedStats, ParseMemcached
from floem.library.packets import (CheckFrame, DropFrame, EthernetHeader, FrameCheckStats,
                                   IPv4Frame, IPv4Header, LoadFrame, StoreFrame, TCPHeader,
                                   TransportHeader, UDPHeader)
from floem.library.sequencer import Sequencer
from floem.library.sketch import CountMin

__all__ += [
    "AESDecrypt", "AESEncrypt",
    "Constant", "Counter", "Counts", "Display", "Drop", "Identity", "Inject", "Print", "Probe",
    "Batcher", "Debatcher",
    "CRC32CHash", "JenkinsHash", "RSSHash", "Steer", "ToeplitzHash",
    "CheckUDP", "FillUDP", "SetUDPLength", "SwapUDP", "UDPCheckStats",
    "MemcachedReply", "MemcachedStats", "ParseMemcached",
    "CheckFrame", "DropFrame", "EthernetHeader", "FrameCheckStats", "IPv4Frame", "IPv4Header",
    "LoadFrame", "StoreFrame", "TCPHeader", "TransportHeader", "UDPHeader",
    "Sequencer",
    "CountMin",
]
