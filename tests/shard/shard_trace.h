/* SPDX-License-Identifier: MIT */
/*
 * The trace-equality check of the sharded map's tests (test_shard_edges,
 * test_shard_keys): for S = 1, 2, 3 and get (kind 0) and mixed (kind 3)
 * batches, the trace of request set 0 equals those of sets 1 .. nsets - 1
 * (other secret requests, the same public sizes), and the control, set 0
 * with B + 1 requests, differs. The test supplies the batch: a fresh map
 * with the scan store alone and T = 1 (the trace sink is the calling
 * thread's), the requests of set `set`, traced into t.
 */
#ifndef OBL_TESTS_SHARD_TRACE_H
#define OBL_TESTS_SHARD_TRACE_H

#include "common/trace.h"
#include "testutil.h"
#include "trace_check.h"

#define SHARD_TRACE_MAX_SETS 8

typedef void (*shard_trace_batch_fn)(obl_trace *t, unsigned S, size_t B, int kind, int set);

static void shard_trace_check(shard_trace_batch_fn batch, int nsets, size_t B)
{
    if (!obl_trace_enabled()) {
        test_skip("the library was built without OBL_TRACE");
        return;
    }
    if (nsets < 2 || nsets > SHARD_TRACE_MAX_SETS)
        abort();
    for (unsigned S = 1; S <= 3; S++)
        for (int kind = 0; kind <= 3; kind += 3) {
            obl_trace t[SHARD_TRACE_MAX_SETS + 1];
            for (int i = 0; i <= nsets; i++)
                CHECK(obl_trace_init(&t[i], 1u << 22));
            for (int i = 0; i < nsets; i++)
                batch(&t[i], S, B, kind, i);
            batch(&t[nsets], S, B + 1, kind, 0); /* the control */
            CHECK(t[0].n > 0 && !t[0].overflow);
            for (int i = 1; i < nsets; i++)
                CHECK_TRACES_EQUAL(&t[0], &t[i], "S %u kind %d set %d", S, kind, i);
            CHECK(!obl_trace_equal(&t[0], &t[nsets]));
            for (int i = 0; i <= nsets; i++)
                obl_trace_free(&t[i]);
        }
}

#endif
