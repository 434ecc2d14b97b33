/*
 * Minimal test support shared by the test executables: seed handling
 * (`-s N`, printed first so that any run can be replayed), a `--ct` flag set
 * when the test runs under memcheck (tests shrink their sizes there), a
 * deterministic test-side PRNG for generating operations, and CHECK macros
 * that count failures instead of stopping at the first.
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

typedef struct {
    uint64_t seed;
    int ct;          /* running under memcheck: keep sizes small */
    int long_run;    /* --long: the soak sizes, for runs outside CI */
    long failures;
    long checks;
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
    }
    printf("%s: seed %" PRIu64 "%s (replay with -s %" PRIu64 ")\n", name, T.seed,
           T.ct ? " [memcheck]" : "", T.seed);
    fflush(stdout);
}

static inline int test_done(const char *name)
{
    printf("%s: %ld checks, %ld failed\n", name, T.checks, T.failures);
    return T.failures ? 1 : 0;
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

/* xoshiro256** (Blackman, Vigna 2018): the tests' own reproducible stream,
 * independent of the library's PRG under test. */
typedef struct { uint64_t s[4]; } test_rng;

static inline uint64_t test_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline void test_rng_seed(test_rng *r, uint64_t seed)
{
    uint64_t z = seed;
    for (int i = 0; i < 4; i++) {
        z += 0x9e3779b97f4a7c15ULL;
        uint64_t x = z;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        r->s[i] = x ^ (x >> 31);
    }
}

static inline uint64_t test_rng_next(test_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = test_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = test_rotl(s[3], 45);
    return out;
}

static inline uint64_t test_rng_below(test_rng *r, uint64_t n)
{
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)test_rng_next(r) * n) >> 64);
}

static inline void test_rng_fill(test_rng *r, void *buf, size_t len)
{
    unsigned char *b = (unsigned char *)buf;
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)test_rng_next(r);
}

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

#endif /* OBL_TESTUTIL_H */
