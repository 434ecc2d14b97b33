/* SPDX-License-Identifier: MIT */
/*
 * The record network of the sharded map's sorts (bitonic.c): Batcher's
 * bitonic sort and merge for any n (1968; the recursion for arbitrary n
 * from H. W. Lang's notes on bitonic sorting networks), by the first kw
 * words of each record. Compiled once per instruction-set variant
 * (CMakeLists.txt, OBL_VARIANT_SOURCES), so that the masked swap of whole
 * records takes the variant's vectors (obl_ct_cswap); bitonic.c calls the
 * variant the CPU runs. The compare-exchange sequence depends on n alone;
 * each exchange is a constant-time compare and a masked swap.
 * Secret: the records. Public: n, rec_size, kw.
 */
#include "shard/shard_internal.h"

#include "common/cpu.h"
#include "ct.h"

typedef struct bs_ctx {
    unsigned char *r;
    size_t rs, kw; /* record bytes, key words compared */
} bs_ctx;

/* 1 if the key of record a is greater than that of b: words compared in
 * order, the first that differs decides. */
static inline uint64_t bs_gt(const unsigned char *a, const unsigned char *b, size_t kw)
{
    uint64_t gt = 0, decided = 0;
    for (size_t k = 0; k < kw; k++) {
        uint64_t x, y;
        memcpy(&x, a + 8 * k, 8);
        memcpy(&y, b + 8 * k, 8);
        gt |= obl_ct_gt64(x, y) & (decided ^ 1);
        decided |= obl_ct_neq64(x, y);
    }
    return gt;
}

/* Exchange records i < j if their order differs from `up`. */
static inline void bs_ce(const bs_ctx *c, size_t i, size_t j, uint64_t up, size_t rs)
{
    unsigned char *a = c->r + i * rs, *b = c->r + j * rs;
    OBL_TRACE_TOUCH(OBL_TRACE_REGION_SORT, OBL_TRACE_RW, i, j);
    uint64_t sw = bs_gt(a, b, c->kw) ^ up ^ 1;
    obl_ct_cswap(sw, a, b, rs);
}

/* The exchanges (i, i + m) for i in [lo, hi). Records of up to 16 words
 * get a copy with the size a constant: the swap is then a few whole
 * vectors, with no loop or tail to set up per exchange. */
#define BS_W(w) \
    case w: for (size_t i = lo; i < hi; i++) bs_ce(c, i, i + m, up, 8 * (w)); break;

static void bs_pass(const bs_ctx *c, size_t lo, size_t hi, size_t m, uint64_t up)
{
    switch (c->rs % 8 ? 0 : c->rs / 8) { /* public */
    BS_W(1) BS_W(2) BS_W(3) BS_W(4) BS_W(5) BS_W(6) BS_W(7) BS_W(8)
    BS_W(9) BS_W(10) BS_W(11) BS_W(12) BS_W(13) BS_W(14) BS_W(15) BS_W(16)
    default:
        for (size_t i = lo; i < hi; i++)
            bs_ce(c, i, i + m, up, c->rs);
        break;
    }
}

/* The largest power of two below n (n >= 2). */
static size_t bs_pow2_below(size_t n)
{
    size_t m = 1;
    while (m * 2 < n)
        m *= 2;
    return m;
}

static void bs_merge(const bs_ctx *c, size_t lo, size_t n, uint64_t up)
{
    if (n < 2)
        return;
    size_t m = bs_pow2_below(n);
    bs_pass(c, lo, lo + n - m, m, up);
    bs_merge(c, lo, m, up);
    bs_merge(c, lo + m, n - m, up);
}

static void bs_sort(const bs_ctx *c, size_t lo, size_t n, uint64_t up)
{
    if (n < 2)
        return;
    size_t m = n / 2;
    bs_sort(c, lo, m, up ^ 1);
    bs_sort(c, lo + m, n - m, up);
    bs_merge(c, lo, n, up);
}

/* see shard_internal.h */
void OBL_V(shard_net)(unsigned char *recs, size_t n, size_t rec_size, size_t kw, int merge)
{
    bs_ctx c = {recs, rec_size, kw};
    if (merge) /* public */
        bs_merge(&c, 0, n, 1);
    else
        bs_sort(&c, 0, n, 1);
}
