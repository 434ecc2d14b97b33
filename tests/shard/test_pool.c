/* SPDX-License-Identifier: MIT */
/*
 * Tests of the worker pool (src/pool): every task of a job runs exactly
 * once for T = 1 .. 5 threads and n = 0 .. 200 tasks, jobs follow each
 * other on one pool, the lowest failed task's error is returned, bad input
 * and allocation failure. In the ct build this program also runs under
 * helgrind (tests/shard/tests.cmake) to check the pool's locking.
 */
#include <obl/obl.h>

#include "pool/pool.h"
#include "testutil.h"

typedef struct {
    unsigned *hits;     /* per task; each task writes only its own cell */
    size_t fail_from;   /* tasks >= this fail with OBL_ERR_RANGE, others OK */
} job;

static obl_err count_task(void *arg, size_t t)
{
    job *j = (job *)arg;
    j->hits[t]++;
    return t >= j->fail_from ? (t % 2 ? OBL_ERR_RANGE : OBL_ERR_FULL) : OBL_OK;
}

static void run_jobs(unsigned threads)
{
    obl_pool *p = NULL;
    CHECK(obl_pool_create(&p, threads, NULL) == OBL_OK);
    if (!p)
        return;
    CHECK(obl_pool_threads(p) == (threads ? threads : obl_pool_cores()));
    unsigned hits[200];
    size_t max_n = T.ct ? 40 : 200;
    for (size_t n = 0; n <= max_n; n += (n < 10 ? 1 : 17)) {
        memset(hits, 0, sizeof hits);
        job j = {hits, (size_t)-1};
        CHECK(obl_pool_run(p, n, count_task, &j) == OBL_OK);
        for (size_t t = 0; t < n; t++)
            CHECK(hits[t] == 1);
        if (n > 3) { /* tasks 3.. fail: task 3 is odd, so RANGE */
            memset(hits, 0, sizeof hits);
            j.fail_from = 3;
            CHECK(obl_pool_run(p, n, count_task, &j) == OBL_ERR_RANGE);
            for (size_t t = 0; t < n; t++)
                CHECK(hits[t] == 1);
        }
    }
    obl_pool_destroy(p);
}

static void bad_input(void)
{
    obl_pool *p = (obl_pool *)&p;
    CHECK(obl_pool_create(NULL, 2, NULL) == OBL_ERR_INVALID_ARG);
    CHECK(obl_pool_create(&p, OBL_POOL_MAX_THREADS + 1, NULL) == OBL_ERR_INVALID_ARG);
    CHECK(obl_pool_run(NULL, 1, count_task, NULL) == OBL_ERR_INVALID_ARG);
    obl_pool_destroy(NULL);
    CHECK(obl_pool_threads(NULL) == 0);
    for (long budget = 0; budget < 2; budget++) {
        test_failing_alloc f = {budget, 0, 0};
        obl_allocator a = {test_fa_alloc, test_fa_free, &f};
        p = (obl_pool *)&p;
        CHECK(obl_pool_create(&p, 3, &a) == OBL_ERR_NOMEM);
        CHECK(p == NULL);
        CHECK(f.live == 0);
    }
    test_failing_alloc f = {2, 0, 0};
    obl_allocator a = {test_fa_alloc, test_fa_free, &f};
    CHECK(obl_pool_create(&p, 3, &a) == OBL_OK);
    obl_pool_destroy(p);
    CHECK(f.live == 0);
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_pool");
    for (unsigned t = 0; t <= 5; t++)
        run_jobs(t);
    bad_input();
    return test_done("test_pool");
}
