/* Floem emulated NIC: the queue synchronization layer (Floem paper, section 6).
 *
 * A queue between the host and the NIC lives in host memory, in the format
 * of floem/queue.h (the host side uses that runtime unchanged). The NIC keeps
 * a shadow copy of each such ring in NIC memory and moves entries with the
 * DMA engine in batches, overlapped with the workers' processing.
 *
 * Each shadow slot is in one of five states, in ring order
 *     invalid -> reading -> valid -> modified -> writing -> invalid
 * tracked by five cursors dividing the ring (no per-entry bookkeeping):
 *   - reading:  a DMA read of the slot's host entry is in flight;
 *   - valid:    the slot holds the host entry and the NIC owns it (to_host: a free
 *               entry the NIC may fill; from_host: a published entry to process);
 *   - modified: a worker finished with it (filled / consumed), not yet written back;
 *   - writing:  a DMA write-back of the slot is in flight.
 * Workers call access_entry / access_done (or the enq/deq wrappers); manager
 * routines (floem_sync_manage) issue the DMA: learn which entries the host has
 * made NIC-owned (to_host: a 4-byte read of the host's release count; from_host:
 * reads of the entries' 8-byte headers, then of their used bytes), write finished
 * entries back in batches (used payload first, then the status word), and retire
 * completed requests. Only the bytes an entry's producer wrote cross: the header's
 * `used` (floem/queue.h) says how many. A worker whose reserve or acquire finds
 * nothing runs a manager round itself (try-lock) before returning NULL. A batch that
 * is only partly filled is still written back when the
 * workers have nothing more for it (floem_sync_manage flushes it once no
 * entry has been finished for a round). Status words and channels are kept in
 * wire (host) byte order in the shadow; the layer converts.
 *
 * Built with -DFLOEM_SYNC_BLOCKING, the layer is replaced by blocking,
 * unbatched DMA per entry (for comparison): no prefetch, every reserve or
 * acquire reads its entry and every commit or release writes it back at once.
 *
 * Threads: workers of one shadow are serialised by a spinlock when `multi` is set
 * (otherwise one worker thread at a time); manager rounds are serialised by a
 * try-lock (a round that finds another one running returns at once), so workers
 * may call floem_sync_manage inline and manager threads may share shadows. A worker
 * and a manager run concurrently without a lock. The shadow and its host queue start
 * together at position 0 (an empty host queue).
 *
 * Write-back order (to_host): one request holds the channel, `used` and used payload
 * of a run of entries (a descriptor per entry, entries used to their end merged with
 * the next), with the status words of all but its first entry already published,
 * and then the first entry's status word; the host consumer reads an entry only
 * after the one before it, so the last store publishes the whole run. from_host
 * write-backs carry status words only.
 *
 * Freed to_host entries: the host consumers publish a release count (floem/queue.h,
 * "Release tracking", turned on by floem_sync_init with a DMA write before any entry
 * is published); every position below count + size is free for the NIC. The count is
 * stored (release) after the status words and the consumers' use of the entries, and
 * read as one aligned 4-byte word, which no PCIe read tears.
 *
 * Read order (from_host): what one DMA read observes of memory the host is writing is
 * unordered (PCIe), so a read that finds an entry published may hold its `used` and
 * payload from before. An entry becomes valid only through a read issued after an
 * earlier read completed and found it published (the host wrote the payload before the
 * status word, and does not touch an entry the NIC owns), and only if that later read,
 * which reads the header's channel and `used` again, covered all the used bytes (else
 * it is fetched again); the blocking variant reads the header, then channel and used
 * bytes (and the rest when the header seen first said less). Of the orderings between DMA
 * accesses, the layer relies only on one
 * PCIe keeps: the write descriptors of a request land in order (posted writes). With
 * FLOEM_FAULTS the engine reorders whatever else PCIe allows (docs/nic.md, "Fault
 * injection").
 */
#ifndef FLOEM_SYNC_H
#define FLOEM_SYNC_H

#include "floem/dma.h"
#include "floem/queue.h"

typedef enum {
    FLOEM_SYNC_TO_HOST = 0,     /* the NIC produces, the host consumes */
    FLOEM_SYNC_FROM_HOST = 1,   /* the host produces, the NIC consumes */
} floem_sync_dir_t;

typedef struct floem_sync floem_sync_t;

typedef struct {
    uint64_t entries;           /* finished by the workers (committed / released) */
    uint64_t moved;             /* their headers and used payload bytes: what crosses for them */
    uint64_t read_requests, write_requests;
    uint64_t flushes;           /* write-backs of a partly filled batch */
    uint64_t dropped;           /* floem_sync_enq_drop calls */
    uint32_t entry_size;        /* bytes of one entry, status word included */
} floem_sync_stats_t;

/* The five cursors, each the first position in its state (see above):
 * writing <= modified <= valid <= reading <= invalid <= writing + size; and `taken`, the
 * next position the enqueue/dequeue wrappers hand out (valid <= taken). */
typedef struct {
    uint64_t writing, modified, valid, reading, invalid, taken;
} floem_sync_cursors_t;

/* NIC memory to reserve (64-byte aligned; a multiple of 64, so shadows can be laid out one
 * after another) for the shadow of a ring of `size` entries: bookkeeping, then one slot per
 * entry. */
size_t floem_sync_bytes(uint32_t size, uint32_t entry_size);
/* Set up a shadow (floem_sync_bytes of NIC memory at `s`) of the host queue instance at
 * host address `host_queue` (initialised by the host with floem_queue_init(size,
 * entry_size); the shadow never reads its header). `batch`: entries per
 * DMA request (at most the engine's max_descriptors if the layer uses one descriptor per
 * entry; it may also read/write contiguous runs with one descriptor). This layer uses a
 * descriptor per entry where entries are not used to their end (merging runs that are), at
 * most max_descriptors (and 64) per request, and puts at most that many status words in a
 * from_host write-back; a to_host shadow turns on the host queue's release tracking (one
 * 4-byte DMA write, here). `multi`: several NIC worker
 * threads may work on this shadow (a lock), else one worker at a time. Needs floem_dma_init
 * first. */
void floem_sync_init(floem_sync_t *s, floem_queue_t *host_queue, uint32_t size,
                     uint32_t entry_size, floem_sync_dir_t dir, uint32_t batch, bool multi);

/* The paper's interface: a local pointer to entry i (a ring position counted from 0 and
 * increasing forever; the pointer is to the entry's 8-byte header, wire order) when it is
 * present in the shadow, NIC-owned and not finished, else NULL; access_done marks it
 * modified (aborts if it is not such an entry). Entries may be finished out of order;
 * they are written back in order. The workers' position is the next valid entry. A to_host
 * entry's `used` reads "all of it" until the worker stores less there (wire order). */
void *access_entry(floem_sync_t *s, uint64_t i);
void access_done(floem_sync_t *s, uint64_t i);

/* Worker wrappers returning the payload (after the 8-byte entry header). */
void *floem_sync_enq_reserve(floem_sync_t *s);                    /* to_host; NULL when none free yet */
/* Commit a reserved entry on `channel`, `bytes` of whose payload the worker wrote (only
 * those cross to the host). */
void floem_sync_enq_commit(floem_sync_t *s, void *payload, uint16_t channel, size_t bytes);
/* After a reserve found nothing: true when the host holds the next entry as of the latest
 * completed read (the queue is full: a lossy enqueue drops), false while that is not known
 * yet (no read has covered the entry: try again, running the manager if nobody else does). */
bool floem_sync_enq_full(floem_sync_t *s);
void floem_sync_enq_drop(floem_sync_t *s);                        /* count a drop */
void *floem_sync_deq_acquire(floem_sync_t *s, uint16_t *channel); /* from_host; NULL when empty */
void floem_sync_deq_release(floem_sync_t *s, void *payload);

/* Manager: one round of DMA work for this shadow (non-blocking, except that the engine
 * makes an issue wait while max_outstanding requests are in flight). */
void floem_sync_manage(floem_sync_t *s);
/* Write back everything finished and wait for it (used at shutdown). */
void floem_sync_flush(floem_sync_t *s);
void floem_sync_stats(const floem_sync_t *s, floem_sync_stats_t *out);
/* Two lines per shadow of a NULL-terminated table of shadow arrays (with their instance
 * counts): its counters ("floem: nic sync shadow J.I: entries ..., entry bytes B, moved M")
 * and its cursors
 * ("... positions to host|from host: written back W, finished V, handed out T, fetched R,
 * being read I"). */
void floem_sync_report(FILE *out, floem_sync_t **const *tables, const int *counts);
/* The cursors, for tests and reports; exact only while no worker or manager is running.
 * In the blocking build all five are the workers' next position. */
void floem_sync_cursors(const floem_sync_t *s, floem_sync_cursors_t *out);

#endif
