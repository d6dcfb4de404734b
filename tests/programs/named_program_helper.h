/* Helper for named_program.py: a C function linked in with floem.depend. */
#ifndef NAMED_PROGRAM_HELPER_H
#define NAMED_PROGRAM_HELPER_H
int helper_scale(int x);
#endif
