/* SPDX-License-Identifier: MIT */
/*
 * The access-trace recorder and comparison helpers of trace.h.
 */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

#ifdef OBL_TESTING

#ifdef OBL_TRACE
_Thread_local obl_trace *obl_trace_sink;

void obl_trace_record(uint32_t region, uint32_t kind, uint64_t offset, uint64_t len)
{
    obl_trace *t = obl_trace_sink;
    if (t->n == t->cap) {
        t->overflow = 1;
        return;
    }
    obl_trace_ev *e = &t->ev[t->n++];
    e->region = region;
    e->kind = kind;
    e->offset = offset;
    e->len = len;
}
#endif

int obl_trace_init(obl_trace *t, size_t cap)
{
    t->ev = calloc(cap ? cap : 1, sizeof(*t->ev));
    t->n = 0;
    t->cap = t->ev ? cap : 0;
    t->overflow = 0;
    return t->ev != NULL;
}

void obl_trace_free(obl_trace *t)
{
    free(t->ev);
    t->ev = NULL;
    t->n = t->cap = 0;
}

void obl_trace_reset(obl_trace *t)
{
    t->n = 0;
    t->overflow = 0;
}

int obl_trace_equal(const obl_trace *a, const obl_trace *b)
{
    if (a->overflow || b->overflow || a->n != b->n)
        return 0;
    return a->n == 0 || memcmp(a->ev, b->ev, a->n * sizeof(*a->ev)) == 0;
}

size_t obl_trace_first_diff(const obl_trace *a, const obl_trace *b)
{
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a->ev[i], &b->ev[i], sizeof(a->ev[i])) != 0)
            return i;
    return n;
}

void obl_trace_begin(obl_trace *t)
{
#ifdef OBL_TRACE
    obl_trace_sink = t;
#else
    (void)t;
#endif
}

void obl_trace_end(void)
{
#ifdef OBL_TRACE
    obl_trace_sink = NULL;
#endif
}

int obl_trace_enabled(void)
{
#ifdef OBL_TRACE
    return 1;
#else
    return 0;
#endif
}
#endif /* OBL_TESTING */
