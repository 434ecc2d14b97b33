/* SPDX-License-Identifier: MIT */
/*
 * Bitonic sort of columns (obl/sort.h, obl_sort_columns): n = 2^k rows held
 * as ncol arrays of 64-bit words, the key in the first kw columns (1 or 2,
 * the first most significant). Batcher's network in its classic form:
 * stage k, step j compares row i with i ^ j, ascending where i & k is 0.
 *
 * Columns make the vector form simple: a compare-exchange of COL_LANES
 * consecutive rows against as many others is one key comparison and, per
 * column, an AND/XOR swap under its lane mask (col_cev): eight rows with
 * AVX-512, four with AVX2. The spans below COL_LANES run in registers on
 * aligned groups of rows (col_regv). The ISA-specific code is these small
 * helpers; without AVX2 the same network runs row by row (col_ce1). The
 * schedule is blocked: steps of span below COL_BLOCK rows run block by
 * block (all of a stage's remaining steps while the block is in L2), so
 * only the spans of at least COL_BLOCK make passes over the whole array.
 * Blocks, and the rows of a full pass, are split over the threads.
 *
 * Secret: every column. Public: n, ncol, kw, threads; the sequence of
 * addresses depends on them only.
 */
#include <string.h>

#include "sort/columns.h"
#include <obl/sort.h>

#include "sort/entry.h"
#include "sort/par.h"

/* Rows per block: 8192 rows of four columns are 256 KiB. */
#define COL_BLOCK ((size_t)1 << 13)
#define COL_MAXC 8

#define COL_TOUCH(i, lanes) OBL_TRACE_TOUCH(OBL_TRACE_REGION_SORT, OBL_TRACE_RW, (i), (lanes))

/* 1 if row a's key > row b's of the columns c. Secret: the keys. Public:
 * kw. */
OBL_INLINE uint64_t col_gt(uint64_t *const *c, size_t a, size_t b, const size_t kw)
{
    uint64_t g = obl_ct_gt64(c[0][a], c[0][b]);
    if (kw == 2) /* public */
        g |= obl_ct_eq64(c[0][a], c[0][b]) & obl_ct_gt64(c[1][a], c[1][b]);
    return g;
}

/* Rows a < b compare-exchanged: ascending (asc) puts the smaller key at a. */
OBL_INLINE void col_ce1(uint64_t *const *c, size_t a, size_t b, int asc, const size_t nc,
                        const size_t kw)
{
    COL_TOUCH(a, 1);
    COL_TOUCH(b, 1);
    uint64_t m = obl_ct_mask(asc ? col_gt(c, a, b, kw) : col_gt(c, b, a, kw)); /* public: asc */
    for (size_t k = 0; k < nc; k++) {
        uint64_t x = c[k][a], y = c[k][b], t = m & (x ^ y);
        c[k][a] = x ^ t;
        c[k][b] = y ^ t;
    }
}

#if OBL_CT_AVX512
#define COL_LANES 8
#define COL_ISA "avx512f,avx512dq"
typedef __m512i col_v;
/* AVX-512: eight rows per vector. No instruction is masked by a secret:
 * a key comparison goes into a mask register and at once into a lane mask
 * (vpmovm2q) that an empty asm hides from the optimiser, and the rows are
 * swapped with AND/XOR under it, as in the AVX2 form. A blend under the
 * mask register (vpblendmq) let clang fold spilled rows into it as masked
 * memory operands, which the masked-operand audit rejects (docs/sort.md). */
OBL_SIMD_INLINE(COL_ISA) col_v col_vmask(__mmask8 k)
{
    __m512i v = _mm512_movm_epi64(k);
    __asm__("" : "+v"(v));
    return v;
}

OBL_SIMD_INLINE(COL_ISA) col_v col_load(const uint64_t *p)
{
    return _mm512_loadu_si512((const void *)p);
}
OBL_SIMD_INLINE(COL_ISA) void col_store(uint64_t *p, col_v v)
{
    _mm512_storeu_si512((void *)p, v);
}
OBL_SIMD_INLINE(COL_ISA) col_v col_and(col_v x, col_v y) { return _mm512_and_si512(x, y); }
OBL_SIMD_INLINE(COL_ISA) col_v col_andnot(col_v x, col_v y) { return _mm512_andnot_si512(x, y); }
OBL_SIMD_INLINE(COL_ISA) col_v col_or(col_v x, col_v y) { return _mm512_or_si512(x, y); }
OBL_SIMD_INLINE(COL_ISA) col_v col_xor(col_v x, col_v y) { return _mm512_xor_si512(x, y); }

/* All ones in lane l if key(x) > key(y); x1, y1 only when kw = 2. */
OBL_SIMD_INLINE(COL_ISA) col_v col_vgt(col_v x0, col_v x1, col_v y0, col_v y1, size_t kw)
{
    col_v g = col_vmask(_mm512_cmpgt_epu64_mask(x0, y0));
    if (kw == 2) { /* public */
        col_v e = col_vmask(_mm512_cmpeq_epu64_mask(x0, y0));
        g = col_or(g, col_and(e, col_vmask(_mm512_cmpgt_epu64_mask(x1, y1))));
    }
    return g;
}

/* Lane l ^ j of x (j = 1, 2 or 4). */
OBL_SIMD_INLINE(COL_ISA) col_v col_partner(col_v x, size_t j)
{
    if (j == 4)
        return _mm512_shuffle_i64x2(x, x, 0x4E);
    return j == 2 ? _mm512_permutex_epi64(x, 0x4E) : _mm512_permutex_epi64(x, 0xB1);
}

/* Public lane masks of the aligned group of rows from g: the rows that
 * ascend in stage k, and the lanes that are the upper of their pair at
 * span j (lane masks too, so that no instruction is masked by them). */
OBL_SIMD_INLINE(COL_ISA) col_v col_asc_lanes(size_t g, size_t k)
{
    const __m512i rows = _mm512_add_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi64((long long)g));
    return col_vmask(_mm512_testn_epi64_mask(rows, _mm512_set1_epi64((long long)k)));
}
OBL_SIMD_INLINE(COL_ISA) col_v col_upper_lanes(size_t j)
{
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    return col_vmask(_mm512_test_epi64_mask(lane, _mm512_set1_epi64((long long)j)));
}
#elif OBL_CT_AVX2
#define COL_LANES 4
#define COL_ISA "avx2"
typedef __m256i col_v;
OBL_SIMD_INLINE(COL_ISA) col_v col_load(const uint64_t *p)
{
    return _mm256_loadu_si256((const void *)p);
}
OBL_SIMD_INLINE(COL_ISA) void col_store(uint64_t *p, col_v v)
{
    _mm256_storeu_si256((void *)p, v);
}
OBL_SIMD_INLINE(COL_ISA) col_v col_and(col_v x, col_v y) { return _mm256_and_si256(x, y); }
OBL_SIMD_INLINE(COL_ISA) col_v col_andnot(col_v x, col_v y) { return _mm256_andnot_si256(x, y); }
OBL_SIMD_INLINE(COL_ISA) col_v col_or(col_v x, col_v y) { return _mm256_or_si256(x, y); }
OBL_SIMD_INLINE(COL_ISA) col_v col_xor(col_v x, col_v y) { return _mm256_xor_si256(x, y); }

/* All ones in lane l if key(x) > key(y) (unsigned: signed compares of the
 * words with their top bits flipped); x1, y1 only when kw = 2. */
OBL_SIMD_INLINE(COL_ISA) col_v col_vgt(col_v x0, col_v x1, col_v y0, col_v y1, size_t kw)
{
    const __m256i top = _mm256_set1_epi64x((long long)0x8000000000000000ULL);
    __m256i g = _mm256_cmpgt_epi64(col_xor(x0, top), col_xor(y0, top));
    if (kw == 2) { /* public */
        __m256i g1 = _mm256_cmpgt_epi64(col_xor(x1, top), col_xor(y1, top));
        g = col_or(g, col_and(_mm256_cmpeq_epi64(x0, y0), g1));
    }
    return g;
}

/* Lane l ^ j of x (j = 1 or 2). */
OBL_SIMD_INLINE(COL_ISA) col_v col_partner(col_v x, size_t j)
{
    return j == 2 ? _mm256_permute4x64_epi64(x, 0x4E) : _mm256_permute4x64_epi64(x, 0xB1);
}

/* Public lane masks of the aligned group of rows from g: the rows that
 * ascend in stage k, and the lanes that are the upper of their pair at
 * span j. */
OBL_SIMD_INLINE(COL_ISA) col_v col_asc_lanes(size_t g, size_t k)
{
    const __m256i rows = _mm256_add_epi64(_mm256_set_epi64x(3, 2, 1, 0),
                                          _mm256_set1_epi64x((long long)g));
    return _mm256_cmpeq_epi64(col_and(rows, _mm256_set1_epi64x((long long)k)),
                              _mm256_setzero_si256());
}
OBL_SIMD_INLINE(COL_ISA) col_v col_upper_lanes(size_t j)
{
    const __m256i jv = _mm256_set1_epi64x((long long)j);
    return _mm256_cmpeq_epi64(col_and(_mm256_set_epi64x(3, 2, 1, 0), jv), jv);
}
#endif

#ifdef COL_LANES
/* x, which the compiler may not derive from earlier values: a row offset
 * it cannot fold into one pointer per column and row (the 16 general
 * registers do not hold the 8 of two columns of col_quad4 and a loop's
 * indices, and a spilled pointer is read from memory between the stores;
 * see col_stages_c). */
OBL_INLINE size_t col_opaque(size_t x)
{
    __asm__("" : "+r"(x));
    return x;
}

/* x and y swapped in the lanes where m is all ones: an AND/XOR swap. */
OBL_SIMD_INLINE(COL_ISA) void col_swap(col_v m, col_v *x, col_v *y)
{
    col_v t = col_and(col_xor(*x, *y), m);
    *x = col_xor(*x, t);
    *y = col_xor(*y, t);
}

/* Rows a .. a + COL_LANES - 1 against as many from b, all in the direction
 * asc: one key comparison, then a swap of every column. */
OBL_SIMD_INLINE(COL_ISA)
void col_cev(uint64_t *const *c, size_t a, size_t b, int asc, const size_t nc, const size_t kw)
{
    COL_TOUCH(a, COL_LANES);
    COL_TOUCH(b, COL_LANES);
    col_v x0 = col_load(c[0] + a), y0 = col_load(c[0] + b), x1 = x0, y1 = y0;
    if (kw == 2) {
        x1 = col_load(c[1] + a);
        y1 = col_load(c[1] + b);
    }
    col_v m = asc ? col_vgt(x0, x1, y0, y1, kw) : col_vgt(y0, y1, x0, x1, kw);
    for (size_t k = 0; k < nc; k++) {
        col_v x = k == 0 ? x0 : k == 1 && kw == 2 ? x1 : col_load(c[k] + a);
        col_v y = k == 0 ? y0 : k == 1 && kw == 2 ? y1 : col_load(c[k] + b);
        col_swap(m, &x, &y);
        col_store(c[k] + a, x);
        col_store(c[k] + b, y);
    }
}

/* Compare-exchange of register rows a and b of the columns X[c][.], in
 * the direction asc. */
OBL_SIMD_INLINE(COL_ISA)
void col_ce_reg(col_v X[][4], int a, int b, int asc, const size_t nc, const size_t kw)
{
    col_v m = asc ? col_vgt(X[0][a], X[1 % nc][a], X[0][b], X[1 % nc][b], kw)
                  : col_vgt(X[0][b], X[1 % nc][b], X[0][a], X[1 % nc][a], kw);
    for (size_t c = 0; c < nc; c++)
        col_swap(m, &X[c][a], &X[c][b]);
}

/* The four vectors of rows e, e + q, e + 2q, e + 3q through the steps of
 * spans 2q and q, in registers (col_step2v). */
OBL_SIMD_INLINE(COL_ISA)
void col_quad4(uint64_t *const *col, size_t e, size_t q, int asc, const size_t nc,
               const size_t kw)
{
    col_v X[COL_MAXC][4];
    for (int a = 0; a < 4; a++) {
        COL_TOUCH(e + a * q, COL_LANES);
        for (size_t c = 0; c < nc; c++)
            X[c][a] = col_load(col[c] + e + a * q);
    }
    col_ce_reg(X, 0, 2, asc, nc, kw);
    col_ce_reg(X, 1, 3, asc, nc, kw);
    col_ce_reg(X, 0, 1, asc, nc, kw);
    col_ce_reg(X, 2, 3, asc, nc, kw);
    e = col_opaque(e); /* the store addresses computed again: no register */
    q = col_opaque(q); /* holds one between the loads and the stores */
    for (int a = 0; a < 4; a++)
        for (size_t c = 0; c < nc; c++)
            col_store(col[c] + e + a * q, X[c][a]);
}

/* Steps j = jtop .. 1 (jtop < COL_LANES) of stage k on the aligned group
 * of COL_LANES rows from g, in registers: lane l against lane l ^ j; a
 * lane keeps the smaller key where it is the lower of its pair XOR its row
 * descends. */
OBL_SIMD_INLINE(COL_ISA)
void col_regv(uint64_t *const *col, size_t g, size_t k, size_t jtop, const size_t nc,
              const size_t kw)
{
    COL_TOUCH(g, COL_LANES);
    col_v X[COL_MAXC];
    for (size_t c = 0; c < nc; c++)
        X[c] = col_load(col[c] + g);
    const col_v asc = col_asc_lanes(g, k);
    for (size_t j = jtop; j > 0; j >>= 1) {
        col_v p0 = col_partner(X[0], j), p1 = p0;
        if (kw == 2)
            p1 = col_partner(X[1], j);
        col_v gt = col_vgt(X[0], X[1 % nc], p0, p1, kw);
        col_v lt = col_vgt(p0, p1, X[0], X[1 % nc], kw);
        col_v wmin = col_xor(col_upper_lanes(j), asc); /* this lane keeps the smaller key */
        col_v m = col_or(col_and(wmin, gt), col_andnot(wmin, lt));
        for (size_t c = 0; c < nc; c++) {
            col_v p = c == 0 ? p0 : (c == 1 && kw == 2) ? p1 : col_partner(X[c], j);
            X[c] = col_xor(X[c], col_and(col_xor(X[c], p), m));
        }
    }
    for (size_t c = 0; c < nc; c++)
        col_store(col[c] + g, X[c]);
}

/* Steps j and j / 2 of stage k (q = j / 2 >= COL_LANES) in one pass, from
 * the quad of first row lo to that of hi (first rows: the first q of every
 * 2j, lo and hi among them or at a multiple of 2j): the rows e, e + q,
 * e + 2q, e + 3q are closed under both steps,
 * so four vectors of rows per column stay in registers through both (half
 * the loads and stores of two passes); the same compare-exchanges in the
 * same order along every row's dependencies. */
OBL_INLINE void col_step2v(uint64_t *const *c, size_t lo, size_t hi, size_t k, size_t j,
                           const size_t nc, const size_t kw)
{
    const size_t q = j / 2;
    /* one loop over the first rows e of the quads, the first q of every 2j
     * rows, so that few indices are live (col_opaque) */
    for (size_t e = lo; e < hi;) {
        const size_t qo = col_opaque(q);
        col_quad4(c, e, qo, !(e & k), nc, kw); /* e & k: that of its 2j rows */
        e += COL_LANES;
        e += (e & (qo - 1)) == 0 ? 3 * qo : 0; /* public */
    }
}
#endif

/* Step j of stage k (j >= COL_LANES) from the pair of lower row lo to
 * that of hi (lower rows: the first j of every 2j, lo and hi among them
 * or at a multiple of 2j), in one loop, so that few indices are live. */
OBL_INLINE void col_step(uint64_t *const *c, size_t lo, size_t hi, size_t k, size_t j,
                         const size_t nc, const size_t kw)
{
    for (size_t i = lo; i < hi;) {
#ifdef COL_LANES
        col_cev(c, i, i + j, !(i & k), nc, kw); /* i & k: that of its 2j rows */
        i += COL_LANES;
#else
        col_ce1(c, i, i + j, !(i & k), nc, kw);
        i++;
#endif
        i += (i & (j - 1)) == 0 ? j : 0; /* public */
    }
}

/* One pass of stage k over the rows [lo, hi) from span j: spans j and
 * j / 2 together, span j alone, or (vector form) all the spans below
 * COL_LANES in registers. Returns the span the next pass starts from, 0
 * after the last. c: the nc column pointers; nc and kw are constants in
 * the specialised copies (COL_SPECIALISE). */
OBL_INLINE size_t col_pass_nk(uint64_t *const *c, size_t lo, size_t hi, size_t k, size_t j,
                              const size_t nc, const size_t kw)
{
#ifdef COL_LANES
    if (hi - lo >= COL_LANES) { /* public */
        if (j >= 2 * COL_LANES) {
            col_step2v(c, lo, hi, k, j, nc, kw);
            return j >> 2;
        }
        if (j >= COL_LANES) {
            col_step(c, lo, hi, k, j, nc, kw);
            return j >> 1;
        }
        for (size_t g = lo; g < hi; g += COL_LANES)
            col_regv(c, g, k, j, nc, kw);
        return 0;
    }
    for (size_t b = lo; b < hi; b += 2 * j) /* fewer rows than lanes */
        for (size_t i = 0; i < j; i++)
            col_ce1(c, b + i, b + i + j, !((b + i) & k), nc, kw);
    return j >> 1;
#else
    col_step(c, lo, hi, k, j, nc, kw);
    return j >> 1;
#endif
}

/* The column pointers of s copied into c, local variables (an array of
 * constant length nc that the compiler keeps in registers): a vector store
 * may alias any memory, so pointers read through s->col would be read
 * again after every store (see col_stages_c). */
OBL_INLINE void col_copy(const col_arr *s, uint64_t **c, const size_t nc)
{
    for (size_t i = 0; i < nc; i++)
        c[i] = s->col[i];
}

/* f(args..., nc, kw) with the column counts the library uses as constants
 * (specialised copies) and otherwise s->ncol and s->kw. */
#define COL_SPECIALISE(s, f, ...)                                                    \
    switch ((s)->ncol * 4 + (s)->kw) { /* public */                                  \
    case 2 * 4 + 1: f(__VA_ARGS__, 2, 1); break;                                      \
    case 3 * 4 + 1: f(__VA_ARGS__, 3, 1); break;                                      \
    case 3 * 4 + 2: f(__VA_ARGS__, 3, 2); break;                                      \
    case 4 * 4 + 1: f(__VA_ARGS__, 4, 1); break;                                      \
    case 4 * 4 + 2: f(__VA_ARGS__, 4, 2); break;                                      \
    case 8 * 4 + 1: f(__VA_ARGS__, 8, 1); break; /* 64-byte record */                 \
    default: f(__VA_ARGS__, (s)->ncol, (s)->kw); break;                               \
    }

/* Stage k from span jtop, then the stages 2k .. kend whole, on the rows
 * [lo, hi), pass by pass, in one call with the column pointers in local
 * variables: every loop keeps the pointers, bounds and indices in
 * registers, and the pointers are read from memory once, not behind the
 * stores of each pass. A store address read from memory behind a pending
 * vector store of secret data can be speculatively forwarded that data,
 * which made the time depend on the data's low bits (docs/timing.md,
 * "Findings"). */
OBL_INLINE void col_stages_c(const col_arr *s, size_t lo, size_t hi, size_t k, size_t kend,
                             size_t jtop, const size_t nc, const size_t kw)
{
    uint64_t *c[COL_MAXC];
    col_copy(s, c, nc);
    for (;;) {
        for (size_t j = jtop; j > 0;)
            j = col_pass_nk(c, lo, hi, k, j, nc, kw);
        if (k >= kend)
            break;
        k <<= 1;
        jtop = k / 2;
    }
}

static void col_steps(const col_arr *s, size_t lo, size_t hi, size_t k, size_t kend,
                      size_t jtop)
{
    COL_SPECIALISE(s, col_stages_c, s, lo, hi, k, kend, jtop)
}

typedef struct col_job {
    const col_arr *s;
    size_t C, k, j; /* blocks of C rows; stage k from span j (0: stages up to C) */
    int quads;      /* a full pass of spans j and j / 2 (col_full) */
} col_job;

/* Blocks [lo, hi) (in block units): the whole network up to stage C, or
 * the spans j .. 1 of stage k. */
static void col_blocks(void *ctx, size_t lo, size_t hi)
{
    const col_job *jb = ctx;
    for (size_t blk = lo; blk < hi; blk++) {
        size_t a = blk * jb->C, e = a + jb->C;
        if (jb->j == 0)
            col_steps(jb->s, a, e, 2, jb->C, 1);
        else
            col_steps(jb->s, a, e, jb->k, jb->k, jb->j);
    }
}

/* Chunk [lo, hi) of a full pass over the rows (j >= COL_BLOCK, chunks of
 * multiples of 64): of span j, pairs p of rows i, i + j with i = (p / j)
 * * 2j + p % j; or of spans j and j / 2 (quads), quads p of rows e + a *
 * q, a = 0 .. 3, q = j / 2, e = (p / q) * 2j + p % q. */
OBL_INLINE void col_full_c(const col_job *jb, size_t lo, size_t hi, const size_t nc,
                           const size_t kw)
{
    const size_t j = jb->j, q = jb->quads ? j / 2 : j; /* pairs: p as row i */
    uint64_t *c[COL_MAXC];
    col_copy(jb->s, c, nc);
    lo = lo / q * 2 * j + lo % q;
    hi = hi / q * 2 * j + hi % q;
#ifdef COL_LANES
    if (jb->quads) { /* public */
        col_step2v(c, lo, hi, jb->k, j, nc, kw);
        return;
    }
#endif
    col_step(c, lo, hi, jb->k, j, nc, kw);
}

static void col_full(void *ctx, size_t lo, size_t hi)
{
    const col_job *jb = ctx;
    COL_SPECIALISE(jb->s, col_full_c, jb, lo, hi)
}

/* Stage k of the network (spans k/2 .. 1) on the s->n rows, run in blocks
 * of C rows once the span is below C. */
static void col_stage(const col_arr *s, size_t C, size_t k)
{
    const size_t n = s->n;
    const unsigned t = s->threads;
    size_t j = k / 2;
#ifdef COL_LANES
    for (; j >= 2 * C; j >>= 2) { /* spans j and j / 2 >= C in one pass */
        col_job qj = {s, C, k, j, 1};
        obl_par_for(t, n / 4, 64, col_full, &qj);
    }
#endif
    for (; j >= C; j >>= 1) {
        col_job pj = {s, C, k, j, 0};
        obl_par_for(t, n / 2, 64, col_full, &pj);
    }
    col_job bj = {s, C, k, j, 0};
    obl_par_for(t, n / C, 1, col_blocks, &bj);
}

/* see columns.h */
void col_sort(const col_arr *s)
{
    const size_t n = s->n;
    if (n < 2)
        return;
    const size_t C = n < COL_BLOCK ? n : COL_BLOCK;
    col_job jb = {s, C, 0, 0, 0};
    obl_par_for(s->threads, n / C, 1, col_blocks, &jb);
    for (size_t k = 2 * C; k <= n; k <<= 1)
        col_stage(s, C, k);
}

/* see columns.h */
void col_merge(const col_arr *s)
{
    const size_t n = s->n;
    if (n >= 2) /* stage n: every row i < n ascending */
        col_stage(s, n < COL_BLOCK ? n : COL_BLOCK, n);
}

/* a variant of the obl/sort.h function (sort/entry.h) */
obl_err OBL_V(srt_columns)(uint64_t *const *cols, size_t ncol, size_t key_words,
                            size_t n, unsigned threads)
{
    if (!cols || ncol == 0 || ncol > COL_MAXC || key_words == 0 || key_words > 2 ||
        key_words > ncol || (n & (n - 1)) != 0)
        return OBL_ERR_INVALID_ARG;
    for (size_t c = 0; c < ncol; c++)
        if (!cols[c] && n > 0)
            return OBL_ERR_INVALID_ARG;
    col_arr s = {cols, ncol, key_words, n, threads ? threads : 1};
    col_sort(&s);
    return OBL_OK;
}
