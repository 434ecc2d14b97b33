/* Command-line parsing shared by obl-server and obl-load, and the CPU
 * placement their --cpu flags ask for. */
#ifndef OBL_SERVE_ARGS_H
#define OBL_SERVE_ARGS_H

#include <pthread.h>
#include <stdint.h>

#include "harness.h"

/* Integers: bench_parse_u64 ("1024" or "2^10", harness.h). */

/* A finite number >= 0 ("1.5", "2e5") -> *out; 0 on a malformed one. */
int serve_parse_double(const char *s, double *out);

/* A CPU number below CPU_SETSIZE, or "none" (-1) -> *cpu; 0 on a bad one. */
int serve_parse_cpu(const char *s, int *cpu);

/* Pins thread t to `cpu` (nothing for -1); 0 on success, else an errno
 * (a CPU this process may not use). */
int serve_pin(pthread_t t, int cpu);

#endif
