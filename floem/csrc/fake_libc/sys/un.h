#include "_floem_fake.h"
