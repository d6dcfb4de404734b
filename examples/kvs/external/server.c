/* The external design's store (Floem paper, Figure 1d): a plain C program with its own main
 * and threads. It keeps the hash table and the items (../store.c) and talks to the Floem
 * program through two functions floem generates into kvs.h:
 *
 *   struct kvs_task *obtain_pkt(int qid)   the next request of queue instance qid, or NULL
 *   void get_send(struct kvs_task *t)      the answer to a GET or GETK, back to the NIC
 *   void set_send(struct kvs_task *t)      the answer to a SET, back to the NIC
 *   void delete_send(struct kvs_task *t)   the answer to a DELETE (or a SET too large)
 *   void update_send(struct kvs_task *t)   the answer to any other request (an update)
 *
 * (the NIC writes the reply), plus floem_init / floem_run_threads / floem_kill_threads /
 * floem_finalize around them.
 * One worker thread serves each queue instance (the NIC steers a key to one instance).
 * It runs until SIGINT or SIGTERM.
 *
 * Built by `floem run/build -D design=external` (kvs.py names it with external_main), or
 * by hand against the generated library: see Makefile.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvs.h"
#include "update.h"

#ifndef KVS_WORKERS
#define KVS_WORKERS 1               /* kvs.py's queue instances: one worker each */
#endif
#ifndef KVS_MEMORY
#define KVS_MEMORY (64u << 20)
#endif
#ifndef KVS_BUCKETS
#define KVS_BUCKETS (1u << 17)
#endif
#ifndef KVS_VALUE_MAX
#define KVS_VALUE_MAX KVS_VALUE_LIMIT   /* must be kvs.py's value_max */
#endif

static kvs_store_t *store;
static int stopping;
static uint64_t served[KVS_WORKERS];

/* The kind of a request (task.h): what answers it. */
enum kind { GET, SET, DELETE, UPDATE };

static enum kind kind_of(const struct kvs_task *t)
{
    if (t->opcode == KVS_OP_GET)
        return GET;
    if (t->opcode == KVS_OP_SET && t->status == FLOEM_MC_VALUE_TOO_LARGE)
        return DELETE;
    if ((t->opcode == KVS_OP_SET || t->opcode == KVS_OP_DELETE) && t->arg == 0)
        return t->opcode == KVS_OP_SET ? SET : DELETE;
    return UPDATE;
}

/* Answer one request in place (see task.h). */
static void serve(struct kvs_task *t, enum kind kind)
{
    uint32_t now = kvs_now();
    if (kind == GET) {
        long n = kvs_store_get(store, t->key, t->keylen, t->hash, now, t->oldest, t->record,
                               sizeof t->record);
        t->reclen = n < 0 || (size_t)n > sizeof t->record ? 0 : (uint32_t)n;
    } else if (kind == SET) {
        int failed = kvs_store_set(store, t->key, t->keylen, t->hash, kvs_record_expiry(t->record),
                                   t->cas, t->record, t->reclen);
        t->status = failed ? FLOEM_MC_OUT_OF_MEMORY : FLOEM_MC_OK;
    } else if (kind == DELETE) {    /* a DELETE, or a SET too large: the old value goes */
        int found = kvs_store_delete(store, t->key, t->keylen, t->hash, now, t->oldest);
        if (t->opcode == KVS_OP_DELETE)
            t->status = found ? FLOEM_MC_OK : FLOEM_MC_KEY_NOT_FOUND;
    } else {
        static _Thread_local uint8_t result[KVS_RECORD_MAX];
        t->reclen = kvs_store_apply(store, t->key, t->keylen, t->hash, now, t->oldest, t->opcode,
                                    t->record, t->reclen, t->arg, t->cas, KVS_VALUE_MAX, result,
                                    &t->status);
        memcpy(t->record, result, t->reclen);
    }
}

static void *worker(void *arg)
{
    int qid = (int)(intptr_t)arg;
    unsigned idle = 0;
    while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
        struct kvs_task *t = obtain_pkt(qid);
        if (t == NULL) {
            if (++idle % 64 == 0)
                sched_yield();
            continue;
        }
        idle = 0;
        enum kind kind = kind_of(t);
        serve(t, kind);
        if (kind == GET)
            get_send(t);
        else if (kind == SET)
            set_send(t);
        else if (kind == DELETE)
            delete_send(t);
        else
            update_send(t);
        served[qid]++;
    }
    return NULL;
}

int main(void)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);          /* every thread inherits it */

    store = kvs_store_new(KVS_MEMORY, KVS_BUCKETS);
    if (store == NULL) {
        fprintf(stderr, "kvs-server: cannot reserve %u bytes for the store\n", (unsigned)KVS_MEMORY);
        return 1;
    }
    floem_init();
    floem_run_threads();
    pthread_t workers[KVS_WORKERS];
    for (int i = 0; i < KVS_WORKERS; i++)
        if (pthread_create(&workers[i], NULL, worker, (void *)(intptr_t)i) != 0) {
            fprintf(stderr, "kvs-server: cannot start worker %d\n", i);
            return 1;
        }
    int sig;
    sigwait(&stop, &sig);
    __atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
    uint64_t total = 0;
    for (int i = 0; i < KVS_WORKERS; i++) {
        pthread_join(workers[i], NULL);
        total += served[i];
    }
    floem_kill_threads();
    floem_finalize();
    kvs_store_free(store);
    fprintf(stderr, "kvs-server: served %llu requests with %d worker(s)\n",
            (unsigned long long)total, KVS_WORKERS);
    return 0;
}
