/* Command-line number parsing shared by obl-server and obl-load. */
#ifndef OBL_SERVE_ARGS_H
#define OBL_SERVE_ARGS_H

#include <stdint.h>

#include "harness.h"

/* Integers: bench_parse_u64 ("1024" or "2^10", harness.h). */

/* A finite number >= 0 ("1.5", "2e5") -> *out; 0 on a malformed one. */
int serve_parse_double(const char *s, double *out);

#endif
