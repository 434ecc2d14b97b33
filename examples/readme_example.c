/* SPDX-License-Identifier: MIT */
/* The README's example: an oblivious array and an oblivious map. */
#include <obl/omap.h>
#include <obl/oram.h>
#include <stdint.h>
#include <stdio.h>

int main(void) {
    /* An array of 2^16 values of 8 bytes: which index is read stays hidden. */
    obl_roram_params ap = {.n = 1 << 16, .value_size = 8};
    obl_roram *arr;
    if (obl_roram_create(&arr, &ap) != OBL_OK) return 1;
    uint64_t v = 42, got = 0;
    obl_err e = obl_roram_write(arr, 1234, &v);
    if (e == OBL_OK) e = obl_roram_read(arr, 1234, &got);
    printf("array[1234] = %llu (%s)\n", (unsigned long long)got, obl_strerror(e));
    obl_roram_destroy(arr);

    /* A map of 8-byte keys to 56-byte values: key, hit/miss and op stay hidden. */
    obl_omap_params mp = {.capacity = 1000, .key_size = 8, .value_size = 56};
    obl_omap *map;
    if (obl_omap_create(&map, &mp) != OBL_OK) return 1;
    uint64_t key = 7, found = 0;
    char val[56] = "seven", out[56] = {0};
    e = obl_omap_put(map, &key, val, NULL);
    if (e == OBL_OK) e = obl_omap_get(map, &key, out, &found);
    printf("map[7] = \"%s\", found = %llu (%s)\n", out, (unsigned long long)found,
           obl_strerror(e));
    obl_omap_destroy(map);
    return e == OBL_OK && found == 1 && got == 42 ? 0 : 1;
}
