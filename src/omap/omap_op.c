/*
 * The map's operation (obl_omap_access; src/omap/omap.c has sizing,
 * creation and the entry points): the passes over the key's bucket and the
 * overflow stash, and the compact layout's value ORAM access. Compiled once
 * per instruction-set variant (common/cpu.h): its only external name is
 * omap_access_fn_<variant>, which a map picks when it is created.
 */
#include <string.h>

#include <obl/omap.h>

#include "ct.h"
#include "common/cpu.h"
#include "common/secret.h"
#include "omap/omap_internal.h"
#include "oram/nroram_internal.h"
#include "oram/roram_internal.h"
#include "omap/siphash.h"
#include "omap/speck.h"

/* ---------------------------------------------------------- the bucket -- */

typedef struct {
    const obl_omap *m;
    const unsigned char *key; /* the index key, iks bytes */
    const unsigned char *in;  /* the slot value to store: the value (inline)
                                 or the new leaf (compact) */
    unsigned char *out;       /* the old slot value (left as is if absent) */
    uint64_t tag;             /* stash header of an entry of this bucket:
                                 1 | bucket << 1 */
    uint64_t is_put, is_erase;
    uint64_t upd;             /* a match takes `in` as its slot value: a put,
                                 or any op in the compact layout (new leaf) */
    uint64_t room;            /* a new key may be stored: fewer than capacity
                                 entries */
    uint64_t found;           /* out: the key was held (bucket or stash) */
    uint64_t full;            /* out: a put of a new key found no room */
    uint64_t added, removed;  /* out: an entry was added / removed */
    uint64_t occ;             /* out: stash entries after the operation */
} op_ctx;

/*
 * The operation on the key's bucket (bk, in the layout of omap_internal.h)
 * and on the stash, for any key and slot value size. In four passes: the
 * stash (reads: the key's entry, the first free entry, the first entry of
 * this bucket, which an erase from the bucket pulls back), the bucket
 * (reads: the key's slot, the first free slot), the stash (writes, and the
 * pulled entry's copy), the bucket (writes).
 * Secret: everything in c, the bucket and the stash. Public: B, S, sizes.
 */
static void op_generic(op_ctx *c, unsigned char *bk)
{
    const obl_omap *m = c->m;
    const size_t iks = m->iks, svs = m->svs;
    const uint32_t B = m->B, S = m->S, Sa = m->Sa;
    unsigned char *pk = m->scratch, *psv = pk + iks; /* the pulled entry */
    unsigned char *bkey = bk + OMAP_HS, *bsv = bkey + (size_t)B * iks;

    uint64_t fs = 0, msel = 0, hfs = 0, fsel = 0, cand = 0, csel = 0;
    for (uint32_t j = 0; j < Sa; j++) {
        uint64_t h = m->sh[j], valid = h & 1;
        uint64_t match = valid & obl_ct_memeq(m->skey + (size_t)j * iks, c->key, iks);
        obl_ct_cmov(match, c->out, m->ssv + (size_t)j * svs, svs);
        msel = obl_ct_select64(match, j, msel);
        fs |= match;
        /* a new key never takes the reserved entry (omap_internal.h) */
        uint64_t fr = (valid ^ 1) & (hfs ^ 1) & (uint64_t)(j < S);
        fsel = obl_ct_select64(fr, j, fsel);
        hfs |= fr;
        /* the entry to pull back: this bucket's first, not the key's own
         * if the key is being erased */
        uint64_t cb = obl_ct_eq64(h, c->tag) & ((match & c->is_erase) ^ 1) & (cand ^ 1);
        csel = obl_ct_select64(cb, j, csel);
        cand |= cb;
    }
    uint64_t hdr = ld64(bk), fb = 0, bsel = 0, hfb = 0, esel = 0;
    for (uint32_t i = 0; i < B; i++) {
        uint64_t v = (hdr >> i) & 1;
        uint64_t match = v & obl_ct_memeq(bkey + (size_t)i * iks, c->key, iks);
        obl_ct_cmov(match, c->out, bsv + (size_t)i * svs, svs);
        bsel = obl_ct_select64(match, i, bsel);
        fb |= match;
        uint64_t fr = (v ^ 1) & (hfb ^ 1);
        esel = obl_ct_select64(fr, i, esel);
        hfb |= fr;
    }
    uint64_t found = fb | fs, newkey = c->is_put & (found ^ 1);
    uint64_t ins_b = newkey & c->room & hfb;
    uint64_t ins_s = newkey & c->room & (hfb ^ 1) & hfs;
    uint64_t del_b = c->is_erase & fb, del_s = c->is_erase & fs;
    /* A stash entry of this bucket moves into it when the operation leaves
     * a slot free: into the key's slot after an erase, else into the first
     * free slot if the operation put no new key there. After an erase
     * this keeps the stash invariant; otherwise the bucket has no stash
     * entries but after a fingerprint collision's restore (see
     * obl_omap_access), which this heals. */
    uint64_t pull_b = cand & (del_b | (hfb & (ins_b ^ 1)));
    uint64_t pslot = obl_ct_select64(del_b, bsel, esel);

    uint64_t occ = 0;
    for (uint32_t j = 0; j < Sa; j++) {
        unsigned char *ek = m->skey + (size_t)j * iks, *ev = m->ssv + (size_t)j * svs;
        uint64_t h = m->sh[j];
        uint64_t mj = fs & obl_ct_eq64(j, msel), fj = ins_s & obl_ct_eq64(j, fsel);
        uint64_t cj = obl_ct_eq64(j, csel);
        obl_ct_cmov((mj & c->upd) | fj, ev, c->in, svs);
        obl_ct_cmov(fj, ek, c->key, iks);
        /* after the update: the pulled entry may be the key's own */
        obl_ct_cmov(cj, pk, ek, iks);
        obl_ct_cmov(cj, psv, ev, svs);
        h = obl_ct_select64((mj & del_s) | (cj & pull_b), 0, h);
        h = obl_ct_select64(fj, c->tag, h);
        m->sh[j] = h;
        occ += h & 1;
    }
    for (uint32_t i = 0; i < B; i++) {
        unsigned char *k = bkey + (size_t)i * iks, *v = bsv + (size_t)i * svs;
        uint64_t mi = fb & obl_ct_eq64(i, bsel), ei = ins_b & obl_ct_eq64(i, esel);
        uint64_t pi = pull_b & obl_ct_eq64(i, pslot);
        obl_ct_cmov((mi & c->upd) | ei, v, c->in, svs);
        obl_ct_cmov(ei, k, c->key, iks);
        obl_ct_cmov(pi, k, pk, iks);
        obl_ct_cmov(pi, v, psv, svs);
        uint64_t clear = mi & del_b & (pi ^ 1);
        hdr = (hdr & ~(clear << i)) | ((ei | pi) << i);
    }
    st64(bk, hdr);
    c->found = found;
    c->full = newkey & ((c->room & (hfb | hfs)) ^ 1);
    c->added = ins_b | ins_s;
    c->removed = del_b | del_s;
    c->occ = occ;
}

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
            uint64_t uj = 0 - (uint64_t)(j == up), fj = 0 - (uint64_t)(j == fill);            \
            uint64_t cj = 0 - (uint64_t)(j == clr), pj = 0 - (uint64_t)(j == pull);           \
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

/* The obl_roram_update callback: the operation on the key's bucket. */
static void op_fn(void *vctx, void *value, uint64_t found_unused, uint64_t *keep)
{
    (void)found_unused;
    (void)keep;
    op_ctx *c = (op_ctx *)vctx;
    const obl_omap *m = c->m;
    if (m->words && m->svs == 4) /* public */
        op_words(c, (unsigned char *)value, 4);
    else if (m->words)
        op_words(c, (unsigned char *)value, 8);
    else
        op_generic(c, (unsigned char *)value);
}

/*
 * Compact layout: the value ORAM's access for the operation, after the
 * index has given the key's old leaf (out, if found) and stored the new one
 * (nl). vin, vout: the value in and out (vs bytes each).
 * Secret: everything but m's parameters. Public: the revealed path.
 */
static obl_err omap_value_access(obl_omap *m, const op_ctx *c, uint64_t nl,
                                 const unsigned char *vin, unsigned char *vout)
{
    uint64_t pos = obl_ct_select64(c->found, ld32(c->out), obl_nroram_random_pos(m->vo));
    /* LEAK: the path read, by design (Circuit ORAM): the leaf the key's
     * block was given at its last access, never revealed since, or a fresh
     * one for an absent key; uniform and independent of the secrets. */
    OBL_DECLASSIFY(&pos, sizeof(pos));
    uint64_t id = ld64(c->key); /* the key's word: its block's id */
    uint64_t is1 = m->ones ? obl_ct_eq64(id, UINT64_MAX) : 0;
    uint64_t nop = obl_ct_select64(c->is_erase, OBL_ORAM_REMOVE, OBL_ORAM_READ);
    nop = obl_ct_select64(c->is_put, OBL_ORAM_WRITE, nop);
    /* the all-ones key reads the dummy id: nothing is stored or removed */
    nop = obl_ct_select64(is1, OBL_ORAM_READ, nop);
    obl_err e = obl_nroram_access(m->vo, id, pos, nl, nop, vin, vout, NULL);
    if (e != OBL_OK && e != OBL_ERR_STASH_OVERFLOW)
        return e;
    if (m->ones) {
        obl_ct_cmov(is1, vout, m->ones, m->vs);
        obl_ct_cmov(is1 & c->is_put, m->ones, vin, m->vs);
        obl_ct_czero(is1 & c->is_erase, m->ones, m->vs);
    }
    return e;
}

/* Fingerprint mode: the value ORAM's read-modify-write of the block
 * {key, value} under the key's fingerprint. */
typedef struct {
    const obl_omap *m;
    const unsigned char *key, *vin;
    unsigned char *vout;
    uint64_t is_put, is_erase;
    uint64_t match;   /* out: the block holds this key */
    uint64_t collide; /* out: it holds another key (same fingerprint) */
} fpv_ctx;

/*
 * The block's update: a stored key equal to the operation's is read,
 * updated (put) or removed (erase); another key with the same fingerprint
 * is left as it is (a collision); an absent block is inserted by a put.
 * Secret: everything in c and the block. Public: sizes.
 */
static void fpv_fn(void *vctx, void *value, uint64_t found, uint64_t *keep)
{
    fpv_ctx *c = (fpv_ctx *)vctx;
    const obl_omap *m = c->m;
    unsigned char *b = (unsigned char *)value;
    uint64_t match = found & obl_ct_memeq(b, c->key, m->ks);
    uint64_t collide = found & (match ^ 1);
    obl_ct_cmov(match, c->vout, b + m->ks, m->vs);
    uint64_t wr = c->is_put & (collide ^ 1);
    obl_ct_cmov(wr, b, c->key, m->ks);
    obl_ct_cmov(wr, b + m->ks, c->vin, m->vs);
    *keep = (found & ((c->is_erase & match) ^ 1)) | ((found ^ 1) & c->is_put);
    c->match = match;
    c->collide = collide;
}

/*
 * Fingerprint mode: as omap_value_access, for the block whose id is `f`,
 * the word of the key's fingerprint. Sets *match and *collide (fpv_ctx). Secret: everything but m's
 * parameters. Public: the revealed path.
 */
static obl_err omap_value_fp(obl_omap *m, const op_ctx *c, const unsigned char *key,
                             uint64_t f, uint64_t nl, const unsigned char *vin,
                             unsigned char *vout, uint64_t *match, uint64_t *collide)
{
    uint64_t pos = obl_ct_select64(c->found, ld32(c->out), obl_nroram_random_pos(m->vo));
    /* LEAK: the path read, as in omap_value_access */
    OBL_DECLASSIFY(&pos, sizeof(pos));
    fpv_ctx v = {m, key, vin, vout, c->is_put, c->is_erase, 0, 0};
    obl_err e = obl_nroram_update(m->vo, f, pos, nl, fpv_fn, &v);
    *match = v.match;
    *collide = v.collide;
    return e;
}

/* see obl/omap.h (obl_omap_access) */
static obl_err omap_access_impl(obl_omap *m, uint64_t op, const void *key, const void *value_in,
                        void *value_out, uint64_t *found)
{
    /*
     * Secret: op, key, the values, the outcome. Public: the parameters, the
     * pointers' NULL-ness, the error code, the number of operations made.
     * The access sequence is fixed: one read-modify-write of the key's
     * bucket (with two stash scans inside), then in the compact layout one
     * access of the value ORAM.
     */
    if (!m || !key)
        return OBL_ERR_INVALID_ARG;
    const int compact = m->vo != NULL;
    if (compact) {
        /* refuse before the index changes (public state, see oram.h) */
        obl_err e = nr_ready(m->vo);
        if (e != OBL_OK)
            return e;
    }
    obl_err err = ro_ready(m->oram);
    if (err != OBL_OK)
        return err;
    /* in, out: the slot value given to and taken from the index: the value
     * (inline; zero-extended to svs bytes), or the new and the old leaf
     * (compact); vin, vout: the value */
    unsigned char *in = m->scratch + m->ses, *out = in + m->svs;
    unsigned char *vin = out + m->svs, *vout = vin + m->vs;
    if (value_in)
        memcpy(vin, value_in, m->vs);
    else
        memset(vin, 0, m->vs);
    memset(vout, 0, m->vs);
    memset(in, 0, m->svs);
    memset(out, 0, m->svs);
    uint64_t nl = 0;
    if (compact) {
        nl = obl_nroram_random_pos(m->vo);
        st32(in, nl);
    } else {
        memcpy(in, vin, m->vs);
    }
    /* the index key: a word map's word (omap_word), else the key,
     * zero-extended to 8 bytes if shorter */
    const unsigned char *ikey = (const unsigned char *)key;
    /* 64 bytes, not 8: the copies and compares of m->iks bytes have vector
     * paths that gcc's bounds warning cannot rule out for a shorter array */
    _Alignas(64) unsigned char fpk[64] = {0};
    uint64_t b;
    if (m->words) { /* public */
        uint64_t w = omap_word(m, key);
        memcpy(fpk, &w, 8);
        ikey = fpk;
        b = omap_word_bucket(m, w);
    } else {
        if (m->ks < m->iks) { /* public */
            memcpy(fpk, key, m->ks);
            ikey = fpk;
        }
        b = omap_bucket(m, ikey);
    }
    uint64_t is_put = obl_ct_eq64(op, OBL_OMAP_PUT);
    op_ctx c = {m, ikey, in, out, 1 | (b << 1), is_put, obl_ct_eq64(op, OBL_OMAP_ERASE),
                compact ? 1 : is_put, obl_ct_lt64(m->count, m->capacity), 0, 0, 0, 0, 0};
    err = obl_roram_update(m->oram, b, op_fn, &c);
    if (err != OBL_OK && err != OBL_ERR_STASH_OVERFLOW)
        return err;
    m->st.operations++;
    m->st.oram_accesses++;
    /* LEAK: a put of a new key that found no room: the map holds capacity
     * entries, or the key's bucket and the stash are full; the public
     * capacity event OBL_ERR_FULL (obl/omap.h). Nothing was changed: the
     * key matched nowhere and no slot or entry was written. */
    if (OBL_DECLASSIFY_VAL(c.full)) {
        m->st.full_errors++;
        if (found)
            *found = 0;
        return OBL_ERR_FULL;
    }
    m->st.overflow_max = obl_ct_max64(m->st.overflow_max, c.occ);
    if (!compact)
        memcpy(vout, out, m->vs);
    m->count += c.added - c.removed;
    uint64_t present = c.found; /* the key was in the map */
    uint64_t match = 0, collide = 0;
    if (compact) {
        obl_err e;
        if (m->fp) { /* public */
            uint64_t f;
            memcpy(&f, fpk, 8);
            e = omap_value_fp(m, &c, (const unsigned char *)key, f, nl, vin, vout, &match,
                              &collide);
        } else {
            e = omap_value_access(m, &c, nl, vin, vout);
        }
        m->st.oram_accesses++;
        if (e == OBL_ERR_STASH_OVERFLOW)
            err = e;
        else if (e != OBL_OK)
            return e;
    }
    if (m->fp) { /* public */
        present = match;
        /* An erase of a key whose fingerprint belongs to another key took
         * that key's index entry out: it goes back, as a stash entry of the
         * bucket with the block's new leaf (the value ORAM kept the block
         * there). */
        uint64_t restore = c.is_erase & collide;
        uint64_t back = 0;
        for (uint32_t j = 0; j < m->Sa; j++) {
            uint64_t h = m->sh[j];
            uint64_t fr = ((h & 1) ^ 1) & (back ^ 1) & restore;
            m->sh[j] = obl_ct_select64(fr, c.tag, h);
            obl_ct_cmov(fr, m->skey + (size_t)j * m->iks, fpk, m->iks);
            obl_ct_cmov(fr, m->ssv + (size_t)j * m->svs, in, m->svs);
            back |= fr;
        }
        m->count += back;
        /* LEAK: a put of a new key whose 64-bit fingerprint is another
         * stored key's (probability about count / 2^64 per put): the public
         * capacity event OBL_ERR_FULL; the map's contents are unchanged
         * (the other key's block kept its value). And, with probability
         * about 2^-128 (the entry reserved for it held by an earlier
         * restore, and the stash full), an erase that could not put the
         * other key's entry back (OBL_ERR_STATE, docs/omap.md,
         * "Fingerprints"). */
        uint64_t full = c.is_put & collide, lost = restore & (back ^ 1);
        uint64_t fail = full | lost;
        if (OBL_DECLASSIFY_VAL(fail)) {
            m->st.full_errors += OBL_DECLASSIFY_VAL(full);
            if (found)
                *found = 0;
            return OBL_DECLASSIFY_VAL(lost) ? OBL_ERR_STATE : OBL_ERR_FULL;
        }
    }
    if (value_out)
        memcpy(value_out, vout, m->vs);
    if (found)
        *found = present;
    return err;
}

OBL_VARIANT_DECLARE(const omap_access_t, omap_access_fn);
const omap_access_t OBL_V(omap_access_fn) = omap_access_impl;
