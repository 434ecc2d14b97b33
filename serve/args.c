/* Number parsing for the command lines of obl-server and obl-load. */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

int serve_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return 0;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return 0;
    if (*end == '^' && v == 2 && isdigit((unsigned char)end[1])) {
        unsigned long long e = strtoull(end + 1, &end, 10);
        if (*end || e > 63)
            return 0;
        *out = (uint64_t)1 << e;
        return 1;
    }
    if (*end)
        return 0;
    *out = v;
    return 1;
}

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
