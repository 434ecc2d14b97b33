/* SPDX-License-Identifier: MIT */
/*
 * An oblivious map (UMAP, obl/omap.h) with 8-byte keys and 32-byte values:
 * put, get and erase each make the same memory accesses whether the key is
 * present or not; whether it was found comes back as a 0/1 output.
 * Build: cc map.c $(pkg-config --cflags --libs obl)
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <obl/omap.h>

int main(void)
{
    obl_omap_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = 1000; /* public: most entries held at once */
    p.key_size = 8;
    p.value_size = 32;
    obl_omap *m = NULL;
    obl_err e = obl_omap_create(&m, &p);
    if (e != OBL_OK) {
        fprintf(stderr, "obl_omap_create: %s\n", obl_strerror(e));
        return 1;
    }
    uint64_t key = 42, existed = 0, found = 0, fails = 0;
    char value[32] = "the answer", out[32];
    e = obl_omap_put(m, &key, value, &existed);
    fails += e != OBL_OK || existed;
    e = obl_omap_get(m, &key, out, &found);
    fails += e != OBL_OK || !found || memcmp(out, value, sizeof(value)) != 0;
    e = obl_omap_erase(m, &key, &existed);
    fails += e != OBL_OK || !existed;
    e = obl_omap_get(m, &key, out, &found); /* a miss costs what a hit does */
    fails += e != OBL_OK || found;
    printf("map: put, get, erase, get: %s (%" PRIu64 " failed)\n", fails ? "wrong" : "ok",
           fails);
    obl_omap_destroy(m);
    return fails ? 1 : 0;
}
