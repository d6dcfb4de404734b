/* Helper for named_program.py: SCALE comes from floem.cflags("-DSCALE=3"). */
#include "named_program_helper.h"

int helper_scale(int x)
{
    return x * SCALE;
}
