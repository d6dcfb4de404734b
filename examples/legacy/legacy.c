/* legacy.c: a small line-oriented calculator that predates Floem.
 *
 * Reads one command per line from stdin and prints one result per line:
 *
 *     add A B     A + B                       -> add(A, B)
 *     inc2 X      X + 2                       -> inc2(X)
 *     sqrt X      the exact square root of X,
 *                 or "none"                   -> exact_sqrt(X), -1 by default_return
 *     sum X       running total of all X      -> accumulate(X)
 *
 * The arithmetic lives in callable segments of simple_math.py; this file only
 * parses and prints. A malformed line is reported on stderr and skipped, and
 * the exit status is then 1.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simple_math.h"

/* Parses a whole decimal int token; returns 0 on success. */
static int parse_int(const char *text, int *value)
{
    char *end;
    long long v;

    if (text == NULL)
        return -1;
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < INT_MIN || v > INT_MAX)
        return -1;
    *value = (int)v;
    return 0;
}

/* Runs one command line; returns 0 on success, -1 when the line is malformed. */
static int run_command(char *line)
{
    const char *seps = " \t\r\n";
    char *name = strtok(line, seps);
    char *first = strtok(NULL, seps);
    char *second = strtok(NULL, seps);
    char *extra = strtok(NULL, seps);
    int a, b;

    if (name == NULL)
        return 0;
    if (extra != NULL || parse_int(first, &a) != 0)
        return -1;
    if (strcmp(name, "add") == 0) {
        if (parse_int(second, &b) != 0)
            return -1;
        printf("add %d %d = %d\n", a, b, add(a, b));
        return 0;
    }
    if (second != NULL)
        return -1;
    if (strcmp(name, "inc2") == 0) {
        printf("inc2 %d = %d\n", a, inc2(a));
    } else if (strcmp(name, "sqrt") == 0) {
        int root = exact_sqrt(a);
        if (root < 0)
            printf("sqrt %d = none\n", a);
        else
            printf("sqrt %d = %d\n", a, root);
    } else if (strcmp(name, "sum") == 0) {
        printf("sum %d = %d\n", a, accumulate(a));
    } else {
        return -1;
    }
    return 0;
}

int main(void)
{
    char line[256];
    int lineno = 0;
    int status = 0;

    floem_init();
    floem_run_threads();

    while (fgets(line, sizeof line, stdin) != NULL) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(stdin)) {
            int c;
            while ((c = getchar()) != EOF && c != '\n')
                continue;
            fprintf(stderr, "legacy: line %d: too long\n", lineno);
            status = 1;
            continue;
        }
        if (run_command(line) != 0) {
            fprintf(stderr, "legacy: line %d: expected 'add A B', 'inc2 X', 'sqrt X' or 'sum X'\n",
                    lineno);
            status = 1;
        }
    }

    floem_kill_threads();
    floem_finalize();
    return status;
}
