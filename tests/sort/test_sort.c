/* SPDX-License-Identifier: MIT */
/*
 * Tests of obl/sort.h: bitonic sort, shuffle, shuffle-then-sort, compaction
 * and expansion against plain models (qsort, stable filtering), at small,
 * prime and power-of-two sizes, with duplicates and all-equal keys, on one
 * and two threads; trace equality of the oblivious parts; under memcheck
 * (--ct) keys, payloads and flags are secret.
 */
#include <obl/sort.h>

#include "common/secret.h"
#include "common/trace.h"
#include "testutil.h"

/* The library's randomness from the test's stream (replayable). */
static int test_random(void *opaque, void *buf, size_t len)
{
    test_rng_fill((test_rng *)opaque, buf, len);
    if (T.ct) /* the seed is secret: so are the permutations drawn from it */
        OBL_SECRET(buf, len);
    return 0;
}

static test_rng R;

static obl_sort_params params(size_t words, size_t kw, unsigned threads)
{
    obl_sort_params p = {words * 8, kw * 8, threads, test_random, &R, NULL};
    return p;
}

/* Key patterns: 0 random, 1 few distinct (duplicates), 2 all equal. */
static void fill(uint64_t *r, size_t n, size_t words, size_t kw, int pat)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t *x = r + i * words;
        for (size_t k = 0; k < kw; k++)
            x[k] = pat == 0 ? test_rng_next(&R) : pat == 1 ? test_rng_below(&R, 3) : 7;
        for (size_t k = kw; k < words; k++)
            x[k] = i * 1000003u + k; /* payload names the record */
    }
}

static size_t g_words, g_kw;

static int cmp_key(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    for (size_t k = 0; k < g_kw; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

static int cmp_all(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    for (size_t k = 0; k < g_words; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

/* 1 if a and b hold the same records (as multisets). */
static int same_multiset(const uint64_t *a, const uint64_t *b, size_t n, size_t words)
{
    size_t bytes = n * words * 8;
    uint64_t *x = malloc(bytes + 8), *y = malloc(bytes + 8);
    memcpy(x, a, bytes);
    memcpy(y, b, bytes);
    g_words = words;
    qsort(x, n, words * 8, cmp_all);
    qsort(y, n, words * 8, cmp_all);
    int ok = memcmp(x, y, bytes) == 0;
    free(x);
    free(y);
    return ok;
}

typedef obl_err (*sort_fn)(void *, size_t, const obl_sort_params *);

/* One sort against qsort: same keys in order, same records. */
static void check_sort(sort_fn f, size_t n, size_t words, size_t kw, int pat, unsigned threads)
{
    size_t bytes = n * words * 8;
    uint64_t *r = malloc(bytes + 8), *orig = malloc(bytes + 8);
    fill(r, n, words, kw, pat);
    memcpy(orig, r, bytes);
    obl_sort_params p = params(words, kw, threads);
    OBL_SECRET(r, bytes);
    obl_err e = f(r, n, &p);
    OBL_DECLASSIFY(r, bytes);
    CHECK_EQ_U64(e, OBL_OK);
    g_words = words;
    g_kw = kw;
    int sorted = 1;
    for (size_t i = 1; i < n; i++)
        sorted &= cmp_key(r + (i - 1) * words, r + i * words) <= 0;
    CHECK(sorted);
    CHECK(same_multiset(r, orig, n, words));
    if (!sorted)
        fprintf(stderr, "  unsorted: n %zu words %zu kw %zu pattern %d threads %u\n", n, words,
                kw, pat, threads);
    free(r);
    free(orig);
}

/* Compaction against stable filtering, expansion back to the flagged
 * positions. */
static void check_compact(size_t n, size_t words, unsigned threads, int pat)
{
    size_t bytes = n * words * 8;
    uint64_t *r = malloc(bytes + 8), *orig = malloc(bytes + 8), *want = malloc(bytes + 8);
    uint8_t *fl = malloc(n + 1);
    fill(r, n, words, 1, 0);
    memcpy(orig, r, bytes);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        fl[i] = (uint8_t)(pat == 0 ? test_rng_below(&R, 2) : pat == 1 ? 1 : 0);
        if (fl[i])
            memcpy(want + m++ * words, orig + i * words, words * 8);
    }
    obl_sort_params p = params(words, 1, threads);
    size_t cnt = 0;
    OBL_SECRET(r, bytes);
    OBL_SECRET(fl, n);
    obl_err e = obl_compact(r, n, fl, &cnt, &p);
    OBL_DECLASSIFY(r, bytes);
    OBL_DECLASSIFY(&cnt, sizeof cnt);
    CHECK_EQ_U64(e, OBL_OK);
    CHECK_EQ_U64(cnt, m);
    CHECK(m == 0 || memcmp(r, want, m * words * 8) == 0);
    CHECK(same_multiset(r, orig, n, words));
    OBL_SECRET(r, bytes);
    e = obl_expand(r, n, fl, &p);
    OBL_DECLASSIFY(r, bytes);
    OBL_DECLASSIFY(fl, n);
    CHECK_EQ_U64(e, OBL_OK);
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        if (fl[i])
            ok &= memcmp(r + i * words, orig + i * words, words * 8) == 0;
    CHECK(ok);
    CHECK(same_multiset(r, orig, n, words));
    free(r);
    free(orig);
    free(want);
    free(fl);
}

/* obl_sort_split with its columns allocated, and with a caller's buffer
 * (n rows of 8 words, at least the m rows it needs). */
static obl_err split_alloc(void *recs, size_t n, const obl_sort_params *p)
{
    return obl_sort_split(recs, n, p, NULL, 0);
}

static obl_err split_buf(void *recs, size_t n, const obl_sort_params *p)
{
    size_t bytes = (n ? n : 1) * 64;
    uint64_t *buf = malloc(bytes);
    obl_err e = buf ? obl_sort_split(recs, n, p, buf, bytes) : OBL_ERR_NOMEM;
    free(buf);
    return e;
}

/* The sizes: 0 .. 3, primes, powers of two and their neighbours. */
static size_t sizes(size_t *out, size_t maxn)
{
    static const size_t base[] = {0, 1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 64, 97, 127, 128, 129, 251,
                                  256, 1021, 1024, 4093, 4096, 8191, 16384, 65521, 65536,
                                  1u << 18, 1u << 20};
    size_t k = 0;
    for (size_t i = 0; i < sizeof base / sizeof *base; i++)
        if (base[i] <= maxn)
            out[k++] = base[i];
    return k;
}

#if defined(__SANITIZE_ADDRESS__)
#define SORT_SANITIZE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SORT_SANITIZE 1
#endif
#endif

static void test_models(void)
{
    size_t maxn = T.ct ? 300 : ((size_t)1 << 20);
#ifdef SORT_SANITIZE
    maxn = (size_t)1 << 12; /* -O0 with sanitizers: small sizes */
#endif
    size_t ns[32], cnt = sizes(ns, maxn);
    static const sort_fn fns[] = {obl_sort_bitonic, obl_sort_shuffled, obl_sort, split_alloc,
                                  split_buf};
    static const char *names[] = {"bitonic", "shuffled", "sort", "split", "split (buffer)"};
    for (int f = 0; f < 5; f++) {
        long before = T.failures;
        for (size_t i = 0; i < cnt; i++) {
            size_t n = ns[i];
            int big = n > ((size_t)1 << 16);
            if (big && f == 0 && n > ((size_t)1 << 18))
                continue; /* the generic bitonic at 2^20 costs seconds: 2^18 stands for it */
            if (big && f >= 3)
                continue; /* beyond 2^16 as obl_sort's columns */
            for (int pat = 0; pat < 3; pat++) {
                if (big && pat != 1)
                    continue;
                check_sort(fns[f], n, 2, 1, pat, 1);
                if (!big || pat == 1)
                    check_sort(fns[f], n, 4, 2, pat, 2);
                if (!big && n < 5000)
                    check_sort(fns[f], n, 3, 1, pat, 3);
                if (f >= 3 && n < 5000) /* the join's slim records */
                    check_sort(fns[f], n, 8, 1, pat, 2);
            }
        }
        printf("  %s vs qsort: %s\n", names[f], T.failures == before ? "ok" : "FAILED");
    }
    long before = T.failures;
    for (size_t i = 0; i < cnt; i++) {
        for (int pat = 0; pat < 3; pat++) {
            if (ns[i] > ((size_t)1 << 16) && pat)
                continue;
            check_compact(ns[i], 2, 1, pat);
            if (ns[i] <= ((size_t)1 << 16))
                check_compact(ns[i], 5, 2, pat);
        }
    }
    printf("  compact/expand vs filtering: %s\n", T.failures == before ? "ok" : "FAILED");
}

/* obl_sort_columns against qsort of the rows. */
static void test_columns(void)
{
    long before = T.failures;
    size_t maxn = T.ct ? 256 : ((size_t)1 << 18);
#ifdef SORT_SANITIZE
    maxn = (size_t)1 << 12;
#endif
    for (size_t n = 1; n <= maxn; n *= 2)
        for (size_t kw = 1; kw <= 2; kw++)
            for (int pat = 0; pat < 3; pat++) {
                size_t nc = kw + (n + (size_t)pat) % (9 - kw), words = nc; /* 1 .. 8 */
                uint64_t *rows = malloc(n * words * 8), *cols[8];
                fill(rows, n, words, kw, pat);
                for (size_t c = 0; c < nc; c++) {
                    cols[c] = malloc(n * 8);
                    for (size_t i = 0; i < n; i++)
                        cols[c][i] = rows[i * words + c];
                }
                for (size_t c = 0; c < nc; c++)
                    OBL_SECRET(cols[c], n * 8);
                CHECK_EQ_U64(obl_sort_columns(cols, nc, kw, n, 1 + (unsigned)(n % 2)), OBL_OK);
                uint64_t *back = malloc(n * words * 8);
                for (size_t c = 0; c < nc; c++) {
                    OBL_DECLASSIFY(cols[c], n * 8);
                    for (size_t i = 0; i < n; i++)
                        back[i * words + c] = cols[c][i];
                    free(cols[c]);
                }
                g_words = words;
                g_kw = kw;
                int sorted = 1;
                for (size_t i = 1; i < n; i++)
                    sorted &= cmp_key(back + (i - 1) * words, back + i * words) <= 0;
                CHECK(sorted);
                CHECK(same_multiset(back, rows, n, words));
                free(rows);
                free(back);
            }
    uint64_t c0[4] = {0}, *cc[1] = {c0};
    CHECK_EQ_U64(obl_sort_columns(cc, 1, 1, 3, 1), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_sort_columns(cc, 1, 2, 4, 1), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_sort_columns(NULL, 1, 1, 4, 1), OBL_ERR_INVALID_ARG);
    printf("  columns vs qsort: %s\n", T.failures == before ? "ok" : "FAILED");
}

/* The shuffle is a permutation, and all 6 orders of 3 records appear about
 * equally often (a loose bound: each within 1/6 +- 0.03 over 6000 runs). */
static void test_shuffle(void)
{
    long before = T.failures;
    size_t maxn = T.ct ? 300 : 100000;
#ifdef SORT_SANITIZE
    maxn = 5000;
#endif
    for (size_t n = 0; n <= maxn; n = n < 10 ? n + 1 : n * 3 + 1) {
        size_t bytes = n * 16;
        uint64_t *r = malloc(bytes + 8), *orig = malloc(bytes + 8);
        fill(r, n, 2, 1, 0);
        memcpy(orig, r, bytes);
        obl_sort_params p = params(2, 1, n % 2 ? 2 : 1);
        OBL_SECRET(r, bytes);
        CHECK_EQ_U64(obl_shuffle(r, n, &p), OBL_OK);
        OBL_DECLASSIFY(r, bytes);
        CHECK(same_multiset(r, orig, n, 2));
        free(r);
        free(orig);
    }
    int runs = T.ct ? 300 : 6000;
    long hist[6] = {0};
    for (int t = 0; t < runs; t++) {
        uint64_t r[3] = {0, 1, 2};
        obl_sort_params p = params(1, 1, 1);
        CHECK_EQ_U64(obl_shuffle(r, 3, &p), OBL_OK);
        OBL_DECLASSIFY(r, sizeof r); /* the permutation: secret randomness */
        hist[r[0] * 2 + (r[1] > r[2] ? 1 : 0)]++;
    }
    int even = 1;
    for (int k = 0; k < 6; k++)
        even &= hist[k] > runs * (1.0 / 6 - 0.03) && hist[k] < runs * (1.0 / 6 + 0.03);
    if (!T.ct)
        CHECK(even);
    printf("  shuffle: permutation, 3! orders %ld %ld %ld %ld %ld %ld: %s\n", hist[0], hist[1],
           hist[2], hist[3], hist[4], hist[5], T.failures == before ? "ok" : "FAILED");
}

/* Trace equality: the same n and sizes, different keys, payloads, flags
 * and randomness, identical traces (one thread: the hook is per thread). */
static void test_traces(void)
{
    if (!obl_trace_enabled())
        return;
    long before = T.failures;
    static const size_t ns[] = {5, 64, 100, 257};
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
        size_t n = ns[t];
        for (int kind = 0; kind < 6; kind++) {
            if (kind == 4 && n < 16)
                continue;
            obl_trace tr[2];
            for (int run = 0; run < 2; run++) {
                uint64_t *r = malloc(n * 24 + 8);
                uint8_t *fl = malloc(n);
                fill(r, n, 3, 2, run ? 1 : 0);
                for (size_t i = 0; i < n; i++)
                    fl[i] = (uint8_t)(run ? i % 3 == 0 : test_rng_below(&R, 2));
                obl_sort_params p = params(3, 2, 1);
                CHECK(obl_trace_init(&tr[run], 1u << 20));
                obl_trace_begin(&tr[run]);
                uint64_t *cols[3] = {r, r + 16, r + 32}; /* 16 rows in 3 columns */
                obl_err e = kind == 5   ? obl_sort_split(r, n, &p, NULL, 0)
                            : kind == 4 ? obl_sort_columns(cols, 3, 2, 16, 1)
                            : kind == 0 ? obl_sort_bitonic(r, n, &p)
                            : kind == 1 ? obl_shuffle(r, n, &p)
                            : kind == 2 ? obl_compact(r, n, fl, NULL, &p)
                                        : obl_expand(r, n, fl, &p);
                obl_trace_end();
                CHECK_EQ_U64(e, OBL_OK);
                free(r);
                free(fl);
            }
            CHECK(tr[0].n > 0);
            CHECK(obl_trace_equal(&tr[0], &tr[1]));
            obl_trace_free(&tr[0]);
            obl_trace_free(&tr[1]);
        }
    }
    /* a control: obl_sort_split's trace sees n */
    obl_trace tc[2];
    for (int run = 0; run < 2; run++) {
        uint64_t r[101 * 3];
        fill(r, 100 + (size_t)run, 3, 1, 0);
        obl_sort_params p = params(3, 1, 1);
        CHECK(obl_trace_init(&tc[run], 1u << 20));
        obl_trace_begin(&tc[run]);
        CHECK_EQ_U64(obl_sort_split(r, 100 + (size_t)run, &p, NULL, 0), OBL_OK);
        obl_trace_end();
    }
    CHECK(!obl_trace_equal(&tc[0], &tc[1]));
    obl_trace_free(&tc[0]);
    obl_trace_free(&tc[1]);
    printf("  traces of bitonic, shuffle, compact, expand, columns, split: %s\n",
           T.failures == before ? "ok" : "FAILED");
}

/* The comparison outcomes obl_sort_shuffled's merge sort reveals (the
 * trace hook's reads of length 0) of one run on n records of pattern pat:
 * *count of them and a hash of their sequence. 0 if the trace is not
 * complete. */
static int shuffled_outcomes(size_t n, int pat, uint64_t *count, uint64_t *hash)
{
    uint64_t *r = malloc(n * 16 + 8);
    obl_trace tr;
    int ok = r && obl_trace_init(&tr, 1u << 18);
    if (!ok) {
        free(r);
        return 0;
    }
    fill(r, n, 2, 1, pat);
    obl_sort_params p = params(2, 1, 1);
    OBL_SECRET(r, n * 16);
    obl_trace_begin(&tr);
    ok = obl_sort_shuffled(r, n, &p) == OBL_OK;
    obl_trace_end();
    *count = 0;
    *hash = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < tr.n; i++) {
        if (tr.ev[i].len != 0 || tr.ev[i].region != OBL_TRACE_REGION_SORT)
            continue;
        ++*count;
        *hash = (*hash ^ (tr.ev[i].offset + 1)) * 0x100000001b3ULL;
    }
    ok &= !tr.overflow;
    obl_trace_free(&tr);
    free(r);
    return ok;
}

/* What obl_sort_shuffled reveals, its merge sort's comparison outcomes,
 * has the same distribution whatever the keys: over many runs on n = 64
 * records with all-equal, few distinct and distinct keys, the mean number
 * of comparisons agrees within 6 standard errors, and no outcome sequence
 * repeats (they determine a uniformly random permutation of 64: a repeat
 * has probability below 2^-200; ties broken by the shuffled position made
 * every all-equal run the identity). */
static void test_shuffled_reveals(void)
{
    if (!obl_trace_enabled())
        return;
    long before = T.failures;
    enum { N = 64, RUNS_MAX = 400 };
    int runs = T.ct ? 12 : RUNS_MAX;
    static uint64_t hashes[3 * RUNS_MAX];
    double mean[3], var[3];
    for (int pat = 0; pat < 3; pat++) {
        double s = 0, s2 = 0;
        for (int t = 0; t < runs; t++) {
            uint64_t c = 0, h = 0;
            CHECK(shuffled_outcomes(N, pat, &c, &h));
            hashes[pat * runs + t] = h;
            s += (double)c;
            s2 += (double)c * (double)c;
        }
        mean[pat] = s / runs;
        var[pat] = s2 / runs - mean[pat] * mean[pat];
    }
    for (int pat = 1; pat < 3; pat++) {
        double d = mean[pat] - mean[0];
        CHECK(d * d <= 36 * (var[0] + var[pat]) / runs);
    }
    long repeats = 0;
    for (int i = 0; i < 3 * runs; i++)
        for (int j = 0; j < i; j++)
            repeats += hashes[i] == hashes[j];
    CHECK_EQ_U64(repeats, 0);
    printf("  sort_shuffled reveals: comparisons %.1f (distinct) %.1f (few) %.1f (equal) "
           "in %d runs each, %ld repeated outcome sequences: %s\n",
           mean[0], mean[1], mean[2], runs, repeats, T.failures == before ? "ok" : "FAILED");
}

static void test_bad_input(void)
{
    long before = T.failures;
    uint64_t r[4] = {0};
    uint8_t fl[2] = {1, 0};
    obl_sort_params p = params(2, 1, 1);
    CHECK_EQ_U64(obl_sort(NULL, 2, &p), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_sort(r, 2, NULL), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_sort(NULL, 0, &p), OBL_OK);
    uint64_t w9[3 * 9] = {3, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    obl_sort_params p9 = params(9, 1, 1); /* over 64 bytes: refused, unchanged */
    CHECK_EQ_U64(obl_sort_split(w9, 3, &p9, NULL, 0), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(w9[0] * 100 + w9[9] * 10 + w9[18], 321);
    p.key_size = 12;
    CHECK_EQ_U64(obl_sort_bitonic(r, 2, &p), OBL_ERR_INVALID_ARG);
    p = params(2, 1, 1);
    p.rec_size = 12;
    CHECK_EQ_U64(obl_shuffle(r, 2, &p), OBL_ERR_INVALID_ARG);
    p = params(1, 2, 1);
    CHECK_EQ_U64(obl_sort_shuffled(r, 2, &p), OBL_ERR_INVALID_ARG);
    p = params(2, 1, 1);
    CHECK_EQ_U64(obl_compact(r, 2, NULL, NULL, &p), OBL_ERR_INVALID_ARG);
    CHECK_EQ_U64(obl_sort(r, (size_t)1 << 33, &p), OBL_ERR_TOO_LARGE);
    /* n * rec_size beyond the address space: refused before any access */
    p.rec_size = (size_t)1 << 60;
    CHECK_EQ_U64(obl_sort(r, 16, &p), OBL_ERR_TOO_LARGE);
    CHECK_EQ_U64(obl_sort_bitonic(r, 16, &p), OBL_ERR_TOO_LARGE);
    CHECK_EQ_U64(obl_sort_shuffled(r, 16, &p), OBL_ERR_TOO_LARGE);
    CHECK_EQ_U64(obl_shuffle(r, 16, &p), OBL_ERR_TOO_LARGE);
    uint8_t fl16[16] = {1};
    CHECK_EQ_U64(obl_compact(r, 16, fl16, NULL, &p), OBL_ERR_TOO_LARGE);
    CHECK_EQ_U64(obl_expand(r, 16, fl16, &p), OBL_ERR_TOO_LARGE);
    p = params(2, 1, 1);
    test_failing_alloc fa = {0, 0, 0};
    obl_allocator al = {test_fa_alloc, test_fa_free, &fa};
    p.alloc = &al;
    uint64_t big[2048];
    for (size_t i = 0; i < 2048; i++)
        big[i] = 2048 - i;
    CHECK_EQ_U64(obl_sort_shuffled(big, 1024, &p), OBL_ERR_NOMEM);
    CHECK_EQ_U64(big[0], 2048); /* unchanged */
    CHECK_EQ_U64(obl_sort(big, 1024, &p), OBL_ERR_NOMEM); /* the columns' scratch */
    CHECK_EQ_U64(big[0], 2048);
    CHECK_EQ_U64(obl_compact(r, 2, fl, NULL, &p), OBL_ERR_NOMEM);
    CHECK_EQ_U64(fa.live, 0);
    printf("  bad input: %s\n", T.failures == before ? "ok" : "FAILED");
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_sort");
    test_rng_seed(&R, T.seed);
    test_bad_input();
    test_models();
    test_columns();
    test_shuffle();
    test_traces();
    test_shuffled_reveals();
    return test_done("test_sort");
}
