/* SPDX-License-Identifier: MIT */
/*
 * A bulk build (obl_omap_build, obl/omap.h): 20000 pairs at once, far
 * faster than as many puts; then a few lookups.
 * Build: cc bulk_build.c $(pkg-config --cflags --libs obl)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <obl/omap.h>

#define N 20000

int main(void)
{
    uint64_t *keys = malloc(N * sizeof(uint64_t)), *values = malloc(N * sizeof(uint64_t));
    if (!keys || !values)
        return 1;
    for (uint64_t i = 0; i < N; i++) {
        keys[i] = i * 0x9e3779b97f4a7c15ULL; /* distinct keys */
        values[i] = i;
    }
    obl_omap_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = N; /* public */
    p.key_size = 8;
    p.value_size = 8;
    obl_omap *m = NULL;
    obl_err e = obl_omap_build(&m, &p, keys, values, N);
    if (e != OBL_OK) {
        fprintf(stderr, "obl_omap_build: %s\n", obl_strerror(e));
        return 1;
    }
    uint64_t hits = 0;
    for (uint64_t i = 0; i < N && e == OBL_OK; i += N / 10) {
        uint64_t v = 0, found = 0;
        e = obl_omap_get(m, &keys[i], &v, &found);
        hits += found && v == i;
    }
    printf("bulk build: %d pairs, %" PRIu64 " of 10 lookups right\n", N, hits);
    obl_omap_destroy(m);
    free(keys);
    free(values);
    return e == OBL_OK && hits == 10 ? 0 : 1;
}
