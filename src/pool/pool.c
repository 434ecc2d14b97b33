/* SPDX-License-Identifier: MIT */
/*
 * The worker pool of pool.h: one mutex and two condition variables. A job is
 * published under the mutex with a new generation number; every worker
 * takes tasks from a shared counter until none is left and then reports
 * itself done, so each worker sees each generation exactly once and the
 * caller returns only when every worker has left the job.
 */
#include "pool/pool.h"

#include <pthread.h>

#include "common/alloc.h"
#include "common/cores.h"

struct obl_pool {
    obl_alloc_ctx ac;
    pthread_mutex_t mu;
    pthread_cond_t work;  /* a new job or stop */
    pthread_cond_t idle;  /* a worker finished its part of the job */
    pthread_t *tid;
    unsigned workers;     /* threads started (threads - 1) */
    uint64_t gen;         /* job number, incremented per job */
    unsigned done;        /* workers finished with job gen */
    int stop;
    obl_pool_fn fn;       /* the current job */
    void *arg;
    size_t n, next;       /* tasks, next task to hand out */
    size_t err_task;      /* lowest failed task, n if none */
    obl_err err;
};

/* Takes and runs tasks of the current job until none is left. */
static void pool_drain(obl_pool *p)
{
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t t = p->next;
        if (t < p->n)
            p->next = t + 1;
        obl_pool_fn fn = p->fn;
        void *arg = p->arg;
        size_t n = p->n;
        pthread_mutex_unlock(&p->mu);
        if (t >= n)
            return;
        obl_err e = fn(arg, t);
        if (e != OBL_OK) {
            pthread_mutex_lock(&p->mu);
            if (t < p->err_task) {
                p->err_task = t;
                p->err = e;
            }
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static void *pool_worker(void *vp)
{
    obl_pool *p = (obl_pool *)vp;
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->gen == seen && !p->stop)
            pthread_cond_wait(&p->work, &p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        pool_drain(p);
        pthread_mutex_lock(&p->mu);
        if (++p->done == p->workers)
            pthread_cond_signal(&p->idle);
        pthread_mutex_unlock(&p->mu);
    }
}

/* see pool/pool.h */
unsigned obl_pool_cores(void)
{
    unsigned c = obl_cores();
    return c > OBL_POOL_MAX_THREADS ? OBL_POOL_MAX_THREADS : c;
}

/* Sets stop, wakes and joins the first `started` workers. */
static void pool_stop(obl_pool *p, unsigned started)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < started; i++)
        pthread_join(p->tid[i], NULL);
}

static void pool_free(obl_pool *p)
{
    obl_alloc_ctx ac = p->ac;
    pthread_cond_destroy(&p->idle);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    obl_free(&ac, p->tid, (size_t)p->workers * sizeof(pthread_t) + 1);
    obl_free(&ac, p, sizeof *p);
}

/* see pool/pool.h */
obl_err obl_pool_create(obl_pool **out, unsigned threads, const obl_allocator *alloc)
{
    if (!out || threads > OBL_POOL_MAX_THREADS)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, alloc);
    obl_pool *p = (obl_pool *)obl_alloc(&ac, sizeof *p, 64);
    if (!p)
        return OBL_ERR_NOMEM;
    p->ac = ac;
    p->workers = (threads ? threads : obl_pool_cores()) - 1;
    p->tid = (pthread_t *)obl_alloc(&p->ac, (size_t)p->workers * sizeof(pthread_t) + 1, 8);
    if (!p->tid) {
        obl_free(&ac, p, sizeof *p); /* not &p->ac: the free wipes p first */
        return OBL_ERR_NOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->idle, NULL);
    for (unsigned i = 0; i < p->workers; i++) {
        if (pthread_create(&p->tid[i], NULL, pool_worker, p) != 0) {
            pool_stop(p, i);
            pool_free(p);
            return OBL_ERR_IO;
        }
    }
    *out = p;
    return OBL_OK;
}

/* see pool/pool.h */
obl_err obl_pool_run(obl_pool *p, size_t n, obl_pool_fn fn, void *arg)
{
    if (!p || !fn)
        return OBL_ERR_INVALID_ARG;
    if (n == 0)
        return OBL_OK;
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->next = 0;
    p->err_task = n;
    p->err = OBL_OK;
    p->done = 0;
    p->gen++;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    pool_drain(p);
    pthread_mutex_lock(&p->mu);
    while (p->done < p->workers)
        pthread_cond_wait(&p->idle, &p->mu);
    obl_err e = p->err;
    p->fn = NULL;
    pthread_mutex_unlock(&p->mu);
    return e;
}

/* see pool/pool.h */
unsigned obl_pool_threads(const obl_pool *p)
{
    return p ? p->workers + 1 : 0;
}

/* see pool/pool.h */
void obl_pool_destroy(obl_pool *p)
{
    if (!p)
        return;
    pool_stop(p, p->workers);
    pool_free(p);
}
