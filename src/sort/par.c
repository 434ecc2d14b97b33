/* SPDX-License-Identifier: MIT */
/*
 * Fork-join helpers (par.h): a thread per chunk, joined before return.
 */
#include <pthread.h>

#include "sort/par.h"

#define PAR_MAX 64

typedef struct par_range {
    obl_par_range_fn fn;
    void *ctx;
    size_t lo, hi;
} par_range;

static void *par_range_main(void *arg)
{
    par_range *r = arg;
    r->fn(r->ctx, r->lo, r->hi);
    return NULL;
}

/* see par.h */
void obl_par_for(unsigned threads, size_t n, size_t grain, obl_par_range_fn fn, void *ctx)
{
    if (threads > PAR_MAX)
        threads = PAR_MAX;
    if (grain == 0)
        grain = 1;
    size_t chunks = (n + grain - 1) / grain;
    if (threads > chunks)
        threads = (unsigned)chunks;
    if (threads <= 1) {
        fn(ctx, 0, n);
        return;
    }
    par_range r[PAR_MAX];
    pthread_t tid[PAR_MAX];
    int started[PAR_MAX];
    size_t per = (chunks + threads - 1) / threads * grain;
    for (unsigned t = 0; t < threads; t++) {
        size_t lo = per * t, hi = lo + per;
        r[t] = (par_range){fn, ctx, lo < n ? lo : n, hi < n ? hi : n};
    }
    for (unsigned t = 1; t < threads; t++)
        started[t] = pthread_create(&tid[t], NULL, par_range_main, &r[t]) == 0;
    fn(ctx, r[0].lo, r[0].hi);
    for (unsigned t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else /* could not start: run it here */
            fn(ctx, r[t].lo, r[t].hi);
    }
}

typedef struct par_task {
    obl_par_task_fn fn;
    void *ctx;
} par_task;

static void *par_task_main(void *arg)
{
    par_task *t = arg;
    t->fn(t->ctx);
    return NULL;
}

/* see par.h */
void obl_par_two(obl_par_task_fn a, void *actx, obl_par_task_fn b, void *bctx)
{
    par_task ta = {a, actx};
    pthread_t tid;
    int started = pthread_create(&tid, NULL, par_task_main, &ta) == 0;
    b(bctx);
    if (started)
        pthread_join(tid, NULL);
    else
        a(actx);
}
