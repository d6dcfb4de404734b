/* The Floem cache construct's storage: buckets of LRU entries, versions, counters. */
#include "floem/cache.h"
#include "floem/runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    struct entry *next;
    uint64_t used;          /* the cache clock at the last access: the LRU order */
    bool dirty;
    uint32_t keylen, vallen, cap;
    uint8_t *bytes;         /* key, then value; `cap` bytes */
};

struct bucket {
    int lock;
    uint32_t version;
    uint32_t count;
    struct entry *head;
};

/* A write-back handed over by a thread that must not run it (floem_cache_defer). */
struct deferred {
    struct deferred *next;
    floem_cache_evicted_t evicted;
};

struct floem_cache {
    uint32_t nbuckets, entries;
    uint64_t clock;
    uint64_t hits, misses, evictions, writebacks;
    int deferred_lock;              /* guards the list below */
    struct deferred *deferred_head, **deferred_tail;
    uint64_t pending;               /* deferred, or taken by a drain that has not ended */
    pthread_mutex_t drain;
    struct bucket buckets[];
};

static void *allocate(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "floem: cache: out of memory (%zu bytes)\n", bytes);
        abort();
    }
    return p;
}

floem_cache_t *floem_cache_new(uint32_t buckets, uint32_t entries)
{
    floem_cache_t *c = allocate(sizeof *c + (size_t)(buckets ? buckets : 1) * sizeof(struct bucket));
    c->nbuckets = buckets ? buckets : 1;
    c->entries = entries;
    c->deferred_tail = &c->deferred_head;
    pthread_mutex_init(&c->drain, NULL);
    return c;
}

void floem_cache_free(floem_cache_t *c)
{
    for (struct deferred *d = c->deferred_head, *next; d != NULL; d = next) {
        next = d->next;
        floem_cache_evicted_free(&d->evicted);
        free(d);
    }
    pthread_mutex_destroy(&c->drain);
    for (uint32_t i = 0; i < c->nbuckets; i++)
        for (struct entry *e = c->buckets[i].head, *next; e != NULL; e = next) {
            next = e->next;
            free(e->bytes);
            free(e);
        }
    free(c);
}

/* Values handed out by reference are copied, under the bucket lock, into a buffer of the
 * calling thread: another thread's set or eviction cannot change or free them. */
struct scratch {
    uint32_t cap;
    uint8_t bytes[];
};

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void make_scratch_key(void)
{
    if (pthread_key_create(&scratch_key, free) != 0) {
        fprintf(stderr, "floem: cache: cannot create a thread key\n");
        abort();
    }
}

/* A copy of `len` bytes at `from` in the calling thread's buffer (valid until its next copy). */
static const void *thread_copy(const void *from, uint32_t len)
{
    pthread_once(&scratch_once, make_scratch_key);
    struct scratch *s = pthread_getspecific(scratch_key);
    if (s == NULL || s->cap < len) {
        free(s);
        s = allocate(sizeof *s + len);
        s->cap = len;
        pthread_setspecific(scratch_key, s);
    }
    memcpy(s->bytes, from, len);
    return s->bytes;
}

static struct bucket *lock_bucket(floem_cache_t *c, const void *key, uint32_t keylen)
{
    struct bucket *b = &c->buckets[floem_cache_hash(key, keylen) % c->nbuckets];
    floem_spin_lock(&b->lock);
    return b;
}

static void unlock_bucket(struct bucket *b)
{
    floem_spin_unlock(&b->lock);
}

/* The link pointing at the entry of `key` in bucket `b` (pointing at NULL when absent). */
static struct entry **find_link(struct bucket *b, const void *key, uint32_t keylen)
{
    struct entry **p = &b->head;
    while (*p != NULL && !((*p)->keylen == keylen && memcmp((*p)->bytes, key, keylen) == 0))
        p = &(*p)->next;
    return p;
}

static struct entry *find(struct bucket *b, const void *key, uint32_t keylen)
{
    return *find_link(b, key, keylen);
}

static void count(uint64_t *counter)
{
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

static void touch(floem_cache_t *c, struct entry *e)
{
    e->used = __atomic_add_fetch(&c->clock, 1, __ATOMIC_RELAXED);
}

static void store_value(struct entry *e, const void *val, uint32_t vallen)
{
    if (e->keylen + vallen > e->cap) {
        uint8_t *bytes = allocate(e->keylen + vallen);
        memcpy(bytes, e->bytes, e->keylen);
        free(e->bytes);
        e->bytes = bytes;
        e->cap = e->keylen + vallen;
    }
    memcpy(e->bytes + e->keylen, val, vallen);
    e->vallen = vallen;
}

/* Unlink the least recently used entry of a full bucket; hand it over if dirty. */
static void make_room(floem_cache_t *c, struct bucket *b, floem_cache_evicted_t *evicted)
{
    if (c->entries == 0 || b->count < c->entries)
        return;
    struct entry **victim = &b->head;
    for (struct entry **p = &b->head; *p != NULL; p = &(*p)->next)
        if ((*p)->used < (*victim)->used)
            victim = p;
    struct entry *e = *victim;
    *victim = e->next;
    b->count--;
    b->version++;
    count(&c->evictions);
    if (e->dirty && evicted != NULL) {
        count(&c->writebacks);
        evicted->present = true;
        evicted->keylen = e->keylen;
        evicted->vallen = e->vallen;
        evicted->key = allocate(e->keylen);
        evicted->val = allocate(e->vallen);
        memcpy(evicted->key, e->bytes, e->keylen);
        memcpy(evicted->val, e->bytes + e->keylen, e->vallen);
    }
    free(e->bytes);
    free(e);
}

static struct entry *insert(floem_cache_t *c, struct bucket *b, const void *key, uint32_t keylen,
                            floem_cache_evicted_t *evicted)
{
    make_room(c, b, evicted);
    struct entry *e = allocate(sizeof *e);
    e->keylen = keylen;
    e->cap = keylen;
    e->bytes = allocate(keylen);
    memcpy(e->bytes, key, keylen);
    e->next = b->head;
    b->head = e;
    b->count++;
    return e;
}

bool floem_cache_get(floem_cache_t *c, const void *key, uint32_t keylen, void *val, uint32_t cap,
                     const void **val_ref, uint32_t *vallen, uint32_t *version)
{
    struct bucket *b = lock_bucket(c, key, keylen);
    struct entry *e = find(b, key, keylen);
    *version = b->version;
    if (e != NULL) {
        touch(c, e);
        *vallen = e->vallen;
        if (val_ref != NULL)
            *val_ref = thread_copy(e->bytes + e->keylen, e->vallen);
        else
            memcpy(val, e->bytes + e->keylen, e->vallen < cap ? e->vallen : cap);
    }
    unlock_bucket(b);
    count(e != NULL ? &c->hits : &c->misses);
    return e != NULL;
}

bool floem_cache_fill(floem_cache_t *c, const void *key, uint32_t keylen, const void *val,
                      uint32_t vallen, uint32_t version, const void **cur_ref, uint32_t *cur_len,
                      floem_cache_evicted_t *evicted)
{
    struct bucket *b = lock_bucket(c, key, keylen);
    struct entry *e = find(b, key, keylen);
    bool newer = false;
    if (e != NULL) {
        touch(c, e);
        newer = true;
        *cur_ref = thread_copy(e->bytes + e->keylen, e->vallen);
        *cur_len = e->vallen;
    } else if (b->version == version) {
        e = insert(c, b, key, keylen, evicted);
        store_value(e, val, vallen);
        touch(c, e);
    }
    unlock_bucket(b);
    return newer;
}

bool floem_cache_set(floem_cache_t *c, const void *key, uint32_t keylen, const void *val,
                     uint32_t vallen, bool dirty, bool only_if_present,
                     floem_cache_evicted_t *evicted)
{
    struct bucket *b = lock_bucket(c, key, keylen);
    struct entry *e = find(b, key, keylen);
    b->version++;
    if (e == NULL && !only_if_present)
        e = insert(c, b, key, keylen, evicted);
    if (e != NULL) {
        store_value(e, val, vallen);
        e->dirty = dirty;
        touch(c, e);
    }
    unlock_bucket(b);
    return e != NULL;
}

/* Unlink the newest deferred write-back of `key` (and free the older ones): the latest value
 * of a key the cache no longer holds but the store has not got yet. */
static struct deferred *take_deferred_key(floem_cache_t *c, const void *key, uint32_t keylen)
{
    struct deferred *newest = NULL, **p = &c->deferred_head;
    floem_spin_lock(&c->deferred_lock);
    while (*p != NULL) {
        struct deferred *d = *p;
        if (d->evicted.keylen == keylen && memcmp(d->evicted.key, key, keylen) == 0) {
            *p = d->next;
            if (newest != NULL) {
                floem_cache_evicted_free(&newest->evicted);
                free(newest);
            }
            newest = d;
            __atomic_fetch_sub(&c->pending, 1, __ATOMIC_RELAXED);
        } else {
            p = &d->next;
        }
    }
    c->deferred_tail = p;                   /* the last link: what is left ends there */
    floem_spin_unlock(&c->deferred_lock);
    return newest;
}

bool floem_cache_forget(floem_cache_t *c, const void *key, uint32_t keylen, const void **val_ref,
                       uint32_t *vallen, bool *dirty)
{
    pthread_mutex_lock(&c->drain);      /* no write-back of the key is half-way sent */
    struct bucket *b = lock_bucket(c, key, keylen);
    b->version++;
    struct entry **p = find_link(b, key, keylen);
    struct entry *e = *p;
    if (e != NULL) {
        *p = e->next;
        b->count--;
        *val_ref = thread_copy(e->bytes + e->keylen, e->vallen);
        *vallen = e->vallen;
        *dirty = e->dirty;
    }
    unlock_bucket(b);
    struct deferred *d = take_deferred_key(c, key, keylen);
    if (e == NULL && d != NULL) {
        *val_ref = thread_copy(d->evicted.val, d->evicted.vallen);
        *vallen = d->evicted.vallen;
        *dirty = true;
    }
    pthread_mutex_unlock(&c->drain);
    bool held = e != NULL || d != NULL;
    if (d != NULL) {
        floem_cache_evicted_free(&d->evicted);
        free(d);
    }
    if (e != NULL) {
        free(e->bytes);
        free(e);
    }
    return held;
}

void floem_cache_defer(floem_cache_t *c, floem_cache_evicted_t *evicted)
{
    if (!evicted->present)
        return;
    struct deferred *d = allocate(sizeof *d);
    d->evicted = *evicted;
    memset(evicted, 0, sizeof *evicted);
    floem_spin_lock(&c->deferred_lock);
    *c->deferred_tail = d;
    c->deferred_tail = &d->next;
    __atomic_fetch_add(&c->pending, 1, __ATOMIC_RELAXED);
    floem_spin_unlock(&c->deferred_lock);
}

bool floem_cache_has_deferred(const floem_cache_t *c)
{
    return __atomic_load_n(&c->pending, __ATOMIC_ACQUIRE) != 0;
}

void floem_cache_drain_begin(floem_cache_t *c)
{
    pthread_mutex_lock(&c->drain);
}

bool floem_cache_take_deferred(floem_cache_t *c, floem_cache_evicted_t *out)
{
    floem_spin_lock(&c->deferred_lock);
    struct deferred *d = c->deferred_head;
    if (d != NULL) {
        c->deferred_head = d->next;
        if (c->deferred_head == NULL)
            c->deferred_tail = &c->deferred_head;
    }
    floem_spin_unlock(&c->deferred_lock);
    if (d == NULL)
        return false;
    *out = d->evicted;
    free(d);
    return true;
}

void floem_cache_drain_end(floem_cache_t *c, uint64_t taken)
{
    __atomic_fetch_sub(&c->pending, taken, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&c->drain);
}

void floem_cache_evicted_free(floem_cache_evicted_t *e)
{
    free(e->key);
    free(e->val);
    memset(e, 0, sizeof *e);
}

void floem_cache_stats(const floem_cache_t *c, floem_cache_stats_t *out)
{
    out->hits = __atomic_load_n(&c->hits, __ATOMIC_RELAXED);
    out->misses = __atomic_load_n(&c->misses, __ATOMIC_RELAXED);
    out->evictions = __atomic_load_n(&c->evictions, __ATOMIC_RELAXED);
    out->writebacks = __atomic_load_n(&c->writebacks, __ATOMIC_RELAXED);
}

void floem_cache_report(FILE *out, const char *name, const floem_cache_t *c)
{
    floem_cache_stats_t s;
    floem_cache_stats(c, &s);
    fprintf(out, "floem: cache %s: hits %llu, misses %llu, evictions %llu, write-backs %llu\n",
            name, (unsigned long long)s.hits, (unsigned long long)s.misses,
            (unsigned long long)s.evictions, (unsigned long long)s.writebacks);
}
