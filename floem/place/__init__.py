"""``floem place``: the compiler searches the CPU/NIC cuts of ``target.AUTO`` segments.

`cuts` enumerates the valid cuts of a segment (the rules are `floem.passes.split_auto`'s),
`counts` counts each element once on each side, `search` predicts every placement with the
model of `floem.explore` and ranks them, `check` runs the best against the all-CPU build's
output, `app_file` writes the winner as an app file, `command` is the CLI.
"""
