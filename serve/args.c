/* Number parsing for the command lines of obl-server and obl-load (the
 * integers: bench_parse_u64 of bench/harness.h). */
#include "args.h"

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
