/* Helpers for floem.library.basic, usable from element bodies and floem.main code. */
#ifndef FLOEM_LIBRARY_BASIC_H
#define FLOEM_LIBRARY_BASIC_H

/* The k-th most recent value a Probe recorded (k = 0: the last one), given its log
 * state; valid for k < the log's size and k < log->count. */
#define floem_probe_last(log, k) \
    ((log)->values[((log)->count - 1 - (k)) % (sizeof (log)->values / sizeof (log)->values[0])])

#endif
