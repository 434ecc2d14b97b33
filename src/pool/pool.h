/* SPDX-License-Identifier: MIT */
/*
 * A fixed pool of worker threads (POSIX threads) for the batched layer: the
 * caller chooses the number of threads T at creation (0 = obl_pool_cores());
 * obl_pool_run hands out the tasks 0 .. n-1 of one job to the T threads (the
 * calling thread is one of them) and returns when all have finished. No
 * global state: each structure owns its pool. A pool serves one job at a
 * time; obl_pool_run is not reentrant and not to be called from two threads
 * at once.
 *
 * Which thread runs which task depends on timing, so a task must not touch
 * secret-dependent addresses of another task's memory: tasks own disjoint
 * data (one shard, one slice of a scan).
 */
#ifndef OBL_SRC_POOL_POOL_H
#define OBL_SRC_POOL_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>

/* Most threads a pool starts (a guard against absurd requests). */
#define OBL_POOL_MAX_THREADS 1024u

typedef struct obl_pool obl_pool;

/* A task: fn(arg, task) for task in [0, n). Returns OBL_OK or an error; the
 * job's result is the error of the lowest-numbered failed task. */
typedef obl_err (*obl_pool_fn)(void *arg, size_t task);

/* Starts threads - 1 workers (threads = 0: obl_pool_cores()). Errors:
 * INVALID_ARG (out NULL, threads > OBL_POOL_MAX_THREADS), NOMEM, IO (a
 * thread could not be started; nothing is left running). */
obl_err obl_pool_create(obl_pool **out, unsigned threads, const obl_allocator *alloc)
    OBL_WARN_UNUSED;

/* Runs the job and waits for it. n = 0 returns OBL_OK at once. */
obl_err obl_pool_run(obl_pool *p, size_t n, obl_pool_fn fn, void *arg);

/* The number of threads that run a job (workers + the caller). */
unsigned obl_pool_threads(const obl_pool *p);

/* The CPUs this process may run on (obl_cores, common/cores.h: its
 * affinity mask), at most OBL_POOL_MAX_THREADS. */
unsigned obl_pool_cores(void);

/* Stops and joins the workers, frees the pool. NULL is fine. */
void obl_pool_destroy(obl_pool *p);

#endif /* OBL_SRC_POOL_POOL_H */
