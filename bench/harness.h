/* SPDX-License-Identifier: MIT */
/*
 * The obl-bench harness: everything a benchmark type shares. It parses the
 * command line (docs/benchmark-format.md), runs the repetition loop, times,
 * summarises each metric over the R repetitions (median, min, max, q1, q3;
 * never best-of), prints the REPORT line, appends the JSONL record, detects
 * the environment and prints progress on stderr. A benchmark type supplies
 * only what differs: its parameters check, its untimed setup (workload
 * generation), one timed repetition, and its default plan. See
 * docs/bench.md, "Adding a benchmark type".
 *
 * A repetition measures a fresh structure: build it (timed as
 * Initialization_time_us), run the pre-generated operations (timed), record
 * each metric once with bench_record(), destroy it.
 */
#ifndef OBL_BENCH_HARNESS_H
#define OBL_BENCH_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>

#include <obl/obl.h>

#define BENCH_MAX_REPS 1000
#define BENCH_MAX_METRICS 24
#define BENCH_MAX_EXTRA 5

/* A type-specific integer flag, e.g. {"--shards", "P", 4, 1, 1024, "..."}:
 * parsed into bench_params.extra[i], reported as parameter `param`. */
typedef struct bench_extra_flag {
    const char *flag;
    const char *param;
    uint64_t def, min, max;
    const char *help;
} bench_extra_flag;

/* The parameters of one case. Public: everything here may be printed. */
typedef struct bench_params {
    uint64_t n;           /* N: entries */
    uint64_t key_bytes;   /* K: key (or address) bytes */
    uint64_t value_bytes; /* V */
    uint64_t queries;     /* Q: operations per timed phase */
    uint64_t reps;        /* R */
    uint64_t seed;        /* workload seed (the structures seed themselves) */
    uint64_t extra[BENCH_MAX_EXTRA];
} bench_params;

typedef struct bench_metric {
    const char *name; /* static string ending in its unit: _us, _qps, _kb ... */
    double samples[BENCH_MAX_REPS];
    int count;
} bench_metric;

struct bench_type;

/* One case in progress: the harness owns it, a type records into it. */
typedef struct bench_case {
    const struct bench_type *type;
    bench_params p;
    uint64_t rep; /* current repetition, 0-based */
    bench_metric metrics[BENCH_MAX_METRICS];
    int nmetrics;
} bench_case;

typedef struct bench_plan bench_plan; /* the list-cases writer (opaque) */

typedef struct bench_type {
    const char *name;        /* subcommand, e.g. "array" */
    const char *report_type; /* RORAM, NRORAM, UMAP, Sharded-UMAP, Ramp-UMAP */
    const char *impl;        /* "obl", "baseline_array", ... */
    const char *summary;     /* one line for list-types and --help */
    uint64_t default_key_bytes, default_value_bytes, default_queries, default_reps;
    const bench_extra_flag *extra; /* NULL or `nextra` flags */
    int nextra;
    /* Checks p beyond the generic limits; on an impossible size writes a
     * one-line message to msg and returns non-zero (exit status 2). */
    int (*check)(const bench_params *p, char *msg, size_t msglen);
    /* Untimed: allocates and generates the workload (query sequences...).
     * Returns the type's state, or NULL on failure (message on stderr). */
    void *(*setup)(const bench_case *c);
    /* One repetition: build, time, bench_record() every metric, destroy.
     * 0 on success; non-zero aborts the case (message on stderr). */
    int (*run)(bench_case *c, void *state);
    void (*teardown)(void *state); /* frees what setup returned */
    /* Adds this type's default cases of size n (called for every N of the
     * default grid) with bench_plan_add(). */
    void (*plan)(bench_plan *pl, uint64_t n);
    /* NULL, or the name n goes by in the REPORT line (the load balancer's
     * "B") and a flag that sets it like --n ("--batch"). */
    const char *n_name, *n_flag;
} bench_type;

/* The whole driver: subcommands, list-types, list-cases, --help. Returns the
 * process exit status (0; 1 a case failed at run time; 2 bad usage). */
int bench_main(int argc, char **argv, const bench_type *const *types, size_t ntypes);

/* Records the current repetition's value of a metric (created on first use,
 * printed in first-use order). */
void bench_record(bench_case *c, const char *name, double value);

/*
 * Records a timed phase of `ops` operations that ran from t0 to t1
 * (bench_now_ns() readings): its latency, the wall time over the operations
 * in us, as latency_name, and, unless qps_name is NULL, its throughput,
 * operations per second, as qps_name. Returns the latency.
 */
double bench_record_phase(bench_case *c, const char *latency_name, const char *qps_name,
                          uint64_t t0, uint64_t t1, uint64_t ops);

/*
 * A phase timed from the first operation after a build, as the public
 * harness's drivers time theirs: 2 * ops operations from t0 to t1, the first
 * `ops` of them (to tw) the warm-up phase. op "Read" or "Get" records
 * <op>_latency_us and <op>_throughput_qps over all of them,
 * Warmup_<op>_latency_us over the first ops and <op>_steady_latency_us over
 * the rest. Returns the whole phase's latency.
 */
double bench_record_warm_phase(bench_case *c, const char *op, uint64_t t0, uint64_t tw,
                               uint64_t t1, uint64_t ops);

/*
 * The build of a repetition's structure: bench_build_start() reads the
 * resident set and then the clock; bench_build_done() the clock and then the
 * resident set, and records Initialization_time_us.
 */
typedef struct bench_build {
    size_t rss_before, rss_after;
    uint64_t t0;
} bench_build;
void bench_build_start(bench_build *b);
void bench_build_done(bench_case *c, bench_build *b);

/*
 * Records the measured memory of the structure built in this repetition:
 * Memory_kb (resident set growth since the start of build b, from
 * /proc/self/statm: the public harness's meaning), Allocated_kb (bytes held
 * through its allocator, from a bench_counter) and Bytes_per_entry
 * (Allocated_kb over N, in bytes).
 */
void bench_record_memory(bench_case *c, size_t alloc_bytes, const bench_build *b);

/* The largest N the plan being written goes to (2^20 by default, more with
 * --large or --max-n), for types whose default plan stops earlier. */
uint64_t bench_plan_max_n(const bench_plan *pl);

/* Adds a case to the plan: its parameters (key/value bytes, extras; n as
 * given), the memory it needs and how long it should take. */
void bench_plan_add(bench_plan *pl, const bench_type *t, uint64_t n, uint64_t key_bytes,
                    uint64_t value_bytes, const uint64_t *extra, double est_memory_bytes,
                    double est_seconds);

/* A counting obl_allocator: every byte a structure allocates through it is
 * counted (live and peak), so memory is measured, not estimated; the
 * memory itself comes from obl_default_allocator(), the one users get. */
typedef struct bench_counter {
    size_t live, peak, calls;
    obl_allocator inner;
} bench_counter;
obl_allocator bench_counting_allocator(bench_counter *c);

/*
 * The status a run() returns at the end of a repetition: 0, or 1 with a
 * message on stderr if the repetition's own checks failed (a wrong answer
 * fails the case, it is not a number) or the destroyed structure left bytes
 * allocated through its counting allocator.
 */
int bench_rep_status(const bench_case *c, int failed, const bench_counter *cnt);

/* ----------------------------------------------------------- helpers -- */

/* For check(): if `need` bytes exceed `fraction` of the machine's memory,
 * writes the message and returns 1; 0 otherwise (or if unknown). */
int bench_check_memory(const bench_params *p, double need, double fraction, char *msg,
                       size_t len);

/* For check() of the map types: N present and Q absent keys must be
 * distinct K-byte strings; 1 with the message if they cannot be. */
int bench_check_key_space(const bench_params *p, char *msg, size_t len);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* Resident set size of this process in bytes (/proc/self/statm), 0 if
 * unavailable. */
size_t bench_rss_bytes(void);

/* The workload generator (xoshiro256**, Blackman and Vigna 2018): seeded,
 * reproducible, independent of the structures' own PRGs. */
typedef struct bench_rng {
    uint64_t s[4];
} bench_rng;
void bench_rng_seed(bench_rng *r, uint64_t seed);
uint64_t bench_rng_next(bench_rng *r);
uint64_t bench_rng_below(bench_rng *r, uint64_t n); /* uniform in [0, n) */

/*
 * out[0..q) = a shuffled index sequence over [0, n): consecutive passes,
 * each a different pseudo-random permutation of [0, n) (a keyed bijection on
 * [0, 2^b) with cycle walking), so every index is used equally often and no
 * memory of size n is needed.
 */
void bench_shuffled_indices(uint64_t *out, uint64_t q, uint64_t n, uint64_t seed);

/*
 * A keyed bijection on [0, 256^kb) written as kb little-endian bytes into
 * key, followed (for kb > 8) by bytes derived from it: distinct ids give
 * distinct, random-looking keys. id must be < 256^min(kb, 8).
 */
void bench_make_key(unsigned char *key, size_t kb, uint64_t id, uint64_t seed);

/* BENCH_POOL random values of value_bytes each (malloc'd, free() it): the
 * values a benchmark writes, generated before timing. */
#define BENCH_POOL 256
unsigned char *bench_value_pool(uint64_t value_bytes, uint64_t seed);

/*
 * The workload of the array-like types: Q read and Q write indices (shuffled
 * passes over [0, N), seeds 3S+1 and 3S+2) and the value pool (seed S).
 * new returns NULL if out of memory; delete (a bench_type teardown) frees.
 */
typedef struct bench_rw_workload {
    uint64_t *read_idx, *write_idx;
    unsigned char *pool;
} bench_rw_workload;
bench_rw_workload *bench_rw_workload_new(const bench_params *p);
void bench_rw_workload_delete(void *w);

/*
 * The workload of the map types, keys stored contiguously in the order the
 * timed loops use them: N present keys (ids 0..N-1), Q present keys in
 * shuffled order (hit), Q absent keys (ids N..N+Q-1, miss), Q present keys
 * in another order (upd), E = bench_erase_count() distinct present keys
 * (era), and the value pool. With keep_values also the N values by id
 * (vals[i] = the pool's value i mod BENCH_POOL) and the ids of the hits.
 * new returns NULL if out of memory; delete (a bench_type teardown) frees.
 */
typedef struct bench_map_workload {
    size_t e;
    unsigned char *keys, *hit, *miss, *upd, *era, *pool;
    unsigned char *vals; /* keep_values only, else NULL */
    uint64_t *hit_id;    /* keep_values only, else NULL */
} bench_map_workload;
uint64_t bench_erase_count(const bench_params *p); /* min(Q, N/4), at least 1 */
bench_map_workload *bench_map_workload_new(const bench_params *p, int keep_values);
void bench_map_workload_delete(void *w);

/* Nanoseconds between two bench_now_ns() readings, per operation, in us. */
static inline double bench_us_per_op(uint64_t t0, uint64_t t1, uint64_t ops)
{
    return (double)(t1 - t0) / 1000.0 / (double)ops;
}

/* Summary of n samples (n >= 1); quartiles interpolate linearly between
 * order statistics (numpy's default, as scripts/obllib/stats.py). */
typedef struct bench_stats {
    double median, min, max, q1, q3;
} bench_stats;
bench_stats bench_summarize(const double *x, int n);

/* Folds len bytes into the running checksum h (order-dependent: a phase
 * folds its results in the order it got them, and its check folds the
 * expected values in the same order). Cheap enough for a timed loop (one
 * multiply per 8 bytes), so that results are checked without storing them;
 * a wrong byte changes the result except with probability about 2^-64. */
static inline uint64_t bench_fold(uint64_t h, const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = 0;
        memcpy(&w, p + i, len - i < 8 ? len - i : 8); /* little-endian x86 */
        h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    return h;
}

/* Stops the compiler from dropping the computation of v. */
static inline void bench_consume(uint64_t v)
{
    __asm__ __volatile__("" : : "r"(v) : "memory");
}

/* The machine and build, detected once. */
typedef struct bench_env {
    char cpu[128], compiler[96], host[64], tag[160];
    const char *flags, *git, *ct_variant;
    long cores;
    uint64_t memory_kb; /* MemTotal */
    int cpu_pinned;     /* --cpu: the process is pinned to cpu_id */
    int cpu_id;         /* the CPU pinned to, or the one the run started on */
} bench_env;
const bench_env *bench_get_env(void);

/* JSON writers: a quoted, escaped string; a number (null if not finite);
 * the environment as an object; a summary as the members
 * "median": .., "min": .., "max": .., "q1": .., "q3": .. (no braces). */
void bench_json_string(FILE *f, const char *s);
void bench_json_number(FILE *f, double x);

/* A REPORT line's number: about six significant digits, no exponent. */
void bench_fmt(char *buf, size_t len, double x);

/* "1024" or "2^10" -> *out; 0 on a malformed number. */
int bench_parse_u64(const char *s, uint64_t *out);
void bench_json_env(FILE *f, const bench_env *e);
void bench_json_stats(FILE *f, const bench_stats *s);

#endif /* OBL_BENCH_HARNESS_H */
