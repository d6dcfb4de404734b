"""The user-facing language: elements, ports, states, segments, programs."""
