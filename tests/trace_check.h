/* SPDX-License-Identifier: MIT */
/*
 * The trace-equality check of the obliviousness tests (common/trace.h): a
 * CHECK that two traces are equal which, when they differ, names the first
 * event that differs after the caller's label. For tests that include
 * common/trace.h and testutil.h; a macro, so that the CHECK names the
 * test's line.
 */
#ifndef OBL_TESTS_TRACE_CHECK_H
#define OBL_TESTS_TRACE_CHECK_H

#include <stdio.h>

#include "common/trace.h"
#include "testutil.h"

/* CHECKs obl_trace_equal(a, b); else prints "  <label>: traces differ at
 * event i of n", the label given as printf format and arguments. */
#define CHECK_TRACES_EQUAL(a, b, ...)                                                    \
    do {                                                                                 \
        int traces_equal = obl_trace_equal((a), (b));                                    \
        CHECK(traces_equal);                                                             \
        if (!traces_equal) {                                                             \
            fputs("  ", stderr);                                                         \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, ": traces differ at event %zu of %zu\n",                     \
                    obl_trace_first_diff((a), (b)), (a)->n);                             \
        }                                                                                \
    } while (0)

#endif
