/* storm.h of the fake data plane (tests/storm/fake_dataplane.c): the declarations of the
 * header floem generates from examples/storm/storm.py, which the workers call. */
#ifndef FAKE_STORM_H
#define FAKE_STORM_H

#include "tuple.h"

void floem_init(void);
void floem_run_threads(void);
void floem_kill_threads(void);
void floem_finalize(void);

/* The next tuple for local worker `worker`, or NULL if none now; the pointer stays valid
 * until the calling thread's next inqueue_get or bypass_get. */
struct storm_tuple *inqueue_get(int worker);
/* A copy of t to executor t->task (may block while that executor's queue is full). */
void outqueue_put(struct storm_tuple *t);
#ifdef STORM_BYPASS
/* The bypass design: the tuples to `worker` from local executors. */
struct storm_tuple *bypass_get(int worker);
#endif

#endif
