/* SPDX-License-Identifier: MIT */
/*
 * obl_sort_split (obl/sort.h): records of at most 8 words, any n, sorted
 * with the column network where obl_sort pads nothing and takes the record
 * network. n = m + r, m the largest power of two <= n: the first m records
 * as columns sorted by the column network, the last r by the record
 * network, then one merge: the flip step compares record m-1-t with record
 * m+t (t < r), which leaves the m smallest in the first part and both parts
 * bitonic (the second as if padded with r..m-1 keys above every other),
 * and each part's half-cleaners sort it: the first part's as the column
 * network's last stage, the second's on records, skipping the exchanges
 * with a pad (no-ops). Every exchange is at positions fixed by n
 * (docs/sort.md, "Which sort").
 *
 * Secret: keys, payloads. Public: n, the sizes, the threads.
 */
#include <string.h>

#include "common/secret.h"
#include "sort/columns.h"
#include "sort/entry.h"
#include "sort/rec.h"

/* Records m - 1 - t (row of the columns) and m + t (record t of b), t < r,
 * exchanged so that the row holds the smaller key. The row's words move
 * one at a time (a barrier on each): vectorised, the W < 8 words became a
 * masked scatter, which the masked-operand audit refuses. */
static void sp_flip(uint64_t *const *cols, size_t m, const rec_arr *b)
{
    const size_t W = b->words;
    uint64_t x[8];
    for (size_t t = 0; t < b->n; t++) {
        size_t i = m - 1 - t;
        uint64_t *y = rec_at(b, t);
        for (size_t c = 0; c < W; c++)
            x[c] = cols[c][i];
        rec_cswap(obl_ct_mask(rec_key_gt(x, y, b->kw)), x, y, W);
        for (size_t c = 0; c < W; c++)
            cols[c][i] = obl_ct_barrier64(x[c]);
        REC_TOUCH(t);
    }
}

/* The half-cleaners of spans m/2 .. 1 on the r records of b, as the first
 * r of m with keys above every other after them: only the exchanges of
 * two real records run (an exchange with a pad leaves both in place). */
static void sp_clean(const rec_arr *b, size_t m)
{
    const size_t r = b->n;
    for (size_t j = m / 2; j >= 1; j >>= 1) {
        if (j >= r) /* public */
            continue;
        for (size_t lo = 0; lo < r; lo += 2 * j)
            for (size_t i = lo; i < lo + j && i + j < r; i++) {
                uint64_t *x = rec_at(b, i), *y = rec_at(b, i + j);
                REC_TOUCH(i);
                REC_TOUCH(i + j);
                rec_cswap(obl_ct_mask(rec_key_gt(x, y, b->kw)), x, y, b->words);
            }
    }
}

/* a variant of the obl/sort.h function (sort/entry.h) */
obl_err OBL_V(srt_split)(void *recs, size_t n, const obl_sort_params *p, uint64_t *scratch,
                         size_t scratch_bytes)
{
    rec_arr a;
    obl_err e = rec_arr_init(&a, recs, n, p);
    if (e != OBL_OK || n < 2)
        return e;
    if (a.words > 8)
        return OBL_ERR_INVALID_ARG;
    size_t m = 1;
    while (m * 2 <= n)
        m *= 2;
    const size_t W = a.words, bytes = m * W * 8;
    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    int own = !scratch || scratch_bytes < bytes; /* public */
    uint64_t *buf = own ? obl_alloc(&ac, bytes, 64) : scratch;
    if (!buf)
        return OBL_ERR_NOMEM;
    uint64_t *cols[8]; /* all eight set, as sh_sort_columns */
    for (size_t c = 0; c < 8; c++)
        cols[c] = buf + (c < W ? c : 0) * m;
    for (size_t i = 0; i < m; i++)
        for (size_t c = 0; c < W; c++)
            cols[c][i] = a.w[i * W + c];
    col_arr s = {cols, W, a.kw, m, a.threads};
    col_sort(&s);
    rec_arr b = {a.w + m * W, n - m, W, a.kw, a.threads};
    if (b.n > 0) { /* public */
        rec_sort_bitonic(&b);
        sp_flip(cols, m, &b);
        col_merge(&s);
        sp_clean(&b, m);
    }
    for (size_t i = 0; i < m; i++)
        for (size_t c = 0; c < W; c++)
            a.w[i * W + c] = cols[c][i];
    if (own)
        obl_free(&ac, buf, bytes);
    return OBL_OK;
}
