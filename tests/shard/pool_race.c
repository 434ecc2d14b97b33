/* SPDX-License-Identifier: MIT */
/*
 * The negative control of the helgrind checks (tests/shard/tests.cmake):
 * two tasks of one job on the pool's two threads meet at a barrier, so
 * that both run at once, then add to one shared counter without a lock, a
 * data race that helgrind must report. Without the barrier, valgrind's
 * serialised schedule lets one thread take every task, or orders the tasks
 * through the pool's mutex, and helgrind sees no race: a clean run shows
 * the absence of races in the schedules it saw, not in every schedule.
 */
#include <pthread.h>
#include <stdio.h>

#include <obl/obl.h>

#include "pool/pool.h"

typedef struct {
    pthread_barrier_t meet;
    unsigned long shared;
} race;

static obl_err racy_task(void *arg, size_t t)
{
    race *r = (race *)arg;
    pthread_barrier_wait(&r->meet); /* both tasks run from here on */
    for (int i = 0; i < 1000; i++)
        r->shared += t + 1; /* unsynchronised read-modify-write */
    return OBL_OK;
}

int main(void)
{
    obl_pool *p = NULL;
    race r = {.shared = 0};
    if (pthread_barrier_init(&r.meet, NULL, 2) != 0)
        return 2;
    if (obl_pool_create(&p, 2, NULL) != OBL_OK)
        return 2;
    obl_err e = obl_pool_run(p, 2, racy_task, &r);
    obl_pool_destroy(p);
    pthread_barrier_destroy(&r.meet);
    printf("pool_race: %lu\n", r.shared);
    return e == OBL_OK ? 0 : 2;
}
