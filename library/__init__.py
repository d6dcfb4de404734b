"""The Floem element library (``floem.library``): reusable elements, one small class each."""
from floem.library.net import FRAME, FromNet, NetAlloc, NetFree, ToNet

__all__ = ["FRAME", "FromNet", "NetAlloc", "NetFree", "ToNet"]
