/* SPDX-License-Identifier: MIT */
/*
 * Bitonic sort of fixed-size records by a leading 64-bit key, for any n
 * (Batcher 1968; the recursion for arbitrary n from H. W. Lang's notes on
 * bitonic sorting networks): the scan engine's table build and route-back.
 * The compare-exchange sequence depends on n alone; each exchange is a
 * constant-time compare and a masked swap of the whole record. shard_sort
 * hands keys of one or two words to obl/sort.h (the column network for
 * short records, padded to a power of two) and keeps this network for
 * longer keys and small n.
 */
#include <obl/sort.h>

#include "shard/shard_internal.h"

#include "common/cpu.h"
#include "ct.h"

/* The record network runs the variant the CPU runs (net.c): its masked
 * swaps of whole records take that variant's vectors. The choice is made
 * per call from public CPU facts, as the sort module's (src/sort/dispatch.c). */
static int bs_isa(void)
{
    int v = obl_isa_pick();
    return v < 0 ? OBL_ISA_PORTABLE : v;
}

/* see shard_internal.h */
void shard_bitonic_sort(unsigned char *recs, size_t n, size_t rec_size)
{
    shard_bitonic_sort_words(recs, n, rec_size, 1);
}

/* see shard_internal.h */
void shard_bitonic_sort_words(unsigned char *recs, size_t n, size_t rec_size, size_t kw)
{
    OBL_VARIANT_PICK(shard_net, bs_isa())(recs, n, rec_size, kw, 0);
}

/* see shard_internal.h */
void shard_bitonic_merge_words(unsigned char *recs, size_t n, size_t rec_size, size_t kw)
{
    OBL_VARIANT_PICK(shard_net, bs_isa())(recs, n, rec_size, kw, 1);
}

#define SHARD_SORT_PAR_MIN ((size_t)1 << 14)
/* Below this many records the network here measured faster than obl_sort. */
#define SHARD_SORT_LIB_MIN ((size_t)1 << 13)

/* From here the column network on padded records is used (any n). */
#define SHARD_SORT_COL_MIN ((size_t)1 << 6)

/* obl_sort's and obl_compact's randomness parameter (obl_sort_params):
 * the caller's generator. */
static int shard_sort_random(void *opaque, void *buf, size_t len)
{
    obl_prg_fill((obl_prg *)opaque, buf, len);
    return 0;
}

#define SHARD_COL_MAXC 8 /* obl_sort_columns' limit */

/* Records of kw = 1 or 2 key words and at most SHARD_COL_MAXC columns in
 * all, as columns padded to a power of two: the key, for an unbounded key
 * of one word a pad flag (0 real, 1 pad: pads sort after every real record
 * whatever its key; a bounded key's pads take UINT64_MAX and need no
 * flag), the rest. Wider records stay with the record network: the
 * payload's passes and the padding measured slower. The copies run at
 * public addresses. Returns 0, or -1 with the records unchanged. */
static int shard_sort_cols(unsigned char *recs, size_t n, size_t rec_size, size_t kw,
                           int bounded, unsigned threads, const obl_allocator *alloc,
                           uint64_t *scratch, size_t scratch_bytes)
{
    size_t w = rec_size / 8, kc = kw + (bounded ? 0 : 1), ncol = kc + w - kw, m = 1, bytes;
    if (kc > 2 || ncol > SHARD_COL_MAXC)
        return -1;
    /* one key column and 5 to 7 in all: 8, whose network obl/sort.h runs
     * with constant column counts (the others by its generic loop, which
     * took more instructions at 5 than the constant one at 8) */
    size_t used = ncol;
    if (kc == 1 && ncol > 4)
        ncol = SHARD_COL_MAXC;
    while (m < n)
        m *= 2;
    if (!obl_mul_ok(m, 8 * ncol, &bytes))
        return -1;
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, alloc);
    int own = !scratch || scratch_bytes < bytes; /* public */
    uint64_t *buf = own ? (uint64_t *)obl_alloc(&ac, bytes, 64) : scratch;
    if (!buf)
        return -1;
    uint64_t *cols[SHARD_COL_MAXC];
    for (size_t c = 0; c < ncol; c++)
        cols[c] = buf + c * m;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *r = recs + i * rec_size;
        for (size_t c = 0; c < kw; c++)
            memcpy(&cols[c][i], r + 8 * c, 8);
        if (kc > kw)
            cols[kw][i] = 0;
        for (size_t c = kw; c < w; c++)
            memcpy(&cols[kc + c - kw][i], r + 8 * c, 8);
    }
    for (size_t i = n; i < m; i++)
        for (size_t c = 0; c < used; c++)
            cols[c][i] = c == kw && kc > kw ? 1 : UINT64_MAX;
    for (size_t c = used; c < ncol; c++) /* the padding columns */
        memset(cols[c], 0, 8 * m);
    obl_err e = obl_sort_columns(cols, ncol, kc, m, threads);
    for (size_t i = 0; e == OBL_OK && i < n; i++) {
        unsigned char *r = recs + i * rec_size;
        for (size_t c = 0; c < kw; c++)
            memcpy(r + 8 * c, &cols[c][i], 8);
        for (size_t c = kw; c < w; c++)
            memcpy(r + 8 * c, &cols[kc + c - kw][i], 8);
    }
    if (own)
        obl_free(&ac, buf, bytes);
    return e == OBL_OK ? 0 : -1;
}

/* The network for any key, or the column network for keys of one or two
 * words; bounded: every record's first key word is below UINT64_MAX. */
static void shard_sort_any(unsigned char *recs, size_t n, size_t rec_size, size_t kw,
                           int bounded, unsigned threads, obl_prg *g,
                           const obl_allocator *alloc, uint64_t *scratch, size_t scratch_bytes)
{
    /* threads only for large sorts: starting them costs more below */
    unsigned th = n >= SHARD_SORT_PAR_MIN ? threads : 1;
    if (kw <= 2 && n >= SHARD_SORT_COL_MIN && /* public */
        shard_sort_cols(recs, n, rec_size, kw, bounded, th, alloc, scratch, scratch_bytes) == 0)
        return;
    if (kw > 2 || n < SHARD_SORT_LIB_MIN) { /* public */
        shard_bitonic_sort_words(recs, n, rec_size, kw);
        return;
    }
    obl_sort_params p = {rec_size, 8 * kw, th, shard_sort_random, g, alloc};
    if (obl_sort(recs, n, &p) == OBL_OK)
        return;
    /* NOMEM of obl_sort's column scratch: the record network needs none (a
     * public event; the result is the same) */
    if (obl_sort_bitonic(recs, n, &p) != OBL_OK)
        shard_bitonic_sort_words(recs, n, rec_size, kw);
}

/* see shard_internal.h */
void shard_sort(unsigned char *recs, size_t n, size_t rec_size, size_t kw, unsigned threads,
                obl_prg *g, const obl_allocator *alloc)
{
    shard_sort_any(recs, n, rec_size, kw, 0, threads, g, alloc, NULL, 0);
}

/* see shard_internal.h */
void shard_sort_bounded(unsigned char *recs, size_t n, size_t rec_size, size_t kw,
                        unsigned threads, obl_prg *g, const obl_allocator *alloc)
{
    shard_sort_any(recs, n, rec_size, kw, 1, threads, g, alloc, NULL, 0);
}

/* see shard_internal.h */
void shard_sort_bounded_in(unsigned char *recs, size_t n, size_t rec_size, size_t kw,
                           unsigned threads, obl_prg *g, const obl_allocator *alloc,
                           uint64_t *scratch, size_t scratch_bytes)
{
    shard_sort_any(recs, n, rec_size, kw, 1, threads, g, alloc, scratch, scratch_bytes);
}

/* see shard_internal.h */
size_t shard_sort_scratch(size_t n)
{
    size_t m = 1, bytes;
    while (m < n)
        m *= 2;
    return obl_mul_ok(m, 8 * SHARD_COL_MAXC, &bytes) ? bytes : 0;
}

/* see shard_internal.h */
void shard_keep_first(unsigned char *recs, size_t n, size_t rec_size, const uint8_t *keep,
                      unsigned threads, obl_prg *g, const obl_allocator *alloc)
{
    unsigned th = n >= SHARD_SORT_PAR_MIN ? threads : 1;
    obl_sort_params p = {rec_size, 8, th, shard_sort_random, g, alloc};
    if (keep && n >= SHARD_SORT_LIB_MIN && obl_compact(recs, n, keep, NULL, &p) == OBL_OK)
        return;
    shard_sort_bounded(recs, n, rec_size, 1, threads, g, alloc); /* by the keys set for it */
}
