/* SPDX-License-Identifier: MIT */
/*
 * Private helpers of the record sorts (obl/sort.h): an array of records of
 * `words` 64-bit words each, the key in the first kw words (1 or 2, the
 * first most significant); constant-time key comparison and record swap.
 */
#ifndef OBL_SRC_SORT_REC_H
#define OBL_SRC_SORT_REC_H

#include <stddef.h>
#include <stdint.h>

#include <obl/sort.h>

#include "ct.h"
#include "common/alloc.h"
#include "common/trace.h"

/* The trace hook (tests only): record i of the array is touched. */
#define REC_TOUCH(i) OBL_TRACE_TOUCH(OBL_TRACE_REGION_SORT, OBL_TRACE_RW, (i), 1)

/* An array of records. Public: every field but the memory it points to. */
typedef struct rec_arr {
    uint64_t *w;       /* n * words words */
    size_t n, words, kw;
    unsigned threads;
} rec_arr;

OBL_INLINE uint64_t *rec_at(const rec_arr *a, size_t i)
{
    return a->w + i * a->words;
}

/* 1 if key(x) > key(y), else 0. Secret: the keys. Public: kw. */
OBL_INLINE uint64_t rec_key_gt(const uint64_t *x, const uint64_t *y, size_t kw)
{
    if (kw == 1) /* public */
        return obl_ct_gt64(x[0], y[0]);
    return obl_ct_gt64(x[0], y[0]) | (obl_ct_eq64(x[0], y[0]) & obl_ct_gt64(x[1], y[1]));
}

/* Swaps `words` words of x and y where mask is all ones; mask 0: no change.
 * Secret: mask, x, y. Public: words. */
OBL_INLINE void rec_cswap(uint64_t mask, uint64_t *x, uint64_t *y, size_t words)
{
    for (size_t k = 0; k < words; k++) {
        uint64_t t = mask & (x[k] ^ y[k]);
        x[k] ^= t;
        y[k] ^= t;
    }
}

/* Checks a sort call's arguments and fills a; OBL_OK or the error. */
obl_err rec_arr_init(rec_arr *a, void *recs, size_t n, const obl_sort_params *p);

/* Compaction and expansion with the exclusive prefix counts E of the flags
 * (E[i] = flags set in [0, i), relative to the array). compact.c. */
void rec_compact(const rec_arr *a, const uint32_t *E);
void rec_expand(const rec_arr *a, const uint32_t *E);

/* Sorts a's records ascending with the bitonic network (bitonic.c). */
void rec_sort_bitonic(const rec_arr *a);

struct obl_prg;

/* ORShuffle of a's records; E holds a->n scratch counts (shuffle.c). */
obl_err rec_shuffle(const rec_arr *a, uint32_t *E, struct obl_prg *g);

/* Shuffle-then-sort of a's records: ORShuffle of the records tagged with
 * their original indices, then the non-oblivious merge sort with those
 * indices as tie-breakers; E holds a->n counts, scratch
 * rec_sort_scratch_bytes bytes (8-aligned) (shuffle.c). */
size_t rec_sort_scratch_bytes(size_t n, size_t words);
void rec_sort_shuffled(const rec_arr *a, uint32_t *E, struct obl_prg *g, void *scratch);

#endif /* OBL_SRC_SORT_REC_H */
