"""The Floem element library (``floem.library``): reusable elements, one small class each."""
from .net import FRAME, Framer, FromNet, NetAlloc, NetFree, ToNet

__all__ = ["FRAME", "Framer", "FromNet", "NetAlloc", "NetFree", "ToNet"]

from .aes import AESDecrypt, AESEncrypt
from .basic import Constant, Counter, Counts, Display, Drop, Identity, Inject, Print, Probe
from .batch import Batcher, Debatcher
from .hash import CRC32CHash, JenkinsHash, RSSHash, Steer, ToeplitzHash
from .headers import CheckUDP, FillUDP, SetUDPLength, SwapUDP, UDPCheckStats
from .memcached import MemcachedReply, MemcachedStats, ParseMemcached
from .packets import (CheckFrame, DropFrame, EthernetHeader, FrameCheckStats, IPv4Frame,
                      IPv4Header, LoadFrame, StoreFrame, TCPHeader, TransportHeader, UDPHeader)
from .sequencer import Sequencer
from .sketch import CountMin
from .stream import MEMCACHED, MEMCACHED_BINARY, MEMCACHED_TEXT, length_prefixed

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
    "MEMCACHED", "MEMCACHED_BINARY", "MEMCACHED_TEXT", "length_prefixed",
]
