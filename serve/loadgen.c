/* obl-load's schedule, key draws and quantiles (loadgen.h). */
#include "loadgen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "wire.h"

static int plan_add(load_plan *p, double rate, double seconds, unsigned group)
{
    if (p->nsteps == LOAD_MAX_STEPS || !(rate > 0) || !(seconds > 0) || rate > 1e9)
        return -1;
    p->steps[p->nsteps++] = (load_step){rate, seconds, group};
    if (group + 1 > p->ngroups)
        p->ngroups = group + 1;
    return 0;
}

int load_plan_rate(load_plan *p, double rate, double seconds)
{
    p->nsteps = p->ngroups = 0;
    return plan_add(p, rate, seconds, 0);
}

/* Splits "a:b:c:d" into n numbers; 0 ok. */
static int split_numbers(const char *spec, double *out, int n)
{
    char buf[128];
    if (!spec || strlen(spec) >= sizeof(buf))
        return -1;
    snprintf(buf, sizeof(buf), "%s", spec);
    char *save = NULL, *tok = strtok_r(buf, ":", &save);
    for (int i = 0; i < n; i++, tok = strtok_r(NULL, ":", &save))
        if (!tok || !serve_parse_double(tok, &out[i]))
            return -1;
    return tok ? -1 : 0;
}

int load_plan_ramp(load_plan *p, const char *spec)
{
    double v[4];
    p->nsteps = p->ngroups = 0;
    if (split_numbers(spec, v, 4) || v[3] < 1 || v[3] > LOAD_MAX_STEPS || v[3] != floor(v[3]))
        return -1;
    unsigned steps = (unsigned)v[3];
    for (unsigned i = 0; i < steps; i++) {
        double rate = steps == 1 ? v[0] : v[0] + (v[1] - v[0]) * i / (steps - 1);
        if (plan_add(p, rate, v[2] / steps, i))
            return -1;
    }
    return 0;
}

int load_plan_bursts(load_plan *p, const char *spec, double seconds)
{
    double v[4];
    p->nsteps = p->ngroups = 0;
    if (split_numbers(spec, v, 4) || !(seconds > 0))
        return -1;
    double t = 0;
    for (int on = 1; t < seconds; on = !on) {
        double len = fmin(on ? v[2] : v[3], seconds - t);
        if (plan_add(p, on ? v[0] : v[1], len, on ? 0 : 1))
            return -1;
        t += len;
    }
    return 0;
}

double load_step_start(const load_plan *p, unsigned step)
{
    double t = 0;
    for (unsigned i = 0; i < step && i < p->nsteps; i++)
        t += p->steps[i].seconds;
    return t;
}

uint64_t load_rng_next(load_rng *r)
{
    r->s += 0x9e3779b97f4a7c15ULL;
    return serve_mix64(r->s);
}

double load_rng_unit(load_rng *r)
{
    return (double)(load_rng_next(r) >> 11) * 0x1p-53;
}

typedef struct sched {
    uint64_t *t;
    uint16_t *step;
    size_t n, cap;
} sched;

static int sched_push(sched *s, double t_s, uint16_t step)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4096;
        uint64_t *t = realloc(s->t, cap * sizeof(*t));
        if (t)
            s->t = t;
        uint16_t *st = realloc(s->step, cap * sizeof(*st));
        if (st)
            s->step = st;
        if (!t || !st)
            return -1;
        s->cap = cap;
    }
    s->t[s->n] = (uint64_t)llround(t_s * 1e9);
    s->step[s->n++] = step;
    return 0;
}

/* The arrivals of one stretch [start, start + seconds) at `rate`. Poisson:
 * exponential gaps, the first measured from the stretch's start (the
 * process is memoryless, so restarting at a rate change is exact). */
static int stretch(sched *s, const load_plan *p, load_rng *r, double start, double seconds,
                   double rate, uint16_t step)
{
    double end = start + seconds;
    for (uint64_t k = 0;; k++) {
        double t = p->poisson ? start - log1p(-load_rng_unit(r)) / rate
                              : start + (double)k / rate;
        if (t >= end)
            return 0;
        if (sched_push(s, t, step))
            return -1;
        if (p->poisson)
            start = t;
    }
}

size_t load_schedule(const load_plan *p, uint64_t **times, uint16_t **steps)
{
    sched s = {0};
    load_rng r = {serve_mix64(p->seed ^ 0x7363686564ULL)};
    int bad = p->nsteps == 0;
    if (!bad && p->warmup_s > 0)
        bad = stretch(&s, p, &r, 0, p->warmup_s, p->steps[0].rate, LOAD_WARMUP);
    double at = p->warmup_s;
    for (unsigned i = 0; i < p->nsteps && !bad; i++) {
        bad = stretch(&s, p, &r, at, p->steps[i].seconds, p->steps[i].rate, (uint16_t)i);
        at += p->steps[i].seconds;
    }
    if (bad || s.n == 0) {
        free(s.t);
        free(s.step);
        return 0;
    }
    *times = s.t;
    *steps = s.step;
    return s.n;
}

int load_keys_init(load_keys *k, uint64_t n, uint64_t key_space, double hit_ratio,
                   double zipf_s)
{
    memset(k, 0, sizeof(*k));
    if (n == 0 || hit_ratio < 0 || hit_ratio > 1 || zipf_s < 0 || n > key_space)
        return -1;
    k->n = n;
    k->hit_ratio = hit_ratio;
    k->zipf_s = zipf_s;
    uint64_t span = key_space - n;
    k->miss_span = span < (UINT64_C(1) << 32) ? span : (UINT64_C(1) << 32);
    if (hit_ratio < 1 && k->miss_span == 0)
        return -1;
    if (zipf_s > 0) {
        if (n > (UINT64_C(1) << 28) || !(k->cdf = malloc(n * sizeof(double))))
            return -1;
        double sum = 0;
        for (uint64_t i = 0; i < n; i++)
            k->cdf[i] = sum += pow((double)(i + 1), -zipf_s);
        for (uint64_t i = 0; i < n; i++)
            k->cdf[i] /= sum;
    }
    return 0;
}

uint64_t load_keys_draw(const load_keys *k, load_rng *r)
{
    if (load_rng_unit(r) >= k->hit_ratio)
        return k->n + load_rng_next(r) % k->miss_span;
    if (!k->cdf)
        return load_rng_next(r) % k->n;
    double u = load_rng_unit(r);
    uint64_t lo = 0, hi = k->n - 1; /* the first rank with cdf > u */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (k->cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void load_keys_free(load_keys *k)
{
    free(k->cdf);
    k->cdf = NULL;
}

double load_quantile(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return NAN;
    /* the small slack keeps p * n = 99.000...01 at rank 99 */
    double r = ceil(p * (double)n - 1e-9);
    size_t rank = r < 1 ? 1 : r > (double)n ? n : (size_t)r;
    return sorted[rank - 1];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void load_sort(double *x, size_t n)
{
    qsort(x, n, sizeof(double), cmp_double);
}
