/* SPDX-License-Identifier: MIT */
/*
 * The tests' reproducible random stream, shared by testutil.h and the timing
 * test (tests/timing/dudect.h), which does not use the rest of testutil.h.
 */
#ifndef OBL_TEST_RNG_H
#define OBL_TEST_RNG_H

#include <stddef.h>
#include <stdint.h>

/* xoshiro256** (Blackman, Vigna 2018): the tests' own reproducible stream,
 * independent of the library's PRG under test. */
typedef struct test_rng {
    uint64_t s[4];
} test_rng;

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

#endif
