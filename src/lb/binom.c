/* SPDX-License-Identifier: MIT */
/*
 * The shard batch size of the load balancer (obl/lb.h, docs/lb.md): the
 * smallest n with P[Bin(B, 1/S) > n] <= 2^-lambda, from the exact binomial
 * tail summed in log space (log-gamma terms, log-sum-exp), never a
 * Chernoff bound. Terms beyond the first k above the mode whose
 * probability is below 2^-lambda * e^-80 are left out: together they are
 * below B * e^-80 of the threshold, far below a double's precision.
 */
#include <math.h>

#include <obl/lb.h>

/* log Gamma(x) without lgamma's write to the global signgam, so that
 * threads may size batches at once; every argument here is >= 1. */
static double lb_lgamma(double x)
{
    int sign;
    return lgamma_r(x, &sign);
}

/* log P[Bin(B, p) = k]. */
static double lb_lpmf(double lgB, double B, double k, double lp, double lq)
{
    return lgB - lb_lgamma(k + 1) - lb_lgamma(B - k + 1) + k * lp + (B - k) * lq;
}

/* log(e^a + e^b) */
static double lb_logadd(double a, double b)
{
    if (a < b) {
        double t = a;
        a = b;
        b = t;
    }
    if (b == -INFINITY)
        return a;
    return a + log1p(exp(b - a));
}

/* see obl/lb.h */
size_t obl_lb_shard_batch_size(size_t B, unsigned S, unsigned lambda)
{
    if (B == 0 || S == 0 || lambda == 0 || lambda > 200)
        return 0;
    if (S == 1)
        return B;
    const double p = 1.0 / S, lp = log(p), lq = log1p(-p), Bd = (double)B;
    const double lgB = lb_lgamma(Bd + 1), thr = -(double)lambda * log(2.0);
    size_t k = (size_t)floor((Bd + 1) * p); /* the mode */
    if (k > B)
        k = B;
    while (k < B && lb_lpmf(lgB, Bd, (double)k, lp, lq) > thr - 80)
        k++;
    /* logT = log P[k' in (n, k]] as n goes down from k */
    double logT = -INFINITY;
    for (size_t n = k;; n--) {
        if (logT > thr)
            return n + 1;
        logT = lb_logadd(logT, lb_lpmf(lgB, Bd, (double)n, lp, lq));
        if (n == 0)
            break;
    }
    return 0; /* not reached: the whole tail is 1 */
}
