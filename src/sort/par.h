/* SPDX-License-Identifier: MIT */
/*
 * Fork-join helpers for the record sorts (pthreads, no pool, no global
 * state): a call creates its threads and joins them before returning. When
 * a thread cannot be created the work runs on the calling thread, so one
 * thread always works. Which thread runs what depends on public sizes only.
 */
#ifndef OBL_SRC_SORT_PAR_H
#define OBL_SRC_SORT_PAR_H

#include <stddef.h>

/* fn(ctx, lo, hi) over [0, n), split into `threads` contiguous chunks whose
 * bounds are multiples of `grain` (except the last). */
typedef void (*obl_par_range_fn)(void *ctx, size_t lo, size_t hi);
void obl_par_for(unsigned threads, size_t n, size_t grain, obl_par_range_fn fn, void *ctx);

/* a(actx) on a new thread and b(bctx) on this one, then join. */
typedef void (*obl_par_task_fn)(void *ctx);
void obl_par_two(obl_par_task_fn a, void *actx, obl_par_task_fn b, void *bctx);

#endif /* OBL_SRC_SORT_PAR_H */
