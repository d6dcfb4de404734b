"""The Floem C runtime (``include/floem/*.h``, ``src/*.c``), installed as package data."""
