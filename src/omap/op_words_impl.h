/* SPDX-License-Identifier: MIT */
/*
 * The map's operation on a bucket and the stash for word maps (8-byte
 * index keys, 4- or 8-byte slot values; omap_internal.h, "Quotiented
 * index"): the bucket unpacked into word arrays, two passes each over the
 * stash and the bucket written to vectorise, and the bucket packed back.
 * An implementation file: included once, by access.c (omap_op.h says why).
 */
#ifndef OBL_SRC_OMAP_OP_WORDS_IMPL_H
#define OBL_SRC_OMAP_OP_WORDS_IMPL_H

#include <string.h>

#include "ct.h"
#include "omap/omap_op.h"

/*
 * The four passes of op_generic for 8-byte index keys and 4- or 8-byte
 * slot values (the compact layout with keys of at most 8 bytes or
 * fingerprints; the inline layout with keys and values of at most 8
 * bytes), on words (the bucket unpacked by omap_unpack): written as plain mask
 * arithmetic on comparisons, without per-element barriers, over restrict
 * arrays, so that the compiler vectorises them (as the ORAM's eviction
 * passes; a comparison yields a mask, never a branch: the ct build checks
 * the compiled code under memcheck, the masked-operand audit the AVX-512
 * one). The selected positions are minima (the first free entry, the first
 * entry of the bucket) or OR-ed masked indices (at most one entry holds the
 * key). OMAP_WORD_PASSES(T, sfx) defines them for slot values of type T.
 * They are compiled without AVX-512 (OMAP_NO_AVX512), as AVX2 code, the
 * instruction set the ct build runs under memcheck: with AVX-512, gcc 12
 * folds the masks of these loops into zero-masked loads ({%k}{z}) whose
 * masks are secret comparisons, which the masked-operand audit rejects
 * (docs/oram.md, "Masked memory operands").
 * Secret: the arrays' contents and every word argument. Public: n.
 */
#if defined(__x86_64__) && defined(__AVX512F__)
#define OMAP_NO_AVX512 __attribute__((noinline, target("no-avx512f")))
#else
#define OMAP_NO_AVX512
#endif
/* The write pass's position masks, hidden from clang: clang 14 turned
 * `0 - (j == up)` and the masked updates it feeds into a compare and a
 * conditional jump over the update (a branch on the secret position, which
 * the ct build's memcheck reports when built with clang). gcc 12 keeps
 * them as masks and vectorises the loop, which a barrier per element would
 * stop, so the barrier is clang's only. */
#if defined(__clang__)
#define OMAP_POS_MASK(x) obl_ct_barrier64(x)
#else
#define OMAP_POS_MASK(x) (x)
#endif
typedef uint64_t omap_w64 __attribute__((may_alias));
typedef uint32_t omap_w32 __attribute__((may_alias));

typedef struct {
    uint64_t out, found, sel, free, cand; /* sel: where the key is; free, cand:
                                             minima, >= n when none */
} omap_scan;

#define OMAP_WORD_PASSES(T, sfx)                                                              \
    /* reads: the key's entry (OR-ed), the first free entry and the first  \
     * entry whose header is `tag`, not the key's if excl (minima) */       \
    static OMAP_NO_AVX512 void omap_read_##sfx(const omap_w64 *restrict hd, const omap_w64 *restrict keys,  \
                                const void *svp, size_t n, uint64_t key, uint64_t tag,       \
                                uint64_t excl, omap_scan *r)                                  \
    {                                                                                         \
        const T *restrict sv = (const T *)svp;                                                \
        uint64_t out = 0, fs = 0, sel = 0, fr = UINT64_MAX, cd = UINT64_MAX;                  \
        for (size_t j = 0; j < n; j++) {                                                      \
            uint64_t h = hd[j], v = h & 1;                                                    \
            uint64_t match = v & (uint64_t)(keys[j] == key), mm = 0 - match;                  \
            out |= (uint64_t)sv[j] & mm;                                                      \
            sel |= j & mm;                                                                    \
            fs |= match;                                                                      \
            uint64_t fj = j | (0 - v);                                                        \
            fr = fr < fj ? fr : fj;                                                           \
            uint64_t cj = j | (0 - ((uint64_t)(h != tag) | (match & excl)));                 \
            cd = cd < cj ? cd : cj;                                                           \
        }                                                                                     \
        r->out = out;                                                                         \
        r->found = fs;                                                                        \
        r->sel = sel;                                                                         \
        r->free = fr;                                                                         \
        r->cand = cd;                                                                         \
    }                                                                                         \
    /* writes: entry `up` takes slot value upv; entry `fill` takes key     \
     * fkey, slot value fval and header `tag`; entries `clr` and `pull`     \
     * (the latter under pullm) lose their valid bit; key and slot value of \
     * entry `pull` are returned in *pk, *psv (even if it stays). Indices  \
     * >= n select nothing. Returns the number of valid entries. */         \
    static OMAP_NO_AVX512 uint64_t omap_write_##sfx(omap_w64 *restrict hd, omap_w64 *restrict keys,         \
                                     void *svp, size_t n, uint64_t up, uint64_t upv,          \
                                     uint64_t fill, uint64_t fkey, uint64_t fval, uint64_t tag, \
                                     uint64_t clr, uint64_t pull, uint64_t pullm, uint64_t *pk, \
                                     uint64_t *psv)                                           \
    {                                                                                         \
        T *restrict sv = (T *)svp;                                                            \
        uint64_t k0 = 0, v0 = 0, occ = 0;                                                     \
        for (size_t j = 0; j < n; j++) {                                                      \
            uint64_t h = hd[j], k = keys[j], v = sv[j];                                       \
            uint64_t uj = OMAP_POS_MASK(0 - (uint64_t)(j == up));                             \
            uint64_t fj = OMAP_POS_MASK(0 - (uint64_t)(j == fill));                           \
            uint64_t cj = OMAP_POS_MASK(0 - (uint64_t)(j == clr));                            \
            uint64_t pj = OMAP_POS_MASK(0 - (uint64_t)(j == pull));                           \
            v ^= uj & (v ^ upv);                                                              \
            v ^= fj & (v ^ fval);                                                             \
            k ^= fj & (k ^ fkey);                                                             \
            k0 |= k & pj; /* after the update: it may be entry `up` */                         \
            v0 |= v & pj;                                                                     \
            h &= ~(cj | (pj & pullm));                                                        \
            h ^= fj & (h ^ tag);                                                              \
            keys[j] = k;                                                                      \
            sv[j] = (T)v;                                                                     \
            hd[j] = h;                                                                        \
            occ += h & 1;                                                                     \
        }                                                                                     \
        *pk = k0;                                                                             \
        *psv = v0;                                                                            \
        return occ;                                                                           \
    }

OMAP_WORD_PASSES(omap_w32, 32)
OMAP_WORD_PASSES(omap_w64, 64)

/* Bucket headers as word arrays: slot i's valid bit, one word per slot. */
static void omap_bits_to_words(uint64_t hdr, omap_w64 *restrict w, uint32_t B)
{
    for (uint32_t i = 0; i < B; i++)
        w[i] = (hdr >> i) & 1;
}

/* A word map's bucket, unpacked: its bytes with room for the 8-byte loads
 * and stores past the last slot, the slots' words and their values
 * (svs bytes each, zero-extended). */
typedef struct {
    _Alignas(64) unsigned char raw[OMAP_HS + OBL_OMAP_MAX_SLOTS * 16 + 8];
    _Alignas(64) omap_w64 key[OBL_OMAP_MAX_SLOTS];
    _Alignas(64) uint64_t sv[OBL_OMAP_MAX_SLOTS]; /* svs x B bytes used */
} omap_unpacked;

/*
 * Unpacks bucket bk (m->bsz bytes) of bucket number b into u: slot i's
 * word is b << wshift | its stored rest, its value the lw stored bytes.
 * Every slot, full or empty, the same way. Secret: b, the bucket.
 * Public: m's sizes, svs.
 */
static void omap_unpack(const obl_omap *m, const unsigned char *bk, uint64_t b,
                        omap_unpacked *u, const size_t svs)
{
    const uint32_t B = m->B, rw = m->rw, lw = m->lw;
    const uint64_t top = m->logM ? b << m->wshift : 0;
    const uint64_t rmask = omap_rest_mask(m), lmask = UINT64_MAX >> (64 - 8 * lw);
    const unsigned char *rs = u->raw + OMAP_HS, *ls = rs + (size_t)B * rw;
    memcpy(u->raw, bk, m->bsz);
    memset(u->raw + m->bsz, 0, 8);
    for (uint32_t i = 0; i < B; i++)
        u->key[i] = top | (ld64(rs + (size_t)i * rw) & rmask);
    if (svs == 4) { /* public */
        omap_w32 *sv = (omap_w32 *)(void *)u->sv;
        for (uint32_t i = 0; i < B; i++)
            sv[i] = (uint32_t)(ld64(ls + (size_t)i * lw) & lmask);
    } else {
        for (uint32_t i = 0; i < B; i++)
            u->sv[i] = ld64(ls + (size_t)i * lw) & lmask;
    }
}

/*
 * Packs u back into bk: slot i keeps the low wshift bits of its word (its
 * bucket's are the same for every slot) and lw bytes of its value. The
 * 8-byte stores go in increasing address order, so each one's spill over
 * the next slot is rewritten by that slot's store; the spills past the
 * last value are zero bytes (rests and values fit their widths).
 * Secret: the contents. Public: m's sizes, svs.
 */
static void omap_pack(const obl_omap *m, unsigned char *bk, uint64_t hdr, omap_unpacked *u,
                      const size_t svs)
{
    const uint32_t B = m->B, rw = m->rw, lw = m->lw;
    const uint64_t rmask = omap_rest_mask(m), lmask = UINT64_MAX >> (64 - 8 * lw);
    unsigned char *rs = u->raw + OMAP_HS, *ls = rs + (size_t)B * rw;
    st64(u->raw, hdr);
    for (uint32_t i = 0; i < B; i++)
        st64(rs + (size_t)i * rw, u->key[i] & rmask);
    if (svs == 4) { /* public */
        const omap_w32 *sv = (const omap_w32 *)(const void *)u->sv;
        for (uint32_t i = 0; i < B; i++)
            st64(ls + (size_t)i * lw, sv[i] & lmask);
    } else {
        for (uint32_t i = 0; i < B; i++)
            st64(ls + (size_t)i * lw, u->sv[i] & lmask);
    }
    memcpy(bk, u->raw, m->bsz);
}

/*
 * op_generic on words: the stash and the bucket go through the same two
 * passes (the bucket's header bits unpacked into words and back).
 * Secret: as op_generic. Public: B, S, svs.
 */
static inline __attribute__((always_inline)) void op_words(op_ctx *c, unsigned char *bk,
                                                           const size_t svs)
{
    const obl_omap *m = c->m;
    const uint32_t B = m->B, S = m->S, Sa = m->Sa;
    uint64_t key, in = 0, out = 0;
    memcpy(&key, c->key, 8);
    memcpy(&in, c->in, svs);
    memcpy(&out, c->out, svs);
    omap_unpacked u;
    omap_unpack(m, bk, c->tag >> 1, &u, svs);
    omap_w64 *bkey = u.key;
    void *bsv = u.sv;
    omap_w64 bw[OBL_OMAP_MAX_SLOTS];
    omap_bits_to_words(ld64(bk), bw, B);
    /* the passes for this slot value size (public) */
    void (*const rd)(const omap_w64 *, const omap_w64 *, const void *, size_t, uint64_t,
                     uint64_t, uint64_t, omap_scan *) = svs == 4 ? omap_read_32 : omap_read_64;
    uint64_t (*const wr)(omap_w64 *, omap_w64 *, void *, size_t, uint64_t, uint64_t, uint64_t,
                         uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t *,
                         uint64_t *) = svs == 4 ? omap_write_32 : omap_write_64;
    omap_w64 *skey = (omap_w64 *)(void *)m->skey;
    omap_scan rs, rb;
    rd(m->sh, skey, m->ssv, Sa, key, c->tag, c->is_erase, &rs);
    /* the bucket's read pass looks for no pulled entry: no word of bw (0 or
     * 1) equals the tag UINT64_MAX */
    rd(bw, bkey, bsv, B, key, UINT64_MAX, 1, &rb);
    uint64_t fs = rs.found, fb = rb.found;
    out = obl_ct_select64(fs | fb, rs.out | rb.out, out);
    /* the first free entry, if it is not the reserved one (a free entry
     * below S comes first when there is one) */
    uint64_t hfs = obl_ct_lt64(rs.free, S), cand = obl_ct_lt64(rs.cand, Sa);
    uint64_t hfb = obl_ct_lt64(rb.free, B);
    uint64_t found = fb | fs, newkey = c->is_put & (found ^ 1);
    uint64_t ins_b = newkey & c->room & hfb;
    uint64_t ins_s = newkey & c->room & (hfb ^ 1) & hfs;
    uint64_t del_b = c->is_erase & fb, del_s = c->is_erase & fs;
    /* the pull-back of op_generic */
    uint64_t pull_b = cand & (del_b | (hfb & (ins_b ^ 1)));
    const uint64_t NONE = UINT64_MAX;
    /* stash: the key's entry is updated (upd) or cleared (erase); the free
     * entry takes a new key; the pulled entry leaves */
    uint64_t s_up = obl_ct_select64(fs & c->upd, rs.sel, NONE);
    uint64_t s_fill = obl_ct_select64(ins_s, rs.free, NONE);
    uint64_t s_clr = obl_ct_select64(del_s, rs.sel, NONE);
    /* bucket: the key's slot is updated, or cleared on erase unless the
     * pulled entry takes it; the free slot (or the key's after an erase)
     * takes the new key or the pulled entry */
    uint64_t b_up = obl_ct_select64(fb & c->upd, rb.sel, NONE);
    uint64_t b_clr = obl_ct_select64(del_b & (pull_b ^ 1), rb.sel, NONE);
    uint64_t b_fill = obl_ct_select64(pull_b, obl_ct_select64(del_b, rb.sel, rb.free),
                                      obl_ct_select64(ins_b, rb.free, NONE));
    uint64_t pk, psv, dk, dv;
    uint64_t occ = wr(m->sh, skey, m->ssv, Sa, s_up, in, s_fill, key, in, c->tag, s_clr, rs.cand,
                      obl_ct_mask(pull_b), &pk, &psv);
    wr(bw, bkey, bsv, B, b_up, in, b_fill, obl_ct_select64(pull_b, pk, key),
       obl_ct_select64(pull_b, psv, in), 1, b_clr, NONE, 0, &dk, &dv);
    uint64_t hdr = 0;
    for (uint32_t i = 0; i < B; i++)
        hdr |= (bw[i] & 1) << i;
    omap_pack(m, bk, hdr, &u, svs);
    memcpy(c->out, &out, svs);
    c->found = found;
    c->full = newkey & ((c->room & (hfb | hfs)) ^ 1);
    c->added = ins_b | ins_s;
    c->removed = del_b | del_s;
    c->occ = occ;
}

#endif /* OBL_SRC_OMAP_OP_WORDS_IMPL_H */
