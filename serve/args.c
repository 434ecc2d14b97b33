/* Number parsing for the command lines of obl-server and obl-load (the
 * integers: bench_parse_u64 of bench/harness.h), and CPU pinning. */
#define _GNU_SOURCE
#include "args.h"

#include <sched.h>
#include <string.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int serve_parse_double(const char *s, double *out)
{
    char *end;
    if (!s || !*s)
        return 0;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < 0)
        return 0;
    *out = v;
    return 1;
}

int serve_parse_cpu(const char *s, int *cpu)
{
    uint64_t v;
    if (s && !strcmp(s, "none")) {
        *cpu = -1;
        return 1;
    }
    if (!s || !bench_parse_u64(s, &v) || v >= CPU_SETSIZE)
        return 0;
    *cpu = (int)v;
    return 1;
}

int serve_pin(pthread_t t, int cpu)
{
    if (cpu < 0)
        return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(t, sizeof(set), &set);
}
