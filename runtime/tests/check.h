/* What the runtime's C tests share: a counted CHECK that aborts naming the failed
 * condition, and expect_abort for misuse that the runtime must refuse. */
#ifndef FLOEM_TESTS_CHECK_H
#define FLOEM_TESTS_CHECK_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long checks;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        __atomic_fetch_add(&checks, 1, __ATOMIC_RELAXED);                                \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);     \
            abort();                                                                     \
        }                                                                                \
    } while (0)

/* Run fn in a child process; it must die of SIGABRT with `message` in its stderr. */
static inline void expect_abort(void (*fn)(void), const char *message)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        fn();
        _exit(0);
    }
    close(fds[1]);
    char err[4096];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof err - 1 && (got = read(fds[0], err + n, sizeof err - 1 - n)) > 0)
        n += (size_t)got;
    err[n] = '\0';
    close(fds[0]);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(err, message) != NULL))
        fprintf(stderr, "child stderr: %s\n", err);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(strstr(err, message) != NULL);
}

#endif
