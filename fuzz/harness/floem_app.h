/* Included once by a harness of an app of fuzz/apps/ (after the app's generated header):
 * libFuzzer calls LLVMFuzzerInitialize before the first input, which sets the app up
 * (floem_init: its states laid out, zeroed). */
#ifndef FUZZ_FLOEM_APP_H
#define FUZZ_FLOEM_APP_H

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    floem_init();
    return 0;
}

#endif
