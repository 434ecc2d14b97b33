/*
 * obl-load's schedule and statistics (docs/server.md, "obl-load"): the
 * open-loop method of wrk2. Every request's intended send time is computed
 * before the run from the offered rate; latency is measured from it, so a
 * server that falls behind is charged for the requests it delayed
 * (coordinated omission corrected).
 */
#ifndef OBL_SERVE_LOADGEN_H
#define OBL_SERVE_LOADGEN_H

#include <stddef.h>
#include <stdint.h>

#define LOAD_MAX_STEPS 1024
#define LOAD_WARMUP 0xffffu /* the step id of warm-up requests */

/* One stretch of constant offered rate; `group` is the REPORT line it
 * counts in (a ramp: one per step; bursts: on and off). */
typedef struct load_step {
    double rate;     /* requests per second, > 0 */
    double seconds;  /* > 0 */
    unsigned group;
} load_step;

typedef struct load_plan {
    load_step steps[LOAD_MAX_STEPS];
    unsigned nsteps, ngroups;
    double warmup_s; /* at steps[0].rate, before the steps, discarded */
    int poisson;     /* 1: exponential gaps; 0: uniform spacing */
    uint64_t seed;
} load_plan;

/* Fills plan->steps from the command line's forms; 0 ok, -1 bad text:
 *   rate R, duration S                 one step
 *   ramp "R0:R1:SECONDS:STEPS"         STEPS steps of SECONDS/STEPS each,
 *                                      rates R0 .. R1 evenly (STEPS >= 1)
 *   bursts "ON:OFF:ON_S:OFF_S", S      on/off stretches until S seconds */
int load_plan_rate(load_plan *p, double rate, double seconds);
int load_plan_ramp(load_plan *p, const char *spec);
int load_plan_bursts(load_plan *p, const char *spec, double seconds);

/* Where a step starts, in seconds from the schedule's start (after the
 * warm-up). */
double load_step_start(const load_plan *p, unsigned step);

/*
 * The intended send times, in ns from the schedule's start, ascending
 * (warm-up first), and each request's step (LOAD_WARMUP in the warm-up).
 * Deterministic in the plan (seed included). Returns the count, or 0 if out
 * of memory; *times and *steps are malloc'd.
 */
size_t load_schedule(const load_plan *p, uint64_t **times, uint16_t **steps);

/* The workload's RNG (splitmix64 stream) and its uniform double in [0, 1). */
typedef struct load_rng {
    uint64_t s;
} load_rng;
uint64_t load_rng_next(load_rng *r);
double load_rng_unit(load_rng *r);

/* Keys: ids < n are present (hits), ids >= n absent (misses). Zipf draws
 * rank r in [0, n) with weight 1/(r+1)^s from a cumulative table. */
typedef struct load_keys {
    uint64_t n, miss_span;
    double hit_ratio, zipf_s; /* zipf_s 0: uniform */
    double *cdf;              /* zipf only */
} load_keys;
int load_keys_init(load_keys *k, uint64_t n, uint64_t key_space, double hit_ratio,
                   double zipf_s);
uint64_t load_keys_draw(const load_keys *k, load_rng *r);
void load_keys_free(load_keys *k);

/* The p-quantile (0 < p <= 1) of n sorted values by the nearest-rank
 * method: the smallest x with at least ceil(p * n) values <= x. */
double load_quantile(const double *sorted, size_t n, double p);
void load_sort(double *x, size_t n);

#endif /* OBL_SERVE_LOADGEN_H */
