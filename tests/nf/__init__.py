"""Tests of the network functions of examples/nf and their load generator."""
