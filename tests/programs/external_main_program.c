/* A plain C program with its own main, calling the segments of external_main.py. */
#include <stdio.h>
#include <unistd.h>

#include "external_main.h"

int main(void)
{
    floem_init();
    floem_run_threads();
    printf("program: inc2(40) = %d\n", inc2(40));
    for (int got = 0; got < 5; ) {
        int square = next_square(0);
        if (square < 0) {
            usleep(100);
            continue;
        }
        printf("square %d\n", square);
        got++;
    }
    floem_kill_threads();
    floem_finalize();
    return 0;
}
