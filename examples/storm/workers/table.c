/* The per-user hash table of the counters and rankers; see table.h. */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"
#include "workers.h"

#define TABLE_INITIAL 1024          /* users before the first growth */

/* The first slot to probe for a hash. The executors' hashes are not spread in their low
 * bits (a counter gets the users whose hash is i modulo C), so mix them first (murmur3's
 * finalizer). */
static uint32_t first_slot(const struct storm_table *t, uint32_t hash)
{
    hash ^= hash >> 16;
    hash *= 0x85ebca6bu;
    hash ^= hash >> 13;
    hash *= 0xc2b2ae35u;
    hash ^= hash >> 16;
    return hash & t->mask;
}

void storm_table_init(struct storm_table *t, size_t value_size)
{
    size_t align = alignof(max_align_t);
    memset(t, 0, sizeof *t);
    t->value_size = (value_size + align - 1) / align * align;
    t->capacity = TABLE_INITIAL;
    t->mask = 2 * TABLE_INITIAL - 1;
    t->slots = storm_alloc((size_t)(t->mask + 1) * sizeof *t->slots);
    t->users = storm_alloc((size_t)t->capacity * sizeof *t->users);
    t->hashes = storm_alloc((size_t)t->capacity * sizeof *t->hashes);
    t->values = storm_alloc((size_t)t->capacity * t->value_size);
}

void storm_table_free(struct storm_table *t)
{
    free(t->slots);
    free(t->users);
    free(t->hashes);
    free(t->values);
    memset(t, 0, sizeof *t);
}

/* Twice the room: the arrays by index, and the slots rebuilt from the stored hashes. */
static void grow(struct storm_table *t)
{
    uint32_t capacity = 2 * t->capacity;
    t->users = storm_realloc(t->users, (size_t)capacity * sizeof *t->users);
    t->hashes = storm_realloc(t->hashes, (size_t)capacity * sizeof *t->hashes);
    t->values = storm_realloc(t->values, (size_t)capacity * t->value_size);
    t->capacity = capacity;
    free(t->slots);
    t->mask = 2 * capacity - 1;
    t->slots = storm_alloc((size_t)(t->mask + 1) * sizeof *t->slots);
    for (uint32_t i = 0; i < t->size; i++) {
        uint32_t s = first_slot(t, t->hashes[i]);
        while (t->slots[s] != 0)
            s = (s + 1) & t->mask;
        t->slots[s] = i + 1;
    }
}

uint32_t storm_table_insert(struct storm_table *t, const char user[STORM_USER_MAX + 1],
                            uint32_t hash)
{
    uint32_t s = first_slot(t, hash);
    for (; t->slots[s] != 0; s = (s + 1) & t->mask) {
        uint32_t i = t->slots[s] - 1;
        if (t->hashes[i] == hash && memcmp(t->users[i], user, STORM_USER_MAX + 1) == 0)
            return i;
    }
    if (t->size == t->capacity) {
        grow(t);
        s = first_slot(t, hash);
        while (t->slots[s] != 0)
            s = (s + 1) & t->mask;
    }
    uint32_t i = t->size++;
    memcpy(t->users[i], user, STORM_USER_MAX + 1);
    t->hashes[i] = hash;
    memset(storm_table_value(t, i), 0, t->value_size);
    t->slots[s] = i + 1;
    return i;
}
