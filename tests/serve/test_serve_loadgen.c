/* SPDX-License-Identifier: MIT */
/*
 * obl-load's schedule and statistics (serve/loadgen.h): the intended send
 * times for a given seed and rate (the uniform grid exactly; the Poisson
 * times against the formula docs/server.md gives, and their distribution),
 * ramp and burst plans, key draws (hit ratio, Zipf head), and the
 * nearest-rank quantiles against a brute-force reference.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen.h"
#include "testutil.h"
#include "wire.h"

static void test_uniform(void)
{
    load_plan p = {0};
    CHECK(load_plan_rate(&p, 1000, 2) == 0);
    p.warmup_s = 0.5;
    uint64_t *t;
    uint16_t *st;
    size_t n = load_schedule(&p, &t, &st);
    CHECK_EQ_U64(n, 2500);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += t[i] != (uint64_t)i * 1000000u || st[i] != (i < 500 ? LOAD_WARMUP : 0);
    CHECK_EQ_U64(bad, 0);
    free(t);
    free(st);
}

/* The Poisson schedule is defined as: r = mix64(seed ^ 0x7363686564), then
 * per request r += golden, u = (mix64(r) >> 11) * 2^-53, t += -ln(1-u)/rate. */
static void test_poisson_formula(uint64_t seed)
{
    load_plan p = {0};
    CHECK(load_plan_rate(&p, 10000, 5) == 0);
    p.poisson = 1;
    p.seed = seed;
    uint64_t *t;
    uint16_t *st;
    size_t n = load_schedule(&p, &t, &st);
    CHECK(n > 50000 - 1200 && n < 50000 + 1200);
    uint64_t r = serve_mix64(seed ^ 0x7363686564ULL);
    double at = 0;
    size_t bad = 0, below_half = 0, below_mean = 0;
    for (size_t i = 0; i < n; i++) {
        r += 0x9e3779b97f4a7c15ULL;
        double u = (double)(serve_mix64(r) >> 11) * 0x1p-53;
        double gap = -log1p(-u) / 10000;
        at += gap;
        bad += t[i] != (uint64_t)llround(at * 1e9) || (i && t[i] < t[i - 1]) || st[i] != 0;
        below_half += gap < 100e-6 * log(2);
        below_mean += gap < 100e-6;
    }
    CHECK_EQ_U64(bad, 0);
    /* exponential gaps: P(gap < mean ln 2) = 1/2, P(gap < mean) = 1 - 1/e */
    CHECK(fabs((double)below_half / (double)n - 0.5) < 0.015);
    CHECK(fabs((double)below_mean / (double)n - (1 - exp(-1))) < 0.015);
    CHECK(t[n - 1] < 5000000000u);
    uint64_t *t2;
    uint16_t *st2;
    CHECK_EQ_U64(load_schedule(&p, &t2, &st2), n); /* the same seed: the same times */
    CHECK(memcmp(t, t2, n * sizeof(*t)) == 0);
    free(t2);
    free(st2);
    p.seed = seed + 1;
    size_t n3 = load_schedule(&p, &t2, &st2);
    CHECK(n3 > 0 && memcmp(t, t2, (n3 < n ? n3 : n) * sizeof(*t)) != 0);
    free(t2);
    free(st2);
    free(t);
    free(st);
}

static void test_ramp_bursts(void)
{
    load_plan p = {0};
    uint64_t *t;
    uint16_t *st;
    CHECK(load_plan_ramp(&p, "1000:3000:3:3") == 0);
    CHECK_EQ_U64(p.nsteps, 3);
    CHECK_EQ_U64(p.ngroups, 3);
    size_t n = load_schedule(&p, &t, &st), count[3] = {0};
    CHECK_EQ_U64(n, 6000);
    for (size_t i = 0; i < n; i++)
        count[st[i] < 3 ? st[i] : 0]++;
    CHECK_EQ_U64(count[0], 1000);
    CHECK_EQ_U64(count[1], 2000);
    CHECK_EQ_U64(count[2], 3000);
    CHECK_EQ_U64(t[1000], 1000000000u); /* step 2 starts at 1 s */
    CHECK_EQ_U64(t[1001], 1000500000u); /* at 2000/s */
    free(t);
    free(st);
    CHECK(load_plan_bursts(&p, "5000:500:0.2:0.8", 2) == 0);
    CHECK_EQ_U64(p.nsteps, 4);
    CHECK_EQ_U64(p.ngroups, 2);
    CHECK_EQ_U64(load_schedule(&p, &t, &st), 2800);
    free(t);
    free(st);
    CHECK(load_plan_ramp(&p, "1:2:3") != 0);
    CHECK(load_plan_ramp(&p, "1:2:3:0") != 0);
    CHECK(load_plan_ramp(&p, "a:b:c:d") != 0);
    CHECK(load_plan_ramp(&p, "1:2:3:4:5") != 0);
    CHECK(load_plan_rate(&p, 0, 1) != 0);
    CHECK(load_plan_bursts(&p, "1:1:0:1", 3) != 0);
}

static void test_keys(void)
{
    load_keys k;
    load_rng r = {T.seed};
    uint64_t n = 1000, draws = 100000, hits = 0, head = 0;
    CHECK(load_keys_init(&k, n, UINT64_MAX, 0.8, 0) == 0);
    for (uint64_t i = 0; i < draws; i++)
        hits += load_keys_draw(&k, &r) < n;
    CHECK(fabs((double)hits / (double)draws - 0.8) < 0.01);
    load_keys_free(&k);
    CHECK(load_keys_init(&k, n, UINT64_MAX, 1.0, 0.99) == 0);
    double h = 0;
    for (uint64_t i = 1; i <= n; i++)
        h += pow((double)i, -0.99);
    for (uint64_t i = 0; i < draws; i++) {
        uint64_t id = load_keys_draw(&k, &r);
        CHECK(id < n);
        head += id == 0;
    }
    CHECK(fabs((double)head / (double)draws * h - 1) < 0.05); /* P(rank 0) = 1/H */
    load_keys_free(&k);
    CHECK(load_keys_init(&k, 256, 256, 0.5, 0) != 0); /* 1-byte keys: no room for misses */
    CHECK(load_keys_init(&k, 300, 256, 1.0, 0) != 0);
}

/* The reference: the smallest value with at least ceil(k n / 1000) values
 * at or below it, by counting. */
static double ref_quantile(const double *x, size_t n, unsigned k)
{
    size_t need = (k * n + 999) / 1000;
    need = need ? need : 1;
    double best = INFINITY;
    for (size_t i = 0; i < n; i++) {
        size_t le = 0;
        for (size_t j = 0; j < n; j++)
            le += x[j] <= x[i];
        if (le >= need && x[i] < best)
            best = x[i];
    }
    return best;
}

static void test_quantiles(void)
{
    double x[1000];
    test_rng rng;
    test_rng_seed(&rng, T.seed);
    for (int i = 0; i < 1000; i++)
        x[i] = i + 1;
    for (int i = 999; i > 0; i--) {
        size_t j = test_rng_below(&rng, (uint64_t)i + 1);
        double s = x[i];
        x[i] = x[j];
        x[j] = s;
    }
    load_sort(x, 1000);
    CHECK(load_quantile(x, 1000, 0.5) == 500);
    CHECK(load_quantile(x, 1000, 0.9) == 900);
    CHECK(load_quantile(x, 1000, 0.99) == 990);
    CHECK(load_quantile(x, 1000, 0.999) == 999);
    CHECK(load_quantile(x, 1000, 1.0) == 1000);
    CHECK(isnan(load_quantile(x, 0, 0.5)));
    static const unsigned ks[] = {1, 10, 250, 500, 900, 990, 999, 1000};
    size_t bad = 0;
    for (int t = 0; t < 200; t++) {
        size_t n = 1 + test_rng_below(&rng, 120);
        double y[120], s[120];
        for (size_t i = 0; i < n; i++)
            y[i] = s[i] = (double)test_rng_below(&rng, 40); /* with ties */
        load_sort(s, n);
        for (size_t q = 0; q < sizeof(ks) / sizeof(ks[0]); q++)
            bad += load_quantile(s, n, ks[q] / 1000.0) != ref_quantile(y, n, ks[q]);
    }
    CHECK_EQ_U64(bad, 0);
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_serve_loadgen");
    test_uniform();
    test_poisson_formula(T.seed);
    test_ramp_bursts();
    test_keys();
    test_quantiles();
    return test_done("test_serve_loadgen");
}
