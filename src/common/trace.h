/* SPDX-License-Identifier: MIT */
/*
 * Access-trace hook, compiled in only when OBL_TRACE is defined (the
 * `obl_traced` library that the tests link). A structure reports every block
 * of its storage it touches as (region, offset, length); tests record two runs
 * with the same public inputs and different secrets and compare the traces.
 *
 * The sink is one thread-local pointer set by the test. It exists only in the
 * test build; the library users link has no trace code and no global state.
 */
#ifndef OBL_SRC_TRACE_H
#define OBL_SRC_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "common/testing.h"

typedef struct obl_trace_ev {
    uint32_t region;   /* which array of the structure (caller-defined id) */
    uint32_t kind;     /* 0 read, 1 write, 2 read+write, 3 prefetch */
    uint64_t offset;   /* byte offset or block index within the region */
    uint64_t len;      /* bytes or blocks */
} obl_trace_ev;

typedef struct obl_trace {
    obl_trace_ev *ev;
    size_t n, cap;
    int overflow;      /* set when cap was reached: the trace is incomplete */
} obl_trace;

/* PREFETCH: a prefetch the code issues itself (a batched access's early
 * prefetch of a path), which reveals its address as a touch would. */
enum { OBL_TRACE_READ = 0, OBL_TRACE_WRITE = 1, OBL_TRACE_RW = 2, OBL_TRACE_PREFETCH = 3 };

/* Region ids: one per kind of storage, so traces of nested structures stay
 * readable. Modules add theirs here. */
enum {
    OBL_TRACE_REGION_CT_TABLE = 1,  /* obl_ct_lookup / obl_ct_store tables */
    OBL_TRACE_REGION_SORT = 2,      /* oblivious sort / compaction arrays */
    OBL_TRACE_REGION_ORAM_TREE = 3, /* tree ORAM buckets */
    OBL_TRACE_REGION_ORAM_STASH = 4,
    OBL_TRACE_REGION_ORAM_SCAN = 5, /* linear-scan base level */
    OBL_TRACE_REGION_MAP = 6
};

#ifdef OBL_TRACE
extern _Thread_local obl_trace *obl_trace_sink;
void obl_trace_record(uint32_t region, uint32_t kind, uint64_t offset, uint64_t len);
#define OBL_TRACE_TOUCH(region, kind, offset, len)                                 \
    do {                                                                           \
        if (obl_trace_sink)                                                        \
            obl_trace_record((uint32_t)(region), (uint32_t)(kind), (uint64_t)(offset), \
                             (uint64_t)(len));                                     \
    } while (0)
#else
#define OBL_TRACE_TOUCH(region, kind, offset, len) ((void)0)
#endif

/* Helpers for tests (trace.c; only in the test build, OBL_TESTING). */
#ifdef OBL_TESTING
int obl_trace_init(obl_trace *t, size_t cap);
void obl_trace_free(obl_trace *t);
void obl_trace_reset(obl_trace *t);
/* 1 if a and b are complete and hold the same events in the same order. */
int obl_trace_equal(const obl_trace *a, const obl_trace *b);
/* Index of the first event that differs (or the shorter length), for messages. */
size_t obl_trace_first_diff(const obl_trace *a, const obl_trace *b);
/* Start/stop recording into t on this thread (no-ops without OBL_TRACE). */
void obl_trace_begin(obl_trace *t);
void obl_trace_end(void);
/* 1 when this library was built with OBL_TRACE. */
int obl_trace_enabled(void);
#endif

#endif /* OBL_SRC_TRACE_H */
