/* SPDX-License-Identifier: MIT */
/*
 * Tests of the common layer: error codes and their names, the allocation
 * wrapper (alignment, zeroing, accounting, the caller's allocator and its
 * failure), size-overflow helpers, and the trace recorder's own behaviour
 * (overflow marks a trace incomplete, so it never compares equal), and
 * the one core count (common/cores.h) that a thread count of 0 takes.
 */
#define _GNU_SOURCE
#include <sched.h>

#include <obl/obl.h>

#include "common/alloc.h"
#include "common/cores.h"
#include "common/trace.h"
#include "oram/nroram_internal.h"
#include "pool/pool.h"
#include "testutil.h"

static void test_errors(void)
{
    for (int e = 0; e < OBL_ERR_COUNT; e++) {
        const char *m = obl_strerror((obl_err)e), *n = obl_err_name((obl_err)e);
        CHECK(m && *m && n && !strncmp(n, "OBL_", 4));
        for (int f = 0; f < e; f++)
            CHECK(strcmp(n, obl_err_name((obl_err)f)) != 0);
    }
    CHECK(!strcmp(obl_err_name(OBL_OK), "OBL_OK"));
    CHECK(!strcmp(obl_err_name(OBL_ERR_STASH_OVERFLOW), "OBL_ERR_STASH_OVERFLOW"));
    CHECK(!strcmp(obl_err_name((obl_err)999), "OBL_ERR_UNKNOWN"));
    CHECK(obl_strerror((obl_err)-1) != NULL);
    /* the numbers are ABI: pin them */
    CHECK_EQ_U64(OBL_ERR_NOMEM, 2);
    CHECK_EQ_U64(OBL_ERR_STASH_OVERFLOW, 6);
    CHECK_EQ_U64(OBL_ERR_FULL, 7);
    CHECK(!strcmp(obl_version(), OBL_VERSION_STRING));
    const char *v = obl_ct_variant();
    CHECK(!strcmp(v, "avx512") || !strcmp(v, "avx2") || !strcmp(v, "portable"));
}

static void test_alloc(void)
{
    obl_alloc_ctx c;
    obl_alloc_init(&c, NULL);
    size_t aligns[] = {1, 8, 16, 64, 4096};
    for (size_t i = 0; i < 5; i++) {
        unsigned char *p = obl_alloc(&c, 1000 + i, aligns[i]);
        CHECK(p != NULL);
        CHECK(((uintptr_t)p & (aligns[i] - 1)) == 0);
        int zero = 1;
        for (size_t j = 0; j < 1000 + i; j++)
            zero &= p[j] == 0;
        CHECK(zero);
        CHECK_EQ_U64(c.bytes, 1000 + i);
        obl_free(&c, p, 1000 + i);
        CHECK_EQ_U64(c.bytes, 0);
    }
    obl_free(&c, NULL, 10); /* NULL ok */

    test_failing_alloc fa = {.budget = 2};
    obl_allocator a = {test_fa_alloc, test_fa_free, &fa};
    obl_alloc_init(&c, &a);
    void *p1 = obl_alloc(&c, 10, 8), *p2 = obl_alloc(&c, 20, 8), *p3 = obl_alloc(&c, 30, 8);
    CHECK(p1 && p2 && !p3);
    CHECK_EQ_U64(fa.live, 2);
    CHECK_EQ_U64(c.bytes, 30);
    obl_free(&c, p1, 10);
    obl_free(&c, p2, 20);
    CHECK_EQ_U64(fa.live, 0);
    CHECK_EQ_U64(fa.live_bytes, 0);

    size_t out;
    CHECK(obl_mul_ok(3, 5, &out) && out == 15);
    CHECK(!obl_mul_ok(SIZE_MAX / 2 + 1, 2, &out));
    CHECK(obl_add_ok(3, 5, &out) && out == 8);
    CHECK(!obl_add_ok(SIZE_MAX, 1, &out));
}

static void test_trace_helpers(void)
{
    obl_trace a, b;
    CHECK(obl_trace_init(&a, 4) && obl_trace_init(&b, 4));
    CHECK(obl_trace_equal(&a, &b)); /* two empty traces */
    if (obl_trace_enabled()) {
        obl_trace_begin(&a);
        for (int i = 0; i < 6; i++)
            OBL_TRACE_TOUCH(1, OBL_TRACE_READ, i, 1);
        obl_trace_end();
        CHECK(a.overflow && a.n == 4);
        obl_trace_begin(&b);
        for (int i = 0; i < 6; i++)
            OBL_TRACE_TOUCH(1, OBL_TRACE_READ, i, 1);
        obl_trace_end();
        CHECK(!obl_trace_equal(&a, &b)); /* incomplete traces never compare equal */
        obl_trace_reset(&a);
        obl_trace_reset(&b);
        obl_trace_begin(&a);
        OBL_TRACE_TOUCH(1, OBL_TRACE_READ, 5, 1);
        obl_trace_end();
        obl_trace_begin(&b);
        OBL_TRACE_TOUCH(1, OBL_TRACE_WRITE, 5, 1);
        obl_trace_end();
        CHECK(!obl_trace_equal(&a, &b)); /* read vs write differs */
        CHECK_EQ_U64(obl_trace_first_diff(&a, &b), 0);
    }
    obl_trace_free(&a);
    obl_trace_free(&b);
}

/* The pool's and the tree build's defaults, with obl_cores() = want. */
static void check_core_users(unsigned want)
{
    CHECK_EQ_U64(obl_cores(), want);
    CHECK_EQ_U64(obl_pool_cores(), want);
    CHECK_EQ_U64(nr_build_threads(0), want);
    CHECK_EQ_U64(nr_build_threads(3), 3);
    obl_pool *p = NULL;
    CHECK(obl_pool_create(&p, 0, NULL) == OBL_OK);
    if (p)
        CHECK_EQ_U64(obl_pool_threads(p), want);
    obl_pool_destroy(p);
}

/* obl_cores() counts the affinity mask: all of it, then (the calling
 * thread pinned to its first CPU, as taskset -c would) one. */
static void test_cores(void)
{
    cpu_set_t all, one;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    check_core_users((unsigned)CPU_COUNT(&all));
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &all))
        first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    check_core_users(1);
    CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
    CHECK_EQ_U64(obl_cores(), (unsigned)CPU_COUNT(&all));
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_common");
    test_errors();
    test_alloc();
    test_trace_helpers();
    test_cores();
    return test_done("test_common");
}
