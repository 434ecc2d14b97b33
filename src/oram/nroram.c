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
    o->pf_k0 = 0;
    while (o->pf_k0 < D && ((((uint64_t)2 << o->pf_k0) - 1) * bstride) <= NR_PF_HOT_BYTES)
        o->pf_k0++;
    o->bmeta_bytes = (size_t)nslots * msz;
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
    return nr_create(out, p, 1);
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
    uint64_t found = o->pb == 4 ? nr_fetch32(o, id, pos) : nr_fetch64(o, id, pos);
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
    if (!o || !pos_out)
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
