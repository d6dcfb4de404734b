"""A `main` for benchmark apps replaying a capture: stop once every frame has been handled.

The generated `main` of an app without one waits for SIGINT, and until then
the segment thread polls an exhausted capture, so the instructions counted
would grow with wall-clock time. This `main` returns once the pcap backend
has read the whole capture (`floem_net_rx_done()`), after stopping the
segment threads, which lets the last burst finish; `extra` (C) runs after
that. The segment's own code is unchanged.
"""
from floem import include, main


def stop_when_replayed(extra: str = "") -> None:
    include("#include <sched.h>")
    main(r'''
        while (!floem_net_rx_done())
            sched_yield();
        floem_kill_threads();     /* returns when the segment thread finished its last burst */
    ''' + extra)
