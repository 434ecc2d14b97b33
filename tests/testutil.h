/* SPDX-License-Identifier: MIT */
/*
 * Minimal test support shared by the test executables: seed handling
 * (`-s N`, printed first so that any run can be replayed), a `--ct` flag set
 * when the test runs under memcheck (tests shrink their sizes there), a
 * deterministic test-side PRNG for generating operations, CHECK macros
 * that count failures instead of stopping at the first, and named sub-tests
 * (test_run: `--list`, `--only NAME`; each is its own ctest entry), and
 * the parameters of a structure that tests create with a fixed seed.
 *
 * Values computed from secrets must be declassified (OBL_DECLASSIFY) before a
 * CHECK compares them: the comparison is the test's own branch.
 */
#ifndef OBL_TESTUTIL_H
#define OBL_TESTUTIL_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <obl/omap.h>
#include <obl/oram.h>
#include <obl/shard.h>

#include "test_rng.h"

typedef struct {
    uint64_t seed;
    int ct;          /* running under memcheck: keep sizes small */
    int long_run;    /* --long: the soak sizes, for runs outside CI */
    long failures;
    long checks;
    const char *only;       /* --only NAME: run that sub-test alone */
    int list;               /* --list: print the sub-tests' names */
    const char *list_match; /* --list-matches A,B,...: the names, in order? */
    const char *skip;       /* set by test_skip in the running sub-test */
} obl_test_ctx;

static obl_test_ctx T;

static inline void test_init(int argc, char **argv, const char *name)
{
    T.seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc)
            T.seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--ct"))
            T.ct = 1;
        else if (!strcmp(argv[i], "--long"))
            T.long_run = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            T.only = argv[++i];
        else if (!strcmp(argv[i], "--list"))
            T.list = 1;
        else if (!strcmp(argv[i], "--list-matches") && i + 1 < argc)
            T.list_match = argv[++i];
    }
    if (T.list || T.list_match)
        return;
    printf("%s: seed %" PRIu64 "%s (replay with -s %" PRIu64 ")\n", name, T.seed,
           T.ct ? " [memcheck]" : "", T.seed);
    fflush(stdout);
}

/* test_init, then rng seeded with the run's seed. */
static inline void test_start(int argc, char **argv, const char *name, test_rng *rng)
{
    test_init(argc, argv, name);
    test_rng_seed(rng, T.seed);
}

static inline int test_done(const char *name)
{
    printf("%s: %ld checks, %ld failed\n", name, T.checks, T.failures);
    return T.failures ? 1 : 0;
}

/* ---------------------------------------------------------- sub-tests -- */

/* A named sub-test. Its name is its function's: TEST_CASE(fn). */
typedef struct {
    const char *name;
    void (*run)(void);
} test_case;
#define TEST_CASE(fn) {#fn, fn}

/* The running sub-test does not apply here (say why); it then needs no
 * check. Any other sub-test that makes no check fails. */
static inline void test_skip(const char *why) { T.skip = why; }

/* Exit status of a run whose only sub-test was skipped (ctest's
 * SKIP_RETURN_CODE). */
#define TEST_SKIPPED 77

/* Each sub-test's own stream: the seed mixed with its name, so that
 * `--only NAME -s S` replays exactly what the full run with -s S did. */
static inline uint64_t test_case_seed(uint64_t seed, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
    return seed ^ h;
}

/* --list-matches: 0 iff the comma-separated names are the cases, in order
 * (the build registers one ctest entry per name it read from the source). */
static inline int test_list_matches(const test_case *cases, size_t n, const char *want)
{
    const char *p = want;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(cases[i].name);
        if (strncmp(p, cases[i].name, len) != 0 || (p[len] != ',' && p[len] != 0)) {
            fprintf(stderr, "sub-test %zu is %s; the build registered %s\n", i, cases[i].name, p);
            return 1;
        }
        p += len + (p[len] == ',');
    }
    if (*p) {
        fprintf(stderr, "the build registered sub-tests the source lacks: %s\n", p);
        return 1;
    }
    return 0;
}

/* Runs the sub-tests (all, or --only NAME), each from its own seed; prints
 * the summary. Returns the exit status: 0, 1 on a failure, 2 on an unknown
 * name, TEST_SKIPPED when the one sub-test asked for was skipped. */
static inline int test_run(const char *prog, const test_case *cases, size_t n, test_rng *rng)
{
    if (T.list) {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", cases[i].name);
        return 0;
    }
    if (T.list_match)
        return test_list_matches(cases, n, T.list_match);
    size_t ran = 0, skipped = 0;
    for (size_t i = 0; i < n; i++) {
        if (T.only && strcmp(T.only, cases[i].name) != 0)
            continue;
        long c0 = T.checks, f0 = T.failures;
        T.skip = NULL;
        test_rng_seed(rng, test_case_seed(T.seed, cases[i].name));
        printf("== %s (replay: %s -s %" PRIu64 "%s --only %s)\n", cases[i].name, prog, T.seed,
               T.ct ? " --ct" : "", cases[i].name);
        fflush(stdout);
        cases[i].run();
        ran++;
        if (T.skip) {
            skipped++;
            printf("   skipped: %s\n", T.skip);
        } else if (T.checks == c0) {
            T.failures++;
            fprintf(stderr, "%s: made no check\n", cases[i].name);
        }
        printf("   %s: %ld checks, %ld failed\n", cases[i].name, T.checks - c0, T.failures - f0);
        fflush(stdout);
    }
    if (T.only && !ran) {
        fprintf(stderr, "%s: no sub-test %s (--list)\n", prog, T.only);
        return 2;
    }
    int rc = test_done(prog);
    return rc == 0 && ran == 1 && skipped == 1 ? TEST_SKIPPED : rc;
}

#define CHECK(cond)                                                                  \
    do {                                                                             \
        T.checks++;                                                                  \
        if (!(cond)) {                                                               \
            T.failures++;                                                            \
            if (T.failures <= 20)                                                    \
                fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                           \
    do {                                                                             \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                             \
        T.checks++;                                                                  \
        if (a_ != b_) {                                                              \
            T.failures++;                                                            \
            if (T.failures <= 20)                                                    \
                fprintf(stderr, "%s:%d: %s == %" PRIu64 ", expected %s == %" PRIu64 "\n", \
                        __FILE__, __LINE__, #a, a_, #b, b_);                         \
        }                                                                            \
    } while (0)

#define CHECK_MEM(a, b, n) CHECK(memcmp((a), (b), (n)) == 0)

/* Allocator that fails after a budget of successful calls: for
 * allocation-failure tests (obl_allocator hook). */
typedef struct {
    long budget;      /* calls left before failures start; < 0: never fail */
    long live;        /* allocations not yet freed */
    size_t live_bytes;
} test_failing_alloc;

static inline void *test_fa_alloc(void *opaque, size_t size, size_t align)
{
    test_failing_alloc *f = (test_failing_alloc *)opaque;
    if (f->budget == 0)
        return NULL;
    if (f->budget > 0)
        f->budget--;
    if (align < sizeof(void *))
        align = sizeof(void *);
    size_t rounded = (size + align - 1) & ~(align - 1);
    void *p = aligned_alloc(align, rounded);
    if (p) {
        f->live++;
        f->live_bytes += size;
    }
    return p;
}

static inline void test_fa_free(void *opaque, void *p, size_t size)
{
    test_failing_alloc *f = (test_failing_alloc *)opaque;
    if (!p)
        return;
    f->live--;
    f->live_bytes -= size;
    free(p);
}

/* ------------------------------------------------- structure parameters -- */

/* Parameters of an NRORAM of cap values of vs bytes, seeded (no system
 * randomness: a run replays); every other field zero, the defaults. */
/* Zeroed memory for a test's own arrays, or exit(2): a test that cannot
 * allocate its inputs has nothing to check. */
static inline void *test_xzalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static inline obl_nroram_params test_nroram_params(uint64_t cap, size_t vs, uint64_t seed)
{
    return (obl_nroram_params){.capacity = cap, .value_size = vs, .use_seed = 1, .seed = seed};
}

/* The same for a RORAM of n values. */
static inline obl_roram_params test_roram_params(uint64_t n, size_t vs, uint64_t seed)
{
    return (obl_roram_params){.n = n, .value_size = vs, .use_seed = 1, .seed = seed};
}

/* The same for a map of cap keys of ks bytes with values of vs. */
static inline obl_omap_params test_omap_params(uint64_t cap, size_t ks, size_t vs, uint64_t seed)
{
    return (obl_omap_params){
        .capacity = cap, .key_size = ks, .value_size = vs, .use_seed = 1, .seed = seed};
}

/* The same for a sharded map's shards (keys of ks bytes, values of vs). */
static inline obl_shard_params test_shard_params(size_t ks, size_t vs, uint64_t seed)
{
    return (obl_shard_params){.key_size = ks, .value_size = vs, .use_seed = 1, .seed = seed};
}

#endif /* OBL_TESTUTIL_H */
