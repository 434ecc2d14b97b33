/* SPDX-License-Identifier: MIT */
/*
 * Sizing of the oblivious map: the bucket count, the slots per bucket and
 * the overflow stash, from a Chernoff bound on the stash's occupancy
 * (docs/omap.md, "Sizing" and "Overflow stash"). Public: everything here
 * depends on the parameters alone.
 */
#include <math.h>

#include <obl/omap.h>

#include "omap/omap_internal.h"

/*
 * log E[exp(t * max(0, X - B))] for X ~ Poisson(lam), summed in the log
 * domain from k = 0 until the terms fall (they do once k + 1 > lam e^t)
 * below e^-60 of the largest. Public.
 */
static double omap_log_mgf(double lam, uint32_t B, double t)
{
    double llam = log(lam), lp = -lam, mx = -INFINITY, sum = 0;
    double turn = lam * exp(t) + 1.0;
    for (uint64_t k = 0; k < 1000000; k++) {
        if (k > 0)
            lp += llam - log((double)k);
        double x = lp + t * (k > B ? (double)(k - B) : 0.0);
        if (x > mx) {
            sum = sum * exp(mx - x) + 1.0;
            mx = x;
        } else {
            sum += exp(x - mx);
        }
        if ((double)k > turn && k > B && x < mx - 60.0)
            break;
    }
    return mx + log(sum);
}

/* M * E[max(0, X - B)] for X ~ Poisson(lam): the mean stash occupancy. */
static double omap_mean_overflow(double lam, uint32_t B, uint64_t M)
{
    double llam = log(lam), lp = -lam, e = 0;
    for (uint64_t k = 0; k < B + 10000; k++) {
        if (k > 0)
            lp += llam - log((double)k);
        if (k > B)
            e += exp(lp) * (double)(k - B);
        if (k > B && k > 2 * lam && lp < -80)
            break;
    }
    return e * (double)M;
}

/*
 * see omap_internal.h. The loads of M buckets under n balls are negatively
 * associated (Dubhashi, Ranjan, "Balls and bins: a study in negative
 * dependence", 1998), and x -> exp(t max(0, x - B)) is non-decreasing, so
 * E[exp(t sum)] <= prod_b E[exp(t max(0, load_b - B))]; each load is
 * Binomial(n, 1/M), a sum of Bernoulli(1/M), each smaller in the convex
 * order than Poisson(1/M), an order closed under independent sums (Shaked,
 * Shanthikumar, "Stochastic Orders", 2007, 3.A), and the function is
 * convex, so each factor is at most the Poisson one. Markov then gives,
 * for every t > 0, P[sum >= S] <= exp(M log E_Poisson[...] - t S); the
 * bound takes the best t found (a grid, then golden-section search: the
 * exponent is unimodal in t; every t gives a valid bound).
 */
uint64_t omap_overflow_bound(uint64_t capacity, uint64_t M, uint32_t B, unsigned bits)
{
    if (capacity <= B)
        return 0;
    double lam = (double)capacity / (double)M, c = (double)bits * log(2.0);
    double best = INFINITY, bt = 0.5;
#define OMAP_F(t) (((double)M * omap_log_mgf(lam, B, (t)) + c) / (t))
    for (int i = 1; i <= 24; i++) { /* t = 0.02 .. 4, geometric */
        double t = 0.02 * pow(200.0, (i - 1) / 23.0);
        double f = OMAP_F(t);
        if (f < best) {
            best = f;
            bt = t;
        }
    }
    double lo = bt / 1.26, hi = bt * 1.26, g = 0.6180339887498949;
    double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo), f1 = OMAP_F(x1), f2 = OMAP_F(x2);
    for (int i = 0; i < 40; i++) {
        if (f1 < f2) {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - g * (hi - lo);
            f1 = OMAP_F(x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + g * (hi - lo);
            f2 = OMAP_F(x2);
        }
    }
#undef OMAP_F
    best = fmin(best, fmin(f1, f2));
    uint64_t worst = capacity - B; /* one bucket cannot hold more */
    if (!(best < (double)worst))
        return worst;
    return (uint64_t)ceil(best);
}

/*
 * see omap_internal.h. Automatic B: the fewest
 * slots (at least the mean load) whose bound needs at most `target`
 * entries (OBL_OMAP_OVERFLOW_TARGET, or _TARGET_COMPACT for the compact
 * layout), or OBL_OMAP_MAX_SLOTS. Automatic S: the
 * bound for B, rounded up to a multiple of 8, at least 8.
 * Returns 0 when the automatic S exceeds OBL_OMAP_MAX_OVERFLOW.
 * Public: every argument.
 */
uint64_t omap_size(const obl_omap_params *p, uint64_t target, uint32_t *B, uint32_t *S,
                   uint32_t *logM)
{
    uint64_t load = p->bucket_load ? p->bucket_load : OBL_OMAP_DEFAULT_BUCKET_LOAD;
    uint32_t k = 0;
    while (((uint64_t)load << k) < p->capacity)
        k++;
    uint64_t M = (uint64_t)1 << k;
    *logM = k;
    double lam = (double)p->capacity / (double)M;
    const unsigned bits = OBL_OMAP_OVERFLOW_BITS;
    if (!p->slots_per_bucket) {
        uint32_t b = (uint32_t)ceil(lam);
        if (b < 1)
            b = 1;
        for (; b < OBL_OMAP_MAX_SLOTS; b++) {
            if (p->capacity <= b)
                break;
            if (omap_mean_overflow(lam, b, M) > (double)target)
                continue; /* the mean alone is over: skip the search */
            if (omap_overflow_bound(p->capacity, M, b, bits) <= target)
                break;
        }
        *B = b;
    } else {
        *B = p->slots_per_bucket;
    }
    if (p->overflow_size) {
        *S = p->overflow_size;
    } else {
        uint64_t s = omap_overflow_bound(p->capacity, M, *B, bits);
        s = (s + 7) & ~(uint64_t)7;
        if (s < 8)
            s = 8;
        if (s > OBL_OMAP_MAX_OVERFLOW)
            return 0;
        *S = (uint32_t)s;
    }
    return M;
}
