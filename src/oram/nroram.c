/*
 * Circuit ORAM (Wang, Chan, Shi, CCS 2015, eprint 2014/672): the
 * non-recursive tree ORAM of obl/oram.h. The access and eviction code is in
 * nroram_impl.h, instantiated here for 32- and 64-bit metadata words; this
 * file holds creation, parameter checks and the public entry points.
 *
 * Parameters and their sources (docs/oram.md has the measurements):
 * - Z = 2 slots per bucket and L = 2^ceil(log2(ceil(capacity / 2))) leaves:
 *   the paper's choice (section 5, "Z = 2 suffices"), about 2 * capacity
 *   slots in the tree;
 * - two evictions per access on the next two paths in reverse-
 *   lexicographic order, run when the next access's path is fetched
 *   (nr_settle) (section 3.2; measured: one eviction per access lets
 *   the stash grow without bound at Z = 2, and evicting on the accessed path
 *   instead is much weaker, docs/oram.md);
 * - stash 20 blocks by default: the paper's stash bound (P[stash > R] =
 *   e^-Omega(R)) and our measured histogram (docs/oram.md).
 */
#include <string.h>

#include <obl/oram.h>

#include "ct.h"
#include "common/secret.h"
#include "common/trace.h"
#include "oram/nroram_internal.h"

/* Reverse the bits of a 64-bit word (public values only). */
static inline uint64_t nr_bitrev64(uint64_t x)
{
    x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
    x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
    x = ((x >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((x & 0x0F0F0F0F0F0F0F0FULL) << 4);
    return __builtin_bswap64(x);
}

/*
 * Short comparisons for the hot loops. nr_lt needs a, b < 2^63 (levels,
 * slots, reach values); nr_eq is exact for any words (it compares a ^ b
 * with zero through the sign of its halves). Both produce 0/1 without a
 * branch.
 */
static inline uint64_t nr_lt(uint64_t a, uint64_t b) { return obl_ct_barrier64((a - b) >> 63); }

/* a == b for a, b < 2^63 (levels, slots, NR_NONE) */
static inline uint64_t nr_eqs(uint64_t a, uint64_t b)
{
    return obl_ct_barrier64(((a ^ b) - 1) >> 63);
}

static inline uint64_t nr_eq(uint64_t a, uint64_t b)
{
    uint64_t x = a ^ b;
    return obl_ct_barrier64(((x | (x >> 1)) - 1) >> 63 & ~(x >> 63));
}

/*
 * The two sequential chains of an eviction (nr_evict_core), one step each,
 * written so that the value carried from level to level passes through
 * one compare and one conditional move per step: each chain runs once per
 * level and eviction, and its latency, not its instruction count, is what
 * it costs (measured: running PrepareTarget's chain three times instead of
 * once added 0.155 us to an access of NRORAM 8/8 at 2^16, 0.67 us). The
 * x86 versions are cmov in inline assembly (no branch; the compiler cannot
 * turn them into one); elsewhere masks. Secret: every argument but lv.
 */

/* PrepareTarget (fig. 4), one level: src == lv ? on_hit : src == none ?
 * on_idle : src, with none = 0xff (NR_NONE). The comparison with lv does
 * not wait for the first move, so src goes through two moves: about three
 * cycles per level, against six to seven for the select chain it replaced. */
static inline uint64_t nr_target_step(uint64_t src, uint64_t lv, uint64_t on_hit,
                                      uint64_t on_idle)
{
#if OBL_CT_X86
    uint64_t t = src;
    __asm__("cmp $0xff, %[s]\n\t"
            "cmove %[idle], %[t]\n\t"
            "cmp %[lv], %[s]\n\t"
            "cmove %[hit], %[t]"
            : [t] "+&r"(t)
            : [s] "r"(src), [lv] "r"(lv), [idle] "r"(on_idle), [hit] "r"(on_hit)
            : "cc");
    return t;
#else
    uint64_t t = obl_ct_select64(nr_eqs(src, 0xff), on_idle, src);
    return obl_ct_select64(nr_eqs(src, lv), on_hit, t);
#endif
}

/* PrepareDeepest's running maximum: a < b ? b : a (keys below 2^63). */
static inline uint64_t nr_max_step(uint64_t a, uint64_t b)
{
#if OBL_CT_X86
    __asm__("cmp %[b], %[a]\n\t"
            "cmovb %[b], %[a]"
            : [a] "+r"(a)
            : [b] "r"(b)
            : "cc");
    return a;
#else
    return obl_ct_select64(nr_lt(a, b), b, a);
#endif
}

/* EvictFast's held block (metadata words, 8-byte blocks), one step: if (c)
 * swap *h and *s. Two moves on one test of c, which is known ahead: the
 * held word goes through one cmov per slot (the mask form, and, xor, xor,
 * takes three steps). Secret: c, *h, *s. */
static inline void nr_hold_swap(uint64_t c, uint64_t *h, uint64_t *s)
{
#if OBL_CT_X86
    uint64_t a = *h, b = *s, t = a;
    __asm__("test %[c], %[c]\n\t"
            "cmovnz %[b], %[a]\n\t"
            "cmovnz %[t], %[b]"
            : [a] "+&r"(a), [b] "+&r"(b)
            : [c] "r"(c), [t] "r"(t)
            : "cc");
    *h = a;
    *s = b;
#else
    obl_ct_cswap64(c, h, s);
#endif
}

/* Conditional block swap, with the 8-byte case in registers (obl_ct_cswap
 * has no 8-byte fast path). */
static inline void nr_cswap_blk(uint64_t c, void *a, void *b, size_t vs)
{
    if (vs == 8) { /* public */
        uint64_t x, y, m = obl_ct_mask(c), t;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        t = m & (x ^ y);
        x ^= t;
        y ^= t;
        memcpy(a, &x, 8);
        memcpy(b, &y, 8);
        return;
    }
    obl_ct_cswap(c, a, b, vs);
}

/*
 * Blocks held in vector registers (AVX-512 builds): a block of 16 to
 * NR_REG_MAX_W * 64 bytes is moved as
 * nr_reg_words(vs) 64-byte vectors, loaded and stored whole; the lanes of
 * the last vector past the block (the bytes outside nr_tail_lanes) are
 * never swapped, so they
 * store back the bytes they loaded (the next slot, the start of the next
 * bucket, or the 64 bytes of slack after the tree, the stash and o->tmp).
 * The next bucket is on the path only after the root (bucket 1); its
 * metadata, rewritten with the loaded bytes, is copied back from the path
 * buffer after the data pass, and its data is processed after the root's.
 * 0: not held in registers (other sizes, or no AVX-512). Public: vs.
 */
#define NR_REG_MAX_W 8
#define NR_SLACK 64
#define NR_REG_LOOP(w) _Pragma("GCC unroll 8") for (int w = 0; w < NW; w++)

static inline int nr_reg_words(size_t vs)
{
#if OBL_CT_AVX512
    if (vs >= 16 && vs <= NR_REG_MAX_W * 64)
        return (int)((vs + 63) / 64);
#else
    (void)vs;
#endif
    return 0;
}

/* Runs CALL(VS, NW) with NW = nr_reg_words(o->vs) as a constant (1 .. 8),
 * VS the constant 64 for 64-byte blocks and o->vs otherwise, so that each
 * register count gets its own code; OTHER when the block takes no register
 * path. Public: o->vs. */
#define NR_BY_WORDS(o, CALL, OTHER)                                                      \
    switch (nr_reg_words((o)->vs)) {                                                      \
    case 1:                                                                               \
        if ((o)->vs == 64)                                                                \
            CALL(64, 1);                                                                  \
        else                                                                              \
            CALL((o)->vs, 1);                                                             \
        break;                                                                            \
    case 2: CALL((o)->vs, 2); break;                                                      \
    case 3: CALL((o)->vs, 3); break;                                                      \
    case 4: CALL((o)->vs, 4); break;                                                      \
    case 5: CALL((o)->vs, 5); break;                                                      \
    case 6: CALL((o)->vs, 6); break;                                                      \
    case 7: CALL((o)->vs, 7); break;                                                      \
    case 8: CALL((o)->vs, 8); break;                                                      \
    default: OTHER; break;                                                                \
    }

#if OBL_CT_AVX512
/* All-ones bytes for the bytes of the block in its last vector. */
static inline __m512i nr_tail_lanes(size_t vs)
{
    unsigned n = (unsigned)((vs - 1) & 63) + 1;
    __mmask64 k = n == 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
    return _mm512_maskz_mov_epi8(k, _mm512_set1_epi8(-1));
}
#endif


#if OBL_CT_AVX512 /* used by nr_plan_target only */
/* a == b ? x : y (a, b < 2^63). Secret: every argument. */
static inline uint64_t nr_sel_eq(uint64_t a, uint64_t b, uint64_t x, uint64_t y)
{
#if OBL_CT_X86
    __asm__("cmp %[b], %[a]\n\t"
            "cmove %[x], %[y]"
            : [y] "+r"(y)
            : [a] "r"(a), [b] "r"(b), [x] "r"(x)
            : "cc");
    return y;
#else
    return obl_ct_select64(nr_eqs(a, b), x, y);
#endif
}
#endif

/* Tests only (nr_set_plan_scalar): 1 runs the scalar metadata passes even
 * where the vector ones apply. */
OBL_TEST_KNOB(int, nr_plan_scalar, 0);

#ifdef OBL_TESTING
void nr_set_plan_scalar(int on) { nr_plan_scalar = on; }
#endif

#if OBL_CT_AVX512 /* its one caller is the AVX-512 plan (nroram_impl.h) */
/*
 * PrepareTarget (fig. 4) over the arrays nr_plan_deepest fills, leaf to
 * root, into tg[0..D] (255 for none): src is the level a pending drop at
 * level dest waits for, or 255. At level lv, if src == lv the drop's block
 * is picked up here (tg[lv] = dest) and lv starts the next chain if a
 * level above has a block for it (dp[lv]); with nothing pending, lv starts
 * one if it also has an empty slot (idle[lv]); while src < lv is pending,
 * lv is passed over: one nr_target_step. A chain starts at lv exactly when
 * src changes to a level; dest also moves when src returns to 255, where
 * it is not read before the next start. Secret: every entry. Public: D.
 */
static inline void nr_plan_target(const uint16_t *dp, const uint16_t *idle, uint32_t D,
                                  uint16_t *tg)
{
    uint64_t src = 0xff, dest = 0xff;
    for (uint32_t lv = D + 1; lv-- > 0;) {
        uint64_t nsrc = nr_target_step(src, lv, dp[lv], idle[lv]);
        tg[lv] = (uint16_t)nr_sel_eq(src, lv, dest, 0xff);
        dest = nr_sel_eq(nsrc, src, dest, lv);
        src = nsrc;
    }
}
#endif

#if OBL_CT_AVX512
/*
 * The metadata passes of an eviction (nr_evict_core) in 16-bit vector lanes,
 * one lane per level: lane 0 the stash, lane k + 1 tree level k. Used when
 * the stash has at most 32 slots and the path at most 31 levels (public).
 * What the scalar passes compute level by level, here for all levels at
 * once: each level's deepest-going block and empty slot, PrepareDeepest's
 * running maximum (an inclusive prefix maximum, nr_scan_max16),
 * and EvictFast's swap decisions from PrepareTarget's targets (the held
 * block's destination is a prefix maximum too: the targets grow with the
 * level, nr_evict_core). Only PrepareTarget's chain stays scalar, over the
 * arrays this stores. Secret: every lane. Public: P, D.
 */
static const uint16_t nr_iota16[32] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                       11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                       22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

/* lane i <- max(x[0..i]). Within each 128-bit lane first (byte shifts,
 * one cycle each), then each lane takes the maximum of the lanes below
 * (their top words, broadcast and shifted by whole lanes): 14 instructions
 * in a chain of about 16 cycles, where five cross-lane word permutes
 * (vpermw) cost about twice that (perf: the permutes were the eviction's
 * largest item at 2^12). */
static inline __m512i nr_scan_max16(__m512i x)
{
    const __m512i z = _mm512_setzero_si512();
    x = _mm512_max_epu16(x, _mm512_bslli_epi128(x, 2));
    x = _mm512_max_epu16(x, _mm512_bslli_epi128(x, 4));
    x = _mm512_max_epu16(x, _mm512_bslli_epi128(x, 8));
    /* each lane's maximum (its word 7) in all its words */
    __m512i t = _mm512_shuffle_epi32(_mm512_shufflehi_epi16(x, 0xff), (_MM_PERM_ENUM)0xff);
    /* lane j <- max of lanes j - 1 .. 0: the maxima moved one lane up
     * (alignr by 6 qwords), then a prefix maximum over the four lanes by
     * a shift of one lane and one of two */
    __m512i u = _mm512_alignr_epi64(t, z, 6);
    u = _mm512_max_epu16(u, _mm512_alignr_epi64(u, z, 6));
    u = _mm512_max_epu16(u, _mm512_alignr_epi64(u, z, 4));
    return _mm512_max_epu16(x, u);
}

#ifdef OBL_TESTING
/* Tests only: out[i] = max(in[0..i]) by nr_scan_max16. */
int nr_test_scan_max16(const uint16_t in[32], uint16_t out[32])
{
    _mm512_storeu_si512((void *)out, nr_scan_max16(_mm512_loadu_si512((const void *)in)));
    return 1;
}
#endif

/* max(x[0..31]), as a scalar */
static inline uint32_t nr_reduce_max16(__m512i x)
{
    __m256i a = _mm256_max_epu16(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64(x, 1));
    __m128i b = _mm_max_epu16(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    /* the maximum is the complement of the complements' minimum */
    __m128i m = _mm_minpos_epu16(_mm_xor_si128(b, _mm_set1_epi16(-1)));
    return (uint32_t)(~_mm_cvtsi128_si32(m) & 0xffff);
}

/* Fills dp[0..D] (deepest, 255 for none) and idle[0..D] (deepest where the
 * level has an empty slot, else 255) for PrepareTarget; returns the
 * per-level facts the swap decisions need: bit k of *second = level k's
 * deepest block is its slot 1, of *e0 = its slot 0 is empty; *best0 the
 * stash slot of the deepest-going stash block. */
static inline void nr_plan_deepest(const uint16_t *rr, uint32_t P, uint32_t D, uint16_t *dp,
                                   uint16_t *idle, uint32_t *second, uint32_t *e0,
                                   uint32_t *best0)
{
    const __m512i iota = _mm512_loadu_si512((const void *)nr_iota16);
    const __m512i none = _mm512_set1_epi16(255), zero = _mm512_setzero_si512();
    const __mmask32 lvm = (__mmask32)(((1u << D) - 1) << 1); /* lanes 1..D */
    const __mmask32 pm = P >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << P) - 1);

    /* the stash: the deepest-going block (reach << 8 | slot, the largest
     * wins) and whether a slot is empty (255 - slot for the empty ones).
     * rr and tg are read as whole vectors (both have room) and masked in
     * registers (docs/oram.md, "Masked memory operands": in-process 2^20
     * 0.967, 0.928, 0.861, 0.994 x; 2^16 and 2^12 0.974-1.006 x); gcc 12
     * folds these masks, public lengths, back into masked loads */
    __m512i rs = _mm512_maskz_mov_epi16(pm, _mm512_loadu_si512((const void *)rr));
    __m512i bkey = _mm512_maskz_mov_epi16(pm, _mm512_or_si512(_mm512_slli_epi16(rs, 8), iota));
    __m512i ekey = _mm512_maskz_mov_epi16(pm & _mm512_cmpeq_epi16_mask(rs, zero),
                                          _mm512_sub_epi16(none, iota));
    uint32_t bk = nr_reduce_max16(bkey);
    uint32_t ek = nr_reduce_max16(ekey);
    *best0 = bk & 0xff;
    uint32_t he0 = (uint32_t)((0 - (uint64_t)ek) >> 63); /* ek > 0: an empty slot */

    /* the path: slot z of level k + 1 is rr[P + 2k + z] */
    uint32_t n = 2 * D;
    __mmask32 am = n >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << n) - 1);
    __mmask32 bmk = n > 32 ? (__mmask32)((1u << (n - 32)) - 1) : 0;
    __m512i a = _mm512_maskz_mov_epi16(am, _mm512_loadu_si512((const void *)(rr + P)));
    __m512i b = _mm512_maskz_mov_epi16(bmk, _mm512_loadu_si512((const void *)(rr + P + 32)));
    __m512i i0 = _mm512_slli_epi16(_mm512_sub_epi16(iota, _mm512_set1_epi16(1)), 1);
    __m512i r0 = _mm512_maskz_permutex2var_epi16(lvm, a, i0, b);
    __m512i r1 = _mm512_maskz_permutex2var_epi16(lvm, a, _mm512_add_epi16(i0, _mm512_set1_epi16(1)), b);
    __mmask32 z0 = _mm512_cmpeq_epi16_mask(r0, zero) & lvm;
    __mmask32 he = ((z0 | _mm512_cmpeq_epi16_mask(r1, zero)) & lvm) | he0;
    *second = _mm512_cmplt_epu16_mask(r0, r1) & lvm;
    *e0 = z0;

    /* PrepareDeepest (fig. 3): key reach << 8 | (255 - level), the stash's
     * in lane 0; deepest[k] comes from the maximum over the lanes above k */
    __m512i key = _mm512_or_si512(_mm512_slli_epi16(_mm512_max_epu16(r0, r1), 8),
                                  _mm512_sub_epi16(none, iota));
    key = _mm512_maskz_mov_epi16(lvm, key);
    key = _mm512_mask_mov_epi16(key, 1, _mm512_set1_epi16((short)((bk & 0xff00) | 255)));
    __m512i inc = nr_scan_max16(key);
    __m512i ex = _mm512_maskz_permutexvar_epi16((__mmask32)~1u, _mm512_sub_epi16(iota, _mm512_set1_epi16(1)), inc);
    __m512i goal = _mm512_srli_epi16(ex, 8);
    __m512i from = _mm512_sub_epi16(none, _mm512_and_si512(ex, none));
    __mmask32 hasd = _mm512_cmpge_epu16_mask(goal, iota) & lvm;
    __m512i deep = _mm512_mask_mov_epi16(none, hasd, from);
    _mm512_storeu_si512((void *)dp, deep);
    _mm512_storeu_si512((void *)idle, _mm512_mask_mov_epi16(none, he, deep));
}

/* From PrepareTarget's targets tg[0..D] (255 for none): bit k - 1 of *m0
 * (*m1) = at level k the held block swaps with slot 0 (slot 1); returns
 * the stash slot picked up (255 for none). */
static inline uint32_t nr_plan_swaps(const uint16_t *tg, uint32_t D, uint32_t second, uint32_t e0,
                                     uint32_t best0, uint64_t *m0, uint64_t *m1)
{
    const __m512i iota = _mm512_loadu_si512((const void *)nr_iota16);
    const __m512i none = _mm512_set1_epi16(255);
    const __mmask32 lvm = (__mmask32)(((1u << D) - 1) << 1);
    __m512i t = _mm512_maskz_mov_epi16(lvm | 1, _mm512_loadu_si512((const void *)tg));
    __mmask32 tgl = _mm512_cmpneq_epi16_mask(t, none) & (lvm | 1);
    /* the held block's destination on arriving at each level: the largest
     * target above it (nr_evict_core) */
    __m512i inc = nr_scan_max16(_mm512_maskz_mov_epi16(tgl, t));
    __m512i hd = _mm512_maskz_permutexvar_epi16((__mmask32)~1u, _mm512_sub_epi16(iota, _mm512_set1_epi16(1)), inc);
    __mmask32 towrite = _mm512_cmpeq_epi16_mask(hd, iota) & lvm;
    /* the slot: the deepest block's when picking up, else the first empty */
    __mmask32 s1 = (tgl & second) | (~tgl & ~e0);
    __mmask32 dos = (tgl | towrite) & lvm;
    *m0 = (uint64_t)((dos & ~s1) >> 1);
    *m1 = (uint64_t)((dos & s1) >> 1);
    uint32_t t0 = tgl & 1;
    return (uint32_t)obl_ct_select64(t0, best0, 255);
}
#elif defined(OBL_TESTING)
int nr_test_scan_max16(const uint16_t in[32], uint16_t out[32])
{
    (void)in;
    (void)out;
    return 0;
}
#endif

#define NRW 32
#include "oram/nroram_impl.h"
#undef NRW
#define NRW 64
#include "oram/nroram_impl.h"
#undef NRW

static void nr_free_all(obl_nroram *o)
{
    obl_alloc_ctx ac = o->ac;
    obl_free(&ac, o->tree, o->tree_bytes);
    obl_free(&ac, o->bmeta, o->bmeta_bytes);
    obl_free(&ac, o->bdata, o->bdata_bytes);
    obl_free(&ac, o->tmp, o->tmp_bytes);
    obl_prg_wipe(&o->prg);
    obl_free(&ac, o, sizeof(*o));
}

/* Marks every slot of the buffer (stash) empty, and with clear every slot
 * of the tree. */
static void nr_clear(obl_nroram *o, int clear)
{
    /* all-ones ids are the dummy id for both word sizes */
    if (clear)
        memset(o->tree, 0xff, o->tree_bytes); /* data of empty slots: any bytes */
    memset(o->bmeta, 0xff, o->bmeta_bytes);
}

/* see nroram_internal.h */
obl_err nr_create(obl_nroram **out, const obl_nroram_params *p, int clear)
{
    *out = NULL;
    uint32_t S = p->stash_size ? p->stash_size : OBL_ORAM_DEFAULT_STASH;
    if (S < 2 || S > 64)
        return OBL_ERR_INVALID_ARG;
    if (p->capacity == 0 || p->value_size == 0 || p->value_size > OBL_ORAM_MAX_VALUE_SIZE)
        return OBL_ERR_INVALID_ARG;
    uint32_t pb = p->pos_bytes;
    if (pb == 0)
        pb = p->capacity < UINT32_MAX ? 4 : 8;
    if (pb != 4 && pb != 8)
        return OBL_ERR_INVALID_ARG;
    if (pb == 4 && p->capacity >= UINT32_MAX)
        return OBL_ERR_TOO_LARGE;
    if (p->capacity > ((uint64_t)1 << 56))
        return OBL_ERR_TOO_LARGE;

    uint32_t logL = nr_log_leaves(p->capacity);
    uint64_t L = (uint64_t)1 << logL;
    if (pb == 4 && L > ((uint64_t)1 << 31))
        return OBL_ERR_TOO_LARGE;

    size_t vs = p->value_size, msz = pb == 4 ? sizeof(nr_meta32) : sizeof(nr_meta64);
    uint64_t nbuckets = 2 * L - 1;
    /* bucket stride rounded up to 8 bytes so that every bucket's metadata
     * is aligned */
    size_t bdat, bstride, tree_bytes;
    if (!obl_mul_ok(vs, NR_Z, &bdat) || !obl_add_ok(bdat, NR_Z * msz + 7, &bstride))
        return OBL_ERR_TOO_LARGE;
    bstride &= ~(size_t)7;
    /* A bucket of 33 to 63 bytes (8-byte values with 64-bit metadata: 48)
     * is padded to one cache line: it then never straddles two lines, so a
     * path is one line per level and no load of a bucket is split. Costs a
     * third more memory for those sizes only; NRORAM 8/8, both versions in
     * one process with 5 placements (docs/oram.md, "Buckets of one line"):
     * 0.955 and 0.955 x the time at 2^20, 0.928 and 0.934 x at 2^16.
     * Larger buckets keep their size (the RORAM's 144-byte ones would grow
     * by a third too, past its memory target). Public: the sizes. */
    if (bstride > 32 && bstride < 64)
        bstride = 64;
    if (!obl_mul_ok((size_t)nbuckets, bstride, &tree_bytes) || tree_bytes > OBL_ORAM_MAX_BYTES)
        return OBL_ERR_TOO_LARGE;
    tree_bytes += NR_SLACK; /* the register moves' overhang, see nr_reg_words */
    uint32_t P = S + 2, D = logL + 1;
    /* a tree that nr_build fills next also holds its working array */
    if (!clear && !obl_add_ok(tree_bytes, nr_build_slack(P, vs), &tree_bytes))
        return OBL_ERR_TOO_LARGE;
    uint32_t nslots = P + NR_Z * D;

    obl_alloc_ctx ac;
    obl_alloc_init(&ac, p->alloc);
    obl_nroram *o = (obl_nroram *)obl_alloc(&ac, sizeof(*o), 64);
    if (!o)
        return OBL_ERR_NOMEM;
    o->capacity = p->capacity;
    o->vs = vs;
    o->pb = pb;
    o->S = S;
    o->P = P;
    o->D = D;
    o->logL = logL;
    o->L = L;
    o->nslots = nslots;
    o->nbuckets = nbuckets;
    o->track_hist = p->track_histogram != 0;
    o->st.stash_size = S;
    o->tree_bytes = tree_bytes;
    o->tree_zero = !clear; /* obl_alloc zeroes */
    o->bstride = bstride;
    o->doff = NR_Z * msz;
    o->pf_lines = (size_t)nbuckets * bstride > NR_PF_LINES_BYTES;
    o->pf_lead = 1; /* obl_nroram_create: 2 */
    o->pf_k0 = 0;
    while (o->pf_k0 < D && ((((uint64_t)2 << o->pf_k0) - 1) * bstride) <= NR_PF_HOT_BYTES)
        o->pf_k0++;
    o->bmeta_bytes = (size_t)nslots * msz + NR_SLACK; /* whole-vector reads: nr_stash_count */
    o->bdata_bytes = (size_t)P * vs + NR_SLACK;
    o->tmp_bytes = vs + NR_SLACK;

    obl_err err = OBL_OK;
    if (p->use_seed)
        obl_prg_init_seed(&o->prg, p->seed);
    else
        err = obl_prg_init(&o->prg, p->random, p->random_opaque);
    if (err != OBL_OK) {
        o->ac = ac;
        nr_free_all(o);
        return err;
    }
    o->tree = (unsigned char *)obl_alloc(&ac, tree_bytes, OBL_ALIGN_RANDOM);
    o->bmeta = o->tree ? obl_alloc(&ac, o->bmeta_bytes, 64) : NULL;
    o->bdata = o->bmeta ? (unsigned char *)obl_alloc(&ac, o->bdata_bytes, 64) : NULL;
    o->tmp = o->bdata ? (unsigned char *)obl_alloc(&ac, o->tmp_bytes, 64) : NULL;
    o->ac = ac;
    if (!o->tmp) {
        nr_free_all(o);
        return OBL_ERR_NOMEM;
    }
    nr_clear(o, clear);
    /* The tree, the buffer (stash) and the scratch hold secrets from here
     * on: ids, leaves and values. */
    OBL_SECRET(o->tree, o->tree_bytes);
    OBL_SECRET(o->bmeta, o->bmeta_bytes);
    OBL_SECRET(o->bdata, o->bdata_bytes);
    OBL_SECRET(o->tmp, vs);
    OBL_SECRET(&o->st.stash_max, sizeof(o->st.stash_max));
    OBL_SECRET(o->st.hist, sizeof(o->st.hist));
    *out = o;
    return OBL_OK;
}

/* see nroram_internal.h */
obl_err nr_ready(obl_nroram *o)
{
    if (!o->full) /* public state */
        return OBL_OK;
    if (o->pb == 4) /* the owed evictions first (nr_settle) */
        nr_settle32(o);
    else
        nr_settle64(o);
    int ok = o->pb == 4 ? nr_drain32(o, 4 * o->D + 16) : nr_drain64(o, 4 * o->D + 16);
    o->full = !ok;
    return ok ? OBL_OK : OBL_ERR_STATE;
}

/* see obl/oram.h */
obl_err obl_nroram_create(obl_nroram **out, const obl_nroram_params *p)
{
    if (!out)
        return OBL_ERR_INVALID_ARG;
    *out = NULL;
    if (!p)
        return OBL_ERR_INVALID_ARG;
    obl_err e = nr_create(out, p, 1);
    /* A tree used alone has its accesses back to back: an access's second
     * eviction prefetches the path of the next access's second eviction,
     * not of its first, which would start after only the caller's work and
     * a ReadAndRemove (NRORAM 8/8, in-process A/B, 3 placements x 6
     * rounds, both orders: 2^20 0.934 and 0.946 x, 4/8 0.896 and 0.977 x,
     * 2^16 0.972 and 0.952 x, 2^12 1.00 x). The trees of a RORAM or a map
     * keep a lead of one: their next access comes after the other trees'
     * (two ahead there: RORAM 8/8 1.027 and 1.006 x, 8/56 1.012 and
     * 0.995 x, map get 1.010 and 1.021 x). */
    if (e == OBL_OK)
        (*out)->pf_lead = 2;
    return e;
}

/* see obl/oram.h */
uint64_t obl_nroram_num_leaves(const obl_nroram *o) { return o ? o->L : 0; }

/* see obl/oram.h */
uint64_t obl_nroram_random_pos(obl_nroram *o)
{
    /* Secret: the result, until the caller reveals it as a path. */
    return o ? obl_prg_bits(&o->prg, o->logL) : 0;
}

/*
 * The shared access body. Secret: id, new_pos, op, in/out contents, the
 * callback's work. Public: pos (checked < L), fn, the pointers.
 */
static obl_err nr_access_common(obl_nroram *o, uint64_t id, uint64_t pos, uint64_t new_pos,
                                uint64_t op, const void *in, void *out, uint64_t *found_out,
                                obl_oram_update_fn fn, void *ctx)
{
    if (!o)
        return OBL_ERR_INVALID_ARG;
    if (pos >= o->L) /* public: pos is revealed anyway */
        return OBL_ERR_RANGE;
    obl_err err = nr_ready(o);
    if (err != OBL_OK)
        return err;
    const size_t vs = o->vs;
    /* An id outside the id space (secret: no branch) becomes the dummy id,
     * which matches only empty slots (nr_fetch): its "found" and the bytes
     * it took are dropped below and nothing is stored, so it can neither
     * alias a stored id (4-byte ids) nor read an empty slot as a block. */
    uint64_t bad = obl_ct_ge64(id, obl_nroram_id_limit(o));
    id = obl_ct_select64(bad, UINT64_MAX, id);
    uint64_t found = o->pb == 4 ? nr_fetch32(o, id, pos) : nr_fetch64(o, id, pos);
    found &= bad ^ 1;
    obl_ct_czero(bad, o->tmp, vs);
    uint64_t keep;
    if (fn) {
        keep = found;
        fn(ctx, o->tmp, found, &keep);
        keep &= 1;
    } else {
        if (out)
            memcpy(out, o->tmp, vs);
        uint64_t is_write = obl_ct_eq64(op, OBL_ORAM_WRITE);
        uint64_t is_remove = obl_ct_eq64(op, OBL_ORAM_REMOVE);
        if (in) {
            obl_ct_cmov(is_write, o->tmp, in, vs);
        } else {
            obl_ct_czero(is_write, o->tmp, vs); /* in == NULL: writes zeros */
        }
        /* kept if present (read/write) or written; removed on REMOVE */
        keep = (found | is_write) & (is_remove ^ 1);
    }
    keep &= bad ^ 1;
    if (found_out)
        *found_out = found;
    return o->pb == 4 ? nr_put32(o, keep, id, new_pos) : nr_put64(o, keep, id, new_pos);
}

/* see obl/oram.h */
obl_err obl_nroram_access(obl_nroram *o, uint64_t id, uint64_t pos, uint64_t new_pos,
                          uint64_t op, const void *in, void *out, uint64_t *found)
{
    return nr_access_common(o, id, pos, new_pos, op, in, out, found, NULL, NULL);
}

/* see obl/oram.h */
obl_err obl_nroram_update(obl_nroram *o, uint64_t id, uint64_t pos, uint64_t new_pos,
                          obl_oram_update_fn fn, void *ctx)
{
    if (!fn)
        return OBL_ERR_INVALID_ARG;
    return nr_access_common(o, id, pos, new_pos, OBL_ORAM_READ, NULL, NULL, NULL, fn, ctx);
}

/* see obl/oram.h */
obl_err obl_nroram_insert(obl_nroram *o, uint64_t id, const void *value, uint64_t *pos_out)
{
    if (!o || !value || !pos_out)
        return OBL_ERR_INVALID_ARG;
    /* A random path: pos is public and uniform, independent of id. */
    uint64_t pos = obl_prg_bits(&o->prg, o->logL);
    OBL_DECLASSIFY(&pos, sizeof(pos)); /* LEAK: a fresh uniform leaf, by design */
    uint64_t np = obl_prg_bits(&o->prg, o->logL);
    obl_err err = nr_access_common(o, id, pos, np, OBL_ORAM_WRITE, value, NULL, NULL, NULL, NULL);
    if (err == OBL_OK || err == OBL_ERR_STASH_OVERFLOW)
        *pos_out = np;
    return err;
}

/* see obl/oram.h */
uint64_t obl_nroram_id_limit(const obl_nroram *o)
{
    if (!o)
        return 0;
    return o->pb == 4 ? NR_DUMMY32 : NR_DUMMY64;
}

/* see obl/oram.h */
uint64_t obl_nroram_export_slots(const obl_nroram *o)
{
    return o ? o->P + NR_Z * o->nbuckets : 0;
}

/* One slot's id, either width; all ones for an empty slot. Secret. */
static uint64_t nr_slot_id(const obl_nroram *o, const void *meta)
{
    if (o->pb == 4) { /* public */
        uint32_t id = ((const nr_meta32 *)meta)->id;
        return obl_ct_select64(obl_ct_eq64(id, NR_DUMMY32), UINT64_MAX, id);
    }
    return ((const nr_meta64 *)meta)->id;
}

static void nr_export_slot(uint64_t id, const void *value, obl_nroram_export_fn fn, void *ctx)
{
    fn(ctx, id, value, obl_ct_neq64(id, UINT64_MAX));
}

/* see obl/oram.h: the stash (metadata in bmeta, data in bdata), then
 * every bucket (Z metadata entries, then Z blocks at doff). */
obl_err obl_nroram_export(const obl_nroram *o, obl_nroram_export_fn fn, void *ctx)
{
    if (!o || !fn)
        return OBL_ERR_INVALID_ARG;
    const size_t msz = o->pb == 4 ? sizeof(nr_meta32) : sizeof(nr_meta64);
    const unsigned char *bm = (const unsigned char *)o->bmeta;
    for (uint32_t s = 0; s < o->P; s++)
        nr_export_slot(nr_slot_id(o, bm + s * msz), o->bdata + (size_t)s * o->vs, fn, ctx);
    for (uint64_t b = 0; b < o->nbuckets; b++) {
        const unsigned char *bp = o->tree + b * o->bstride;
        for (uint32_t z = 0; z < NR_Z; z++)
            nr_export_slot(nr_slot_id(o, bp + z * msz), bp + o->doff + z * o->vs, fn, ctx);
    }
    return OBL_OK;
}

/* see obl/oram.h */
void obl_nroram_stats(const obl_nroram *o, obl_oram_stats *st)
{
    if (!st)
        return;
    memset(st, 0, sizeof(*st));
    if (!o)
        return;
    *st = o->st;
    /* The caller asked for the statistics: they become public here. */
    OBL_DECLASSIFY(st, sizeof(*st));
}

/* see obl/oram.h */
size_t obl_nroram_memory_bytes(const obl_nroram *o) { return o ? o->ac.bytes : 0; }

/* see obl/oram.h */
void obl_nroram_destroy(obl_nroram *o)
{
    if (o)
        nr_free_all(o);
}
