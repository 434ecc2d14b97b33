/* SPDX-License-Identifier: MIT */
/*
 * An oblivious array (RORAM, obl/oram.h): 4096 values of 8 bytes whose
 * reads and writes show the same memory accesses whatever the index.
 * Build: cc oblivious_array.c $(pkg-config --cflags --libs obl)
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <obl/oram.h>

int main(void)
{
    obl_roram_params p;
    memset(&p, 0, sizeof(p));
    p.n = 4096;          /* public: the number of values */
    p.value_size = 8;    /* public: bytes per value */
    obl_roram *a = NULL; /* random: NULL, so seeded from getrandom(2) */
    obl_err e = obl_roram_create(&a, &p);
    if (e != OBL_OK) {
        fprintf(stderr, "obl_roram_create: %s\n", obl_strerror(e));
        return 1;
    }
    for (uint64_t i = 0; i < 4096; i += 3) { /* the indices are secret */
        uint64_t v = i * i;
        if ((e = obl_roram_write(a, i, &v)) != OBL_OK)
            break;
    }
    uint64_t sum = 0;
    for (uint64_t i = 0; i < 4096 && e == OBL_OK; i += 3) {
        uint64_t v;
        e = obl_roram_read(a, i, &v);
        sum += v == i * i;
    }
    printf("oblivious array: %" PRIu64 " of 1366 values read back, %zu bytes\n", sum,
           obl_roram_memory_bytes(a));
    obl_roram_destroy(a);
    return e == OBL_OK && sum == 1366 ? 0 : 1;
}
