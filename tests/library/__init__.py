"""Tests of the element library (floem.library): small apps built and run through the CLI."""
