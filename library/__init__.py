"""The Floem element library (``floem.library``): reusable elements, one small class each."""
