"""Design exploration: measure an app's configurations, predict them on NIC platforms, rank.

``floem explore`` (`command`) sweeps parameters (`sweep`), replays a workload
through each configuration and counts what it does (`measure`, `counters`), and
predicts throughput on the platforms of ``floem/platforms/*.toml`` (`model`);
`output` prints and writes the results. docs/exploration.md has the method and
the Floem paper's experiments reproduced with it.
"""
