/* SPDX-License-Identifier: MIT */
/*
 * The statistics and the measurement loop of the timing test (dudect.h):
 * Welford's running mean and variance per class, Welch's t, and the crops
 * taken from the first batch's percentiles (dudect's prepare_percentiles).
 */
#include "dudect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Welford: running mean and sum of squared deviations, per class. */
typedef struct {
    double mean[2], m2[2];
    uint64_t n[2];
} dd_ttest;

static void tt_push(dd_ttest *t, int cls, double x)
{
    t->n[cls]++;
    double d = x - t->mean[cls];
    t->mean[cls] += d / (double)t->n[cls];
    t->m2[cls] += d * (x - t->mean[cls]);
}

static double tt_t(const dd_ttest *t)
{
    if (t->n[0] < 2 || t->n[1] < 2)
        return 0;
    double v0 = t->m2[0] / (double)(t->n[0] - 1), v1 = t->m2[1] / (double)(t->n[1] - 1);
    double den = sqrt(v0 / (double)t->n[0] + v1 / (double)t->n[1]);
    return den > 0 ? (t->mean[0] - t->mean[1]) / den : 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* One batch: classes and inputs drawn first, then the calls timed in
 * order. */
static void dd_batch(const dd_op *op, void *st, test_rng *r, uint64_t batch, unsigned char *in,
                     uint8_t *cls, uint64_t *cyc)
{
    for (uint64_t i = 0; i < batch; i++) {
        cls[i] = (uint8_t)(test_rng_next(r) & 1);
        op->gen(st, cls[i], in + i * op->in_size, r);
    }
    for (uint64_t i = 0; i < batch; i++)
        cyc[i] = op->measure(st, in + i * op->in_size);
}

/* A test needs this many measurements in each class to count. */
#define DD_ENOUGH 1000

dd_result dd_run(const dd_op *op, uint64_t seed, uint64_t batch, uint64_t batches)
{
    dd_result res;
    memset(&res, 0, sizeof(res));
    test_rng r;
    test_rng_seed(&r, seed);
    void *st = op->setup(seed);
    unsigned char *in = (unsigned char *)calloc(batch, op->in_size);
    uint8_t *cls = (uint8_t *)calloc(batch, 1);
    uint64_t *cyc = (uint64_t *)calloc(batch, sizeof(uint64_t));
    uint64_t *sorted = (uint64_t *)calloc(batch, sizeof(uint64_t));
    if (!st || !in || !cls || !cyc || !sorted) {
        res.failed_setup = 1;
        goto out;
    }
    /* warm-up: caches, branch predictors, the structure's steady state;
     * its times set the crops */
    dd_batch(op, st, &r, batch, in, cls, cyc);
    memcpy(sorted, cyc, batch * sizeof(uint64_t));
    qsort(sorted, batch, sizeof(uint64_t), cmp_u64);
    uint64_t crop[DD_CROPS];
    for (int k = 0; k < DD_CROPS; k++) {
        double q = 1 - pow(0.5, 10.0 * (k + 1) / DD_CROPS);
        crop[k] = sorted[(size_t)(q * (double)(batch - 1))];
    }
    dd_ttest tt[DD_CROPS + 1];
    memset(tt, 0, sizeof(tt));
    for (uint64_t b = 0; b < batches; b++) {
        dd_batch(op, st, &r, batch, in, cls, cyc);
        for (uint64_t i = 0; i < batch; i++) {
            double x = (double)cyc[i];
            tt_push(&tt[0], cls[i], x);
            for (int k = 0; k < DD_CROPS; k++)
                if (cyc[i] < crop[k])
                    tt_push(&tt[k + 1], cls[i], x);
        }
    }
    for (int k = 0; k <= DD_CROPS; k++) {
        if (tt[k].n[0] < DD_ENOUGH || tt[k].n[1] < DD_ENOUGH)
            continue;
        double t = fabs(tt_t(&tt[k]));
        if (t > res.max_t) {
            res.max_t = t;
            res.max_test = k;
        }
    }
    for (int c = 0; c < 2; c++) {
        res.n[c] = tt[res.max_test].n[c];
        res.mean[c] = tt[res.max_test].mean[c];
    }
out:
    if (st) {
        res.errors = op->errors(st);
        op->teardown(st);
    }
    free(in);
    free(cls);
    free(cyc);
    free(sorted);
    return res;
}
