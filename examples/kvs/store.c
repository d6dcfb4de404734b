/* The key-value store of store.h: slab-allocated items, per-bucket spinlocks, per-class
 * mutexes and CLOCK eviction.
 *
 * Who owns what:
 *   bucket lock  the bucket's chain, and of each item in it: hnext, linked, accessed, and
 *                the key, record, exptime and lengths.
 *   class lock   the class's free list, carve cursor and item list (prev/next). An item's
 *                hash and class are written under it when the chunk is handed out, and
 *                never change while the chunk is in use; so are linked = accessed = 0,
 *                before any bucket can reach the item.
 *
 * An item's life: alloc_item takes a chunk and appends it to its class's list with
 * linked = 0 (so eviction skips it); the setter fills it without a lock, since nobody
 * reads an unlinked item's body; it links it under the bucket lock. Whoever unlinks an
 * item from its chain (setting linked = 0 under the bucket lock) owns it and alone
 * returns its chunk to the class. Because the chunk joins the class list before it
 * becomes visible, a remover always finds it on that list.
 * `items` changes under the bucket lock of the linking or unlinking, so a link is
 * always counted before its unlink and the counter never dips below zero.
 *
 * Lock order: a class lock may be held while *trying* a bucket lock (eviction), never
 * while waiting for one; a bucket lock is only waited for with no other lock held; no
 * thread holds two class locks or two bucket locks. So set takes the class lock to
 * allocate, drops it, takes the bucket lock to link (and unlink the old item), drops
 * it, then takes the old item's class lock to free its chunk. No thread ever waits
 * while holding a lock another waiter could need, so there is no deadlock.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "store.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PAGE_SIZE ((size_t)1 << 20)
#define MIN_PAGE_SIZE ((size_t)4096)
#define MIN_PAGES 64     /* small budgets get smaller pages, at least this many */
#define MIN_CHUNK 64
#define MAX_CLASSES 64   /* 1.25 growth from 64 bytes reaches 1 MiB in under 50 steps */
#define MAX_KEY 250

struct item {
    struct item *hnext;        /* hash chain; the free list while the chunk is free */
    struct item *prev, *next;  /* the class's list, oldest first */
    uint64_t cas;              /* the caller's version of the item (store.h) */
    uint32_t hash;
    uint32_t exptime;
    uint32_t reclen;
    uint8_t keylen;
    uint8_t cls;
    uint8_t accessed;
    uint8_t linked;
    /* key bytes, then record bytes */
};

struct bucket {
    struct item *head;
    uint32_t lock;
};

struct slab_class {
    pthread_mutex_t lock;
    size_t size;               /* chunk size, a multiple of 8 */
    struct item *free;
    char *carve, *carve_end;   /* the unused rest of the class's newest page */
    struct item *oldest, *newest;
    size_t count;              /* items on the list, linked or not */
};

struct kvs_store {
    /* read-only after kvs_store_new */
    char *arena;
    size_t page_size, npages;
    struct bucket *buckets;
    uint32_t mask;
    unsigned nclasses;
    /* keeps the counters below off the read-mostly line above */
    char pad[64];
    size_t pages_used;
    uint32_t now;              /* latest clock seen, for eviction's expiry test */
    uint64_t oldest;           /* highest oldest live version seen, for eviction */
    uint64_t items, gets, hits, sets, deletes, evictions, expired, set_failures;
    struct kvs_store *made_next;    /* the next store kvs_store_make_once made */
    struct slab_class classes[MAX_CLASSES];
};

#define ADD(s, field, n) __atomic_fetch_add(&(s)->field, (n), __ATOMIC_RELAXED)
#define SUB(s, field, n) __atomic_fetch_sub(&(s)->field, (n), __ATOMIC_RELAXED)

static void bucket_lock(struct bucket *b)
{
    while (__atomic_exchange_n(&b->lock, 1, __ATOMIC_ACQUIRE)) {
        /* The holder may be descheduled (more threads than cores): yield now and then. */
        for (unsigned spins = 1; __atomic_load_n(&b->lock, __ATOMIC_RELAXED); spins++)
            if (spins % 64 == 0)
                sched_yield();
    }
}

static bool bucket_trylock(struct bucket *b)
{
    return !__atomic_load_n(&b->lock, __ATOMIC_RELAXED) &&
           !__atomic_exchange_n(&b->lock, 1, __ATOMIC_ACQUIRE);
}

static void bucket_unlock(struct bucket *b)
{
    __atomic_store_n(&b->lock, 0, __ATOMIC_RELEASE);
}

static char *item_key(struct item *it)
{
    return (char *)(it + 1);
}

/* Expired at `now`, or flushed (a version below `oldest`). */
static bool is_expired(const struct item *it, uint32_t now, uint64_t oldest)
{
    return (it->exptime != 0 && now >= it->exptime) || it->cas < oldest;
}

static void note_now(kvs_store_t *s, uint32_t now, uint64_t oldest)
{
    /* Racy max: a lost update only makes eviction see a slightly older clock. */
    if (now > __atomic_load_n(&s->now, __ATOMIC_RELAXED))
        __atomic_store_n(&s->now, now, __ATOMIC_RELAXED);
    if (oldest > __atomic_load_n(&s->oldest, __ATOMIC_RELAXED))
        __atomic_store_n(&s->oldest, oldest, __ATOMIC_RELAXED);
}

/* The link pointing at the item with this key in bucket b (*result is NULL if none). */
static struct item **find(struct bucket *b, const void *key, size_t keylen, uint32_t hash)
{
    struct item **pp = &b->head;
    for (; *pp; pp = &(*pp)->hnext) {
        struct item *it = *pp;
        if (it->hash == hash && it->keylen == keylen && memcmp(item_key(it), key, keylen) == 0)
            break;
    }
    return pp;
}

static void list_remove(struct slab_class *c, struct item *it)
{
    *(it->prev ? &it->prev->next : &c->oldest) = it->next;
    *(it->next ? &it->next->prev : &c->newest) = it->prev;
    c->count--;
}

static void list_append(struct slab_class *c, struct item *it)
{
    it->next = NULL;
    it->prev = c->newest;
    *(c->newest ? &c->newest->next : &c->oldest) = it;
    c->newest = it;
    c->count++;
}

/* Return the chunk of an item this thread has unlinked (see "Who owns what"). */
static void release_item(kvs_store_t *s, struct item *it)
{
    struct slab_class *c = &s->classes[it->cls];
    pthread_mutex_lock(&c->lock);
    list_remove(c, it);
    it->hnext = c->free;
    c->free = it;
    pthread_mutex_unlock(&c->lock);
}

static bool take_page(kvs_store_t *s, struct slab_class *c)
{
    size_t used = __atomic_load_n(&s->pages_used, __ATOMIC_RELAXED);
    do {
        if (used == s->npages)
            return false;
    } while (!__atomic_compare_exchange_n(&s->pages_used, &used, used + 1, true,
                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    c->carve = s->arena + used * s->page_size;
    c->carve_end = c->carve + s->page_size / c->size * c->size;
    return true;
}

/* CLOCK over class c (its lock held): unlink and return an expired or unread item. */
static struct item *evict(kvs_store_t *s, struct slab_class *c)
{
    uint32_t now = __atomic_load_n(&s->now, __ATOMIC_RELAXED);
    uint64_t oldest = __atomic_load_n(&s->oldest, __ATOMIC_RELAXED);
    /* Two rounds: the first may only clear accessed bits. */
    for (size_t tries = 2 * c->count + 1; tries > 0 && c->oldest; tries--) {
        struct item *it = c->oldest;
        struct bucket *b = &s->buckets[it->hash & s->mask];
        if (bucket_trylock(b)) {
            if (it->linked) {
                bool expired = is_expired(it, now, oldest);
                if (expired || !it->accessed) {
                    struct item **pp = &b->head;
                    while (*pp != it)
                        pp = &(*pp)->hnext;
                    *pp = it->hnext;
                    it->linked = 0;
                    SUB(s, items, 1);
                    bucket_unlock(b);
                    list_remove(c, it);
                    if (expired)
                        ADD(s, expired, 1);
                    else
                        ADD(s, evictions, 1);
                    return it;
                }
                it->accessed = 0;
            }
            bucket_unlock(b);
        }
        /* Second chance, busy bucket, or not linked yet / being freed: look again later. */
        list_remove(c, it);
        list_append(c, it);
    }
    return NULL;
}

/* A chunk of class `cls`, on the class list but not linked (NULL if none can be found). */
static struct item *alloc_item(kvs_store_t *s, unsigned cls, uint32_t hash)
{
    struct slab_class *c = &s->classes[cls];
    pthread_mutex_lock(&c->lock);
    struct item *it = c->free;
    if (it) {
        c->free = it->hnext;
    } else if (c->carve != c->carve_end || take_page(s, c)) {
        it = (struct item *)(void *)c->carve;
        c->carve += c->size;
    } else {
        it = evict(s, c);
    }
    if (it) {
        it->hash = hash;
        it->cls = (uint8_t)cls;
        it->linked = 0;
        it->accessed = 0;
        list_append(c, it);
    }
    pthread_mutex_unlock(&c->lock);
    return it;
}

kvs_store_t *kvs_store_new(size_t memory_bytes, uint32_t buckets)
{
    if (buckets == 0 || buckets > (UINT32_C(1) << 31) || memory_bytes < MIN_PAGE_SIZE)
        return NULL;
    size_t page = MAX_PAGE_SIZE;
    while (page > MIN_PAGE_SIZE && page > memory_bytes / MIN_PAGES)
        page /= 2;
    uint32_t nbuckets = 1;
    while (nbuckets < buckets)
        nbuckets *= 2;

    kvs_store_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->page_size = page;
    s->npages = memory_bytes / page;
    s->mask = nbuckets - 1;
    s->arena = malloc(s->npages * page);
    s->buckets = calloc(nbuckets, sizeof *s->buckets);
    if (!s->arena || !s->buckets) {
        free(s->arena);
        free(s->buckets);
        free(s);
        return NULL;
    }
    size_t size = MIN_CHUNK;
    for (;;) {
        struct slab_class *c = &s->classes[s->nclasses++];
        pthread_mutex_init(&c->lock, NULL);
        /* The last class is a whole page: the largest item. */
        c->size = size * 5 / 4 > page ? page : size;
        if (c->size == page)
            break;
        size = (size * 5 / 4 + 7) & ~(size_t)7;
    }
    return s;
}

/* The stores kvs_store_make_once made (linked by made_next), freed when the process exits. */
static pthread_mutex_t made_lock = PTHREAD_MUTEX_INITIALIZER;
static kvs_store_t *made_stores;
static bool exit_hook;              /* free_made_stores is registered with atexit */

static void free_made_stores(void)
{
    for (kvs_store_t *s = made_stores, *next; s != NULL; s = next) {
        next = s->made_next;
        kvs_store_free(s);
    }
    made_stores = NULL;
}

static void free_at_exit(kvs_store_t *s)
{
    pthread_mutex_lock(&made_lock);
    if (!exit_hook)
        exit_hook = atexit(free_made_stores) == 0;
    s->made_next = made_stores;
    made_stores = s;
    pthread_mutex_unlock(&made_lock);
}

kvs_store_t *kvs_store_make_once(kvs_store_t **slot, size_t memory_bytes, uint32_t buckets)
{
    kvs_store_t *s = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (s != NULL)
        return s;
    kvs_store_t *made = kvs_store_new(memory_bytes, buckets);
    if (made == NULL)
        return NULL;
    if (__atomic_compare_exchange_n(slot, &s, made, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        free_at_exit(made);
        return made;
    }
    kvs_store_free(made);           /* another thread made it first: s is theirs */
    return s;
}

void kvs_store_free(kvs_store_t *s)
{
    if (!s)
        return;
    for (unsigned i = 0; i < s->nclasses; i++)
        pthread_mutex_destroy(&s->classes[i].lock);
    free(s->arena);
    free(s->buckets);
    free(s);
}

long kvs_store_get(kvs_store_t *s, const void *key, size_t keylen, uint32_t hash, uint32_t now,
                   uint64_t oldest, void *out, size_t cap)
{
    ADD(s, gets, 1);
    if (keylen == 0 || keylen > MAX_KEY)
        return -1;
    note_now(s, now, oldest);
    struct bucket *b = &s->buckets[hash & s->mask];
    bucket_lock(b);
    struct item **pp = find(b, key, keylen, hash);
    struct item *it = *pp;
    if (!it) {
        bucket_unlock(b);
        return -1;
    }
    if (is_expired(it, now, oldest)) {
        *pp = it->hnext;
        it->linked = 0;
        SUB(s, items, 1);
        bucket_unlock(b);
        release_item(s, it);
        ADD(s, expired, 1);
        return -1;
    }
    if (!it->accessed)  /* don't dirty the line on every hit */
        it->accessed = 1;
    size_t len = it->reclen;
    if (len > 0 && len <= cap)
        memcpy(out, item_key(it) + it->keylen, len);
    bucket_unlock(b);
    ADD(s, hits, 1);
    return (long)len;
}

/* A new unlinked item holding `key` and `rec` (NULL when no chunk can be found). */
static struct item *make_item(kvs_store_t *s, const void *key, size_t keylen, uint32_t hash,
                              uint32_t exptime, uint64_t cas, const void *rec, size_t reclen)
{
    struct item *it = NULL;
    if (reclen <= s->page_size) {
        size_t need = sizeof(struct item) + keylen + reclen;
        unsigned cls = 0;
        while (cls < s->nclasses && s->classes[cls].size < need)
            cls++;
        if (cls < s->nclasses)
            it = alloc_item(s, cls, hash);
    }
    if (it) {
        it->exptime = exptime;
        it->cas = cas;
        it->reclen = (uint32_t)reclen;
        it->keylen = (uint8_t)keylen;
        memcpy(item_key(it), key, keylen);
        if (reclen > 0)
            memcpy(item_key(it) + keylen, rec, reclen);
    }
    return it;
}

/* Put `it` (NULL: nothing) in place of the item *pp points at (NULL: none), in bucket b whose
 * lock is held; returns the item taken out, for release_item once the lock is dropped. */
static struct item *replace_item(kvs_store_t *s, struct bucket *b, struct item **pp,
                                 struct item *it)
{
    struct item *old = *pp;
    if (old) {
        *pp = old->hnext;
        old->linked = 0;
    }
    if (it) {
        it->hnext = b->head;
        b->head = it;
        it->linked = 1;
    }
    if (it && !old)
        ADD(s, items, 1);
    else if (!it && old)
        SUB(s, items, 1);
    return old;
}

int kvs_store_set(kvs_store_t *s, const void *key, size_t keylen, uint32_t hash, uint32_t exptime,
                  uint64_t cas, const void *rec, size_t reclen)
{
    ADD(s, sets, 1);
    if (keylen == 0 || keylen > MAX_KEY) {
        ADD(s, set_failures, 1);
        return -1;
    }
    struct item *it = make_item(s, key, keylen, hash, exptime, cas, rec, reclen);
    struct bucket *b = &s->buckets[hash & s->mask];
    bucket_lock(b);
    struct item *old = replace_item(s, b, find(b, key, keylen, hash), it);
    bucket_unlock(b);
    if (old)
        release_item(s, old);
    if (!it) {
        ADD(s, set_failures, 1);
        return -1;
    }
    return 0;
}

long kvs_store_update(kvs_store_t *s, const void *key, size_t keylen, uint32_t hash, uint32_t now,
                      uint64_t oldest, kvs_store_update_fn fn, void *ctx, void *old, void *out,
                      size_t cap)
{
    if (keylen == 0 || keylen > MAX_KEY)
        return fn(ctx, NULL, 0, out, &(uint32_t){0}, &(uint64_t){0});
    note_now(s, now, oldest);
    struct bucket *b = &s->buckets[hash & s->mask];
    for (;;) {
        /* What the key holds now, copied out; then the new record, made unlocked; then, if
         * the key still holds the same item (the same CAS: a write in between changed it),
         * the swap. Else again. */
        bucket_lock(b);
        struct item **pp = find(b, key, keylen, hash);
        struct item *seen = *pp, *dead = NULL;
        if (seen && is_expired(seen, now, oldest)) {
            dead = replace_item(s, b, pp, NULL);
            seen = NULL;
        }
        uint64_t seen_cas = seen ? seen->cas : 0;
        size_t oldlen = seen ? seen->reclen : 0;
        bool fits = oldlen <= cap;
        if (seen && fits)
            memcpy(old, item_key(seen) + seen->keylen, oldlen);
        bucket_unlock(b);
        if (dead) {
            release_item(s, dead);
            ADD(s, expired, 1);
        }
        uint32_t exptime = 0;
        uint64_t cas = 0;
        long n = fn(ctx, seen && fits ? old : NULL, oldlen, out, &exptime, &cas);
        if (n == KVS_STORE_KEEP)
            return n;
        struct item *it = NULL;
        if (n >= 0) {
            ADD(s, sets, 1);
            it = make_item(s, key, keylen, hash, exptime, cas, out, (size_t)n);
            if (!it) {
                ADD(s, set_failures, 1);
                return KVS_STORE_FAILED;
            }
        } else {
            ADD(s, deletes, 1);
        }
        bucket_lock(b);
        pp = find(b, key, keylen, hash);
        struct item *now_there = *pp;
        bool same = now_there == seen && (!seen || seen->cas == seen_cas);
        struct item *gone = same ? replace_item(s, b, pp, it) : NULL;
        bucket_unlock(b);
        if (gone)
            release_item(s, gone);
        if (same)
            return n;
        if (it)
            release_item(s, it);
    }
}

int kvs_store_delete(kvs_store_t *s, const void *key, size_t keylen, uint32_t hash, uint32_t now,
                     uint64_t oldest)
{
    return kvs_store_take(s, key, keylen, hash, now, oldest, NULL, 0) >= 0;
}

long kvs_store_take(kvs_store_t *s, const void *key, size_t keylen, uint32_t hash, uint32_t now,
                    uint64_t oldest, void *out, size_t cap)
{
    ADD(s, deletes, 1);
    if (keylen == 0 || keylen > MAX_KEY)
        return -1;
    note_now(s, now, oldest);
    struct bucket *b = &s->buckets[hash & s->mask];
    bucket_lock(b);
    struct item **pp = find(b, key, keylen, hash);
    struct item *it = *pp;
    if (it) {
        *pp = it->hnext;
        it->linked = 0;
        SUB(s, items, 1);
    }
    bucket_unlock(b);
    if (!it)
        return -1;
    /* Unlinked, the item is this thread's alone (see "Who owns what"): read it unlocked. */
    bool expired = is_expired(it, now, oldest);
    size_t len = it->reclen;
    if (!expired && len > 0 && len <= cap)
        memcpy(out, item_key(it) + it->keylen, len);
    release_item(s, it);
    if (expired) {
        ADD(s, expired, 1);
        return -1;
    }
    return (long)len;
}

void kvs_store_stats(kvs_store_t *s, kvs_store_stats_t *out)
{
    out->items = __atomic_load_n(&s->items, __ATOMIC_RELAXED);
    out->bytes = (uint64_t)__atomic_load_n(&s->pages_used, __ATOMIC_RELAXED) * s->page_size;
    out->gets = __atomic_load_n(&s->gets, __ATOMIC_RELAXED);
    out->hits = __atomic_load_n(&s->hits, __ATOMIC_RELAXED);
    out->sets = __atomic_load_n(&s->sets, __ATOMIC_RELAXED);
    out->deletes = __atomic_load_n(&s->deletes, __ATOMIC_RELAXED);
    out->evictions = __atomic_load_n(&s->evictions, __ATOMIC_RELAXED);
    out->expired = __atomic_load_n(&s->expired, __ATOMIC_RELAXED);
    out->set_failures = __atomic_load_n(&s->set_failures, __ATOMIC_RELAXED);
    out->limit = (uint64_t)s->npages * s->page_size;
}
