"""Unit tests of the compiler passes (a package, so its conftest does not shadow tests/conftest.py)."""
