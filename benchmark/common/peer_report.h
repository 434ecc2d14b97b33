/* Shared helpers of the peer drivers written for obl's suite (C and C++).
 * REPORT lines follow the public harness's envelope (docs/benchmark-format.md):
 *   REPORT_123<TYPE>|<IMPL>|<version>| Name := value | ... REPORT_123
 * printed on stdout, one per repetition; the suite takes medians. */
#ifndef PEER_REPORT_H
#define PEER_REPORT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t peer_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Resident memory of the process in KiB (VmRSS), as the harness reads it. */
static inline long peer_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

/* splitmix64: the drivers' address and key streams, drawn before timing. */
static inline uint64_t peer_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n): n is far below 2^64, so the modulo bias is negligible
 * next to the timing noise. */
static inline uint64_t peer_below(uint64_t *s, uint64_t n)
{
    return peer_rand(s) % n;
}

#endif
