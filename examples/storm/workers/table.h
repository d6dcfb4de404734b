/* Per-user state of one executor: a hash table from user name to a fixed-size value.
 *
 * Users get dense indices 0..size-1 in the order they were first inserted; names and values
 * live in two arrays by index, and open addressing (linear probing) over a power-of-two slot
 * array finds a name's index. It only grows (users are never removed), doubling when half
 * full. One thread owns a table; nothing is locked. Values start zeroed. A pointer from
 * storm_table_value is good until the next storm_table_insert, which may move the values.
 */
#ifndef STORM_TABLE_H
#define STORM_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "tuple.h"

struct storm_table {
    uint32_t *slots;                /* user index + 1 of each slot; 0: empty */
    uint32_t mask;                  /* slots - 1 */
    char (*users)[STORM_USER_MAX + 1];  /* by index: the name, NUL-padded */
    uint32_t *hashes;               /* by index: storm_hash of the name */
    unsigned char *values;          /* by index: value_size bytes each */
    size_t value_size;              /* rounded up so that every value is aligned */
    uint32_t size, capacity;        /* users, and room in the arrays */
};

void storm_table_init(struct storm_table *t, size_t value_size);
void storm_table_free(struct storm_table *t);
/* The index of user (NUL-padded, hash = storm_hash(user)), added with a zeroed value if new. */
uint32_t storm_table_insert(struct storm_table *t, const char user[STORM_USER_MAX + 1],
                            uint32_t hash);

static inline void *storm_table_value(const struct storm_table *t, uint32_t index)
{
    return t->values + (size_t)index * t->value_size;
}

static inline const char *storm_table_user(const struct storm_table *t, uint32_t index)
{
    return t->users[index];
}

#endif
