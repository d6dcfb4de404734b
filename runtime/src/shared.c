/* Shared memory between the processes of a program, and idle back-off. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floem/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { SHARED_EMPTY = 0, SHARED_INITIALISING = 1, SHARED_READY = 2 };

_Thread_local int floem_idle;
static _Thread_local unsigned idle_spins;

void floem_idle_wait(void)
{
    if (++idle_spins < 64) {
        floem_cpu_relax();
        return;
    }
    idle_spins = 0;
    sched_yield();
}

static void fail(const char *what, const char *name)
{
    fprintf(stderr, "floem: shared memory %s: %s: %s\n", name ? name : "(anonymous)", what,
            strerror(errno));
    abort();
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
    /* The status word is written by the host in its (little-endian) byte order. */
    const unsigned char *status = base;
    while (__atomic_load_n(&status[0], __ATOMIC_ACQUIRE) != SHARED_READY)
        sched_yield();
    return base;
}
