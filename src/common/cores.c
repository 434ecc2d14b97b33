/* SPDX-License-Identifier: MIT */
/* The core count of cores.h. */
#define _GNU_SOURCE
#include "common/cores.h"

#include <sched.h>
#include <unistd.h>

/* see common/cores.h */
unsigned obl_cores(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c >= 1)
            return (unsigned)c;
    }
#endif
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1 ? 1u : (unsigned)c;
}
