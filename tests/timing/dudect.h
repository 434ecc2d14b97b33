/* SPDX-License-Identifier: MIT */
/*
 * A dudect-style timing test (Reparaz, Balasch, Verbauwhede, "Dude, is my
 * code constant time?", DATE 2017): every measurement times one call with
 * an input of class 0 (a fixed secret) or class 1 (random secrets), the
 * classes drawn at random and interleaved; Welch's t-test compares the
 * classes' times, once on all measurements and once per crop (the
 * measurements below a percentile of the first batch, as dudect does), and
 * the largest |t| is the result. |t| > 10 means a leak beyond doubt.
 *
 * An operation under test is a dd_op: setup creates the structure, gen
 * writes one input of a class (called for a whole batch before it is
 * timed, so that drawing inputs costs nothing inside the timed region),
 * measure runs one call on an input and returns its cycles (DD_T0 / DD_T1
 * around the call only; the caller's untimed bookkeeping before and after
 * must not depend on the class: docs/timing.md); errors counts the calls
 * that failed (an error is public and may take another path, so a run
 * with errors proves nothing).
 */
#ifndef OBL_TESTS_DUDECT_H
#define OBL_TESTS_DUDECT_H

#include <stddef.h>
#include <stdint.h>

#include "../test_rng.h" /* the test's reproducible random stream */

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
/* lfence orders rdtsc after the loads before it (the call's arguments);
 * rdtscp waits for the call's instructions to finish. */
static inline uint64_t dd_t0(void)
{
    __asm__ volatile("" ::: "memory"); /* the call's inputs are loaded before */
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}
static inline uint64_t dd_t1(void)
{
    unsigned aux;
    uint64_t t = __rdtscp(&aux);
    _mm_lfence();
    __asm__ volatile("" ::: "memory");
    return t;
}
#else
#include <time.h>
static inline uint64_t dd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static inline uint64_t dd_t0(void) { return dd_now_ns(); }
static inline uint64_t dd_t1(void) { return dd_now_ns(); }
#endif


typedef struct dd_op {
    const char *name;
    size_t in_size;                          /* bytes of one input */
    void *(*setup)(uint64_t seed);           /* NULL on failure */
    void (*gen)(void *st, int cls, void *in, test_rng *r);
    uint64_t (*measure)(void *st, void *in); /* cycles of one call */
    uint64_t (*errors)(const void *st);      /* calls that returned an error */
    void (*teardown)(void *st);
} dd_op;

/* Number of crops (percentiles of the first batch) besides the uncropped
 * test: dudect's thresholds 1 - 0.5^(10 (k + 1) / DD_CROPS). */
#define DD_CROPS 20

typedef struct dd_result {
    double max_t;       /* largest |t| over the tests with enough samples */
    int max_test;       /* 0 uncropped, k: crop k */
    uint64_t n[2];      /* measurements per class in that test */
    double mean[2];     /* mean cycles per class in that test */
    uint64_t errors;    /* op->errors after the run (setup included) */
    int failed_setup;
} dd_result;

/* Runs op: one warm-up batch (sets the crops; not counted), then `batches`
 * batches of `batch` measurements. */
dd_result dd_run(const dd_op *op, uint64_t seed, uint64_t batch, uint64_t batches);

#endif /* OBL_TESTS_DUDECT_H */
