/* The item log of the split-pointer design (docs/kvs.md): key-value items the NIC creates
 * in host memory, as in the Floem paper's first split CPU-NIC design (section 7.1,
 * following FlexKVS).
 *
 * The log is a region of host memory that the NIC writes and reads by DMA only: a
 * circular log (as FlexKVS's and MICA's) whose next free position, `head`, the NIC keeps
 * in its own memory. Positions count bytes from the log's start over every lap, so no
 * position is used twice: an item's position is both its pointer (it sits at offset
 * position % size) and its version. An item never straddles the log's end: one that
 * would starts the next lap.
 *
 * An item is a 16-byte header (its position, record length and key length), the key,
 * then the record (proto.h), padded to a multiple of 8 bytes. The header's multi-byte
 * fields are big-endian, like the record's, so an item's bytes mean the same on every
 * device.
 *
 * Overwriting. Items are created one at a time (kvs_log_lock): room is reserved
 * (kvs_log_reserve) and the item written by a blocking DMA write before the next item's
 * room is reserved, so writes land in the order of their positions, as in a log with one
 * writer (MICA's partitions have one each). Without that, a thread that reserved room
 * and then stalled while the others wrote a whole lap would write its older item over
 * newer ones, and no check on reading could tell. The item at `pos` is then intact while
 * head - pos <= size, i.e. nothing has been reserved over its bytes on a later lap. The
 * NIC checks that after reading an item (kvs_log_intact): every reservation comes before
 * its DMA write, and the DMA engine moves words with acquire loads and release stores,
 * so if the read saw a byte of a later item, the check sees that item's reservation. The
 * host cannot see `head`; it keeps the end of the newest item it was told of
 * (kvs_log_saw), which is never beyond `head`, and treats an item that end has lapped as
 * gone (kvs_log_overwritten) without asking the NIC to read it.
 */
#ifndef KVS_ITEMLOG_H
#define KVS_ITEMLOG_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "proto.h"

#define KVS_ITEM_HEADER 16
/* The largest item: the longest key and the longest record, padded. */
#define KVS_ITEM_MAX \
    ((KVS_ITEM_HEADER + KVS_KEY_MAX + KVS_RECORD_HEADER + KVS_VALUE_LIMIT + 7) & ~7)

/* What the host's index files under a key: where the key's item is, and its size. */
struct kvs_item_ref {
    uint64_t pos;
    uint32_t len;
};

/* The size of an item holding a key of `keylen` bytes and a record of `reclen`. */
static inline uint32_t kvs_item_size(uint16_t keylen, uint32_t reclen)
{
    return (KVS_ITEM_HEADER + (uint32_t)keylen + reclen + 7u) & ~7u;
}

/* Where the record of an item with a key of `keylen` bytes starts. */
static inline uint8_t *kvs_item_record(uint8_t *item, uint16_t keylen)
{
    return item + KVS_ITEM_HEADER + keylen;
}

/* Complete the item at `pos` whose record (`reclen` bytes) is in place: header and key.
 * Returns its size. */
static inline uint32_t kvs_item_make(uint8_t *item, uint64_t pos, const uint8_t *key,
                                     uint16_t keylen, uint32_t reclen)
{
    floem_put32(item, (uint32_t)(pos >> 32));
    floem_put32(item + 4, (uint32_t)pos);
    floem_put32(item + 8, reclen);
    floem_put16(item + 12, keylen);
    floem_put16(item + 14, 0);
    memcpy(item + KVS_ITEM_HEADER, key, keylen);
    return kvs_item_size(keylen, reclen);
}

/* The record of `item` (`len` bytes read at position `pos`) when it is the item made at
 * `pos` under `key`, with its length in *reclen; else NULL. */
static inline uint8_t *kvs_item_find(uint8_t *item, uint32_t len, uint64_t pos,
                                     const uint8_t *key, uint16_t keylen, uint32_t *reclen)
{
    if (len < KVS_ITEM_HEADER)
        return NULL;
    uint64_t at = (uint64_t)floem_get32(item) << 32 | floem_get32(item + 4);
    *reclen = floem_get32(item + 8);
    bool same = at == pos && floem_get16(item + 12) == keylen
                && kvs_item_size(keylen, *reclen) == len
                && memcmp(item + KVS_ITEM_HEADER, key, keylen) == 0;
    return same ? kvs_item_record(item, keylen) : NULL;
}

/* NIC: take the log's writer lock (*lock: 1 while a thread creates an item), spinning and
 * now and then yielding (the holder may be descheduled). */
static inline void kvs_log_lock(uint32_t *lock)
{
    while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
        for (unsigned spins = 1; __atomic_load_n(lock, __ATOMIC_RELAXED); spins++)
            if (spins % 64 == 0)
                sched_yield();
}

/* NIC: release the log's writer lock, once the item's DMA write has completed. */
static inline void kvs_log_unlock(uint32_t *lock)
{
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

/* NIC: room for an item of `len` bytes (at most `size`) in the log of `size` bytes whose
 * next free position is *head; returns its position. Any number of threads may call it
 * at once (their rooms never overlap); those creating items hold the writer lock. */
static inline uint64_t kvs_log_reserve(uint64_t *head, uint64_t size, uint32_t len)
{
    uint64_t h = __atomic_load_n(head, __ATOMIC_RELAXED), pos;
    do {
        uint64_t offset = h % size;
        pos = offset + len > size ? h + (size - offset) : h;
    } while (!__atomic_compare_exchange_n(head, &h, pos + len, true, __ATOMIC_ACQ_REL,
                                          __ATOMIC_RELAXED));
    return pos;
}

/* NIC, after reading the item at `pos`: true when no item was reserved over it before the
 * read completed, so what was read is the item whole. */
static inline bool kvs_log_intact(const uint64_t *head, uint64_t size, uint64_t pos)
{
    return __atomic_load_n(head, __ATOMIC_ACQUIRE) - pos <= size;
}

/* Host: note an item ending at position `end` (*newest: the latest end noted). */
static inline void kvs_log_saw(uint64_t *newest, uint64_t end)
{
    uint64_t seen = __atomic_load_n(newest, __ATOMIC_RELAXED);
    while (seen < end && !__atomic_compare_exchange_n(newest, &seen, end, true,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* Host: true when the item at `pos` has certainly been overwritten, the log having
 * reserved room up to *newest since. */
static inline bool kvs_log_overwritten(const uint64_t *newest, uint64_t size, uint64_t pos)
{
    return __atomic_load_n(newest, __ATOMIC_RELAXED) - pos > size;
}

#endif
