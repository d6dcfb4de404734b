/* Shared memory between the processes of a program. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { SHARED_EMPTY = 0, SHARED_INITIALISING = 1, SHARED_READY = 2 };
/* Header byte counting the processes that have mapped the object (one byte: the NIC, in
 * either byte order, reads and adds to it like the host). */
enum { SHARED_USERS_OFFSET = 4 };

_Thread_local int floem_idle;
_Thread_local int floem_thread_manages;
static void fail(const char *what, const char *name)
{
    fprintf(stderr, "floem: shared memory %s: %s: %s\n", name ? name : "(anonymous)", what,
            strerror(errno));
    abort();
}

/* With FLOEM_SHM_USERS=n (floem run sets it to the number of processes it starts), the
 * n-th process to map the object removes its name: the memory lives on while mapped and
 * goes with the last process, however the processes end. Counted once per process. */
static void count_user(void *base, const char *name)
{
    static bool counted;
    const char *users = getenv("FLOEM_SHM_USERS");
    if (users == NULL || counted)
        return;
    counted = true;
    char *end;
    long n = strtol(users, &end, 10);
    if (users[0] == '\0' || *end != '\0' || n < 1 || n > UCHAR_MAX) {
        fprintf(stderr, "floem: FLOEM_SHM_USERS=%s: not a number of processes from 1 to %d\n",
                users, UCHAR_MAX);
        abort();
    }
    unsigned char *count = (unsigned char *)base + SHARED_USERS_OFFSET;
    if (__atomic_add_fetch(count, 1, __ATOMIC_ACQ_REL) == n)
        (void)shm_unlink(name);     /* if it fails, the launcher removes the name at the end */
}

void *floem_shared_attach(size_t bytes, bool *creator)
{
    const char *name = getenv("FLOEM_SHM");
    void *base;
    if (name == NULL || name[0] == '\0') {
        base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED)
            fail("mmap", NULL);
        *creator = true;
        return base;
    }
    int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
    if (fd < 0)
        fail("shm_open", name);
    struct stat st;
    if (fstat(fd, &st) != 0)
        fail("fstat", name);
    if ((size_t)st.st_size < bytes && ftruncate(fd, (off_t)bytes) != 0)
        fail("ftruncate", name);
    base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        fail("mmap", name);
    close(fd);
    count_user(base, name);
    uint32_t *status = base;
    uint32_t expected = SHARED_EMPTY;
    *creator = __atomic_compare_exchange_n(status, &expected, SHARED_INITIALISING, false,
                                           __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    if (!*creator)
        while (__atomic_load_n(status, __ATOMIC_ACQUIRE) != SHARED_READY)
            sched_yield();
    return base;
}

void floem_shared_ready(void *base)
{
    __atomic_store_n((uint32_t *)base, SHARED_READY, __ATOMIC_RELEASE);
}

void floem_shared_detach(void *base, size_t bytes)
{
    munmap(base, bytes);
}

void *floem_shared_map_for_dma(size_t bytes)
{
    const char *name = getenv("FLOEM_SHM");
    if (name == NULL || name[0] == '\0') {
        fprintf(stderr, "floem: the NIC process needs the host's shared memory: run it with "
                        "floem run (FLOEM_SHM is not set)\n");
        abort();
    }
    int fd;
    struct stat st;
    while ((fd = shm_open(name, O_RDWR, 0600)) < 0 || fstat(fd, &st) != 0 ||
           (size_t)st.st_size < bytes) {
        if (fd >= 0)
            close(fd);
        if (errno != ENOENT && fd < 0)
            fail("shm_open", name);
        sched_yield();
    }
    void *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        fail("mmap", name);
    close(fd);
    count_user(base, name);
    /* The status word is written by the host in its (little-endian) byte order. */
    const unsigned char *status = base;
    while (__atomic_load_n(&status[0], __ATOMIC_ACQUIRE) != SHARED_READY)
        sched_yield();
    return base;
}
