/*
 * The Circuit ORAM access and eviction, written once for both metadata word
 * sizes: included by nroram.c with NRW defined to 32 and then to 64.
 *
 * Circuit ORAM, Wang, Chan, Shi, CCS 2015 (eprint 2014/672), section 3:
 * ReadAndRemove on the path of the accessed block, the block put into the
 * stash with its new leaf, then eviction. Eviction (section 3.3, figures
 * 3-5): PrepareDeepest and PrepareTarget run on metadata only (ids and
 * leaves: one pass root-to-leaf, one leaf-to-root), then EvictFast moves
 * data in a single pass down the path holding at most one block.
 *
 * Evictions per access: two, on the accessed path (already in the buffer,
 * so it costs no extra path read) and on the next path in reverse-
 * lexicographic order (section 3.2; Gentry et al. 2013). The stash size is
 * justified by the measurement in docs/oram.md.
 *
 * Every loop bound below is public (P, D, Z, vs); every secret flows
 * through obl_ct_* selects and conditional moves.
 */

#define NR_CAT2(a, b) a##b
#define NR_CAT(a, b) NR_CAT2(a, b)
#define NR_F(name) NR_CAT(name, NRW)
#define NR_META NR_CAT(nr_meta, NRW)
#define NR_DUMMY NR_CAT(NR_DUMMY, NRW)
#if NRW == 32
#define NR_WORD uint32_t
#define NR_SEL(c, a, b) obl_ct_select32((c), (a), (b))
#else
#define NR_WORD uint64_t
#define NR_SEL(c, a, b) obl_ct_select64((c), (a), (b))
#endif

/* Heap index of the bucket at level k on the path to `leaf` (public). */
static inline uint64_t NR_F(nr_bucket)(const obl_nroram *o, uint64_t leaf, uint32_t k)
{
    return (((uint64_t)1 << k) - 1) + (leaf >> (o->logL - k));
}

/* Copies path `leaf` into the buffer after the stash. Public: leaf. */
static void NR_F(nr_load_path)(obl_nroram *o, uint64_t leaf)
{
    NR_META *tm = (NR_META *)o->tmeta;
    NR_META *bm = (NR_META *)o->bmeta;
    const size_t vs = o->vs;
    /* Prefetch every level first: the deep levels miss the caches, and the
     * misses overlap instead of queueing behind each copy. */
    for (uint32_t k = 0; k < o->D; k++) {
        uint64_t b = NR_F(nr_bucket)(o, leaf, k);
        __builtin_prefetch(&tm[b * NR_Z]);
        const unsigned char *d = o->tdata + b * NR_Z * vs;
        for (size_t off = 0; off < NR_Z * vs && off < 256; off += 64)
            __builtin_prefetch(d + off);
    }
    for (uint32_t k = 0; k < o->D; k++) {
        uint64_t b = NR_F(nr_bucket)(o, leaf, k);
        size_t s = o->P + (size_t)k * NR_Z;
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_READ, b, 1);
        memcpy(&bm[s], &tm[b * NR_Z], NR_Z * sizeof(NR_META));
        memcpy(o->bdata + s * vs, o->tdata + b * NR_Z * vs, NR_Z * vs);
    }
}

static void NR_F(nr_store_path)(obl_nroram *o, uint64_t leaf)
{
    NR_META *tm = (NR_META *)o->tmeta;
    const NR_META *bm = (const NR_META *)o->bmeta;
    const size_t vs = o->vs;
    for (uint32_t k = 0; k < o->D; k++) {
        uint64_t b = NR_F(nr_bucket)(o, leaf, k);
        size_t s = o->P + (size_t)k * NR_Z;
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_WRITE, b, 1);
        memcpy(&tm[b * NR_Z], &bm[s], NR_Z * sizeof(NR_META));
        memcpy(o->tdata + b * NR_Z * vs, o->bdata + s * vs, NR_Z * vs);
    }
}

/*
 * Deepest level index (0 = stash, k + 1 = tree level k) a block with leaf
 * `leaf` may occupy on the path to `e`: 1 + the length of the common prefix
 * of the two logL-bit labels. The sentinel 1 bit caps the count at logL and
 * keeps the clz argument non-zero (lzcnt/bsr take the same time for any
 * non-zero input). Secret: leaf. Public: e, logL.
 */
static inline uint64_t NR_F(nr_reach)(uint64_t leaf, uint64_t e, uint32_t logL)
{
    uint64_t x = ((leaf ^ e) << 1 | 1) << (63 - logL);
    return (uint64_t)__builtin_clzll(x) + 1;
}

#define NR_NONE ((uint64_t)0xff)

/*
 * Circuit ORAM eviction on the buffer, which holds path e. Section 3.3:
 * PrepareDeepest (fig. 3), PrepareTarget (fig. 4), EvictFast (fig. 5).
 * Secret: every id, leaf and value in the buffer. Public: e.
 */
static void NR_F(nr_evict_buf)(obl_nroram *o, uint64_t e)
{
    NR_META *bm = (NR_META *)o->bmeta;
    const uint32_t D = o->D, P = o->P, logL = o->logL;
    const size_t vs = o->vs;

    OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_STASH, OBL_TRACE_RW, 0, P);

    /* PrepareDeepest, plus per level the slot of its deepest-going block
     * and of its first empty slot. */
    uint64_t goal = 0, src = NR_NONE;
    for (uint32_t lv = 0; lv <= D; lv++) {
        uint32_t s0 = lv == 0 ? 0 : P + (lv - 1) * NR_Z;
        uint32_t ns = lv == 0 ? P : NR_Z;
        if (lv > 0)
            o->deepest[lv] = obl_ct_select64(obl_ct_ge64(goal, lv), src, NR_NONE);
        else
            o->deepest[0] = NR_NONE;
        uint64_t bestr = 0, bests = s0, emptys = s0, hasempty = 0;
        for (uint32_t s = s0; s < s0 + ns; s++) {
            uint64_t isd = obl_ct_eq64(bm[s].id, NR_DUMMY);
            uint64_t r = obl_ct_select64(isd, 0, NR_F(nr_reach)(bm[s].leaf, e, logL));
            uint64_t better = obl_ct_gt64(r, bestr);
            bestr = obl_ct_select64(better, r, bestr);
            bests = obl_ct_select64(better, s, bests);
            uint64_t first = isd & (hasempty ^ 1);
            emptys = obl_ct_select64(first, s, emptys);
            hasempty |= isd;
        }
        o->best[lv] = bests;
        o->empty[lv] = emptys;
        o->hasempty[lv] = hasempty;
        uint64_t upd = obl_ct_gt64(bestr, goal);
        goal = obl_ct_select64(upd, bestr, goal);
        src = obl_ct_select64(upd, lv, src);
    }

    /* PrepareTarget: leaf to root. */
    uint64_t dest = NR_NONE;
    src = NR_NONE;
    for (uint32_t lv = D + 1; lv-- > 0;) {
        uint64_t hit = obl_ct_eq64(lv, src);
        uint64_t t = obl_ct_select64(hit, dest, NR_NONE);
        dest = obl_ct_select64(hit, NR_NONE, dest);
        src = obl_ct_select64(hit, NR_NONE, src);
        o->target[lv] = t;
        uint64_t c = ((obl_ct_eq64(dest, NR_NONE) & o->hasempty[lv]) | obl_ct_neq64(t, NR_NONE)) &
                     obl_ct_neq64(o->deepest[lv], NR_NONE);
        src = obl_ct_select64(c, o->deepest[lv], src);
        dest = obl_ct_select64(c, lv, dest);
    }

    /* EvictFast: one data pass. At level lv the held block (if its
     * destination is lv) is dropped and/or the level's deepest block picked
     * up; both are one conditional swap of the hold with one slot: the
     * deepest block's slot when picking up, else the first empty slot. */
    unsigned char *hold = o->tmp; /* free between fetch/put and here */
    NR_META hm = {NR_DUMMY, 0};
    uint64_t holddest = NR_NONE;
    for (uint32_t lv = 0; lv <= D; lv++) {
        uint32_t s0 = lv == 0 ? 0 : P + (lv - 1) * NR_Z;
        uint32_t ns = lv == 0 ? P : NR_Z;
        uint64_t towrite = obl_ct_eq64(holddest, lv);
        uint64_t tg = obl_ct_neq64(o->target[lv], NR_NONE);
        uint64_t s = obl_ct_select64(tg, o->best[lv], o->empty[lv]);
        uint64_t doswap = tg | towrite;
        for (uint32_t j = s0; j < s0 + ns; j++) {
            uint64_t c = doswap & obl_ct_eq64(j, s);
            NR_WORD m = (NR_WORD)obl_ct_mask(c);
            NR_WORD ti = m & (hm.id ^ bm[j].id), tl = m & (hm.leaf ^ bm[j].leaf);
            hm.id ^= ti;
            bm[j].id ^= ti;
            hm.leaf ^= tl;
            bm[j].leaf ^= tl;
            obl_ct_cswap(c, hold, o->bdata + (size_t)j * vs, vs);
        }
        holddest = obl_ct_select64(tg, o->target[lv], obl_ct_select64(towrite, NR_NONE, holddest));
    }
    o->st.evictions++;
}

/* see nroram_internal.h */
uint64_t NR_F(nr_fetch)(obl_nroram *o, uint64_t id, uint64_t pos)
{
    NR_META *bm = (NR_META *)o->bmeta;
    const size_t vs = o->vs;
    NR_F(nr_load_path)(o, pos);
    OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_STASH, OBL_TRACE_RW, 0, o->P);
    memset(o->tmp, 0, vs);
    uint64_t found = 0;
    NR_WORD wid = (NR_WORD)id;
    for (uint32_t s = 0; s < o->nslots; s++) {
        uint64_t m = obl_ct_eq64(bm[s].id, wid);
        obl_ct_cmov(m, o->tmp, o->bdata + (size_t)s * vs, vs);
        bm[s].id = NR_SEL(m, NR_DUMMY, bm[s].id);
        found |= m;
    }
    return found;
}

/* Stash occupancy (secret). */
static inline uint64_t NR_F(nr_stash_count)(const obl_nroram *o)
{
    const NR_META *bm = (const NR_META *)o->bmeta;
    uint64_t c = 0;
    for (uint32_t s = 0; s < o->P; s++)
        c += obl_ct_neq64(bm[s].id, NR_DUMMY);
    return c;
}

/* One extra eviction on the next reverse-lexicographic path. Public. */
static void NR_F(nr_evict_next)(obl_nroram *o)
{
    uint64_t g = o->evict_ctr++;
    /* reverse the low logL bits of g: paths in reverse-lexicographic order */
    uint64_t e = o->logL ? nr_bitrev64(g) >> (64 - o->logL) : 0;
    NR_F(nr_load_path)(o, e);
    NR_F(nr_evict_buf)(o, e);
    NR_F(nr_store_path)(o, e);
}

/*
 * Runs extra evictions until the stash is back to at most S blocks or the
 * budget runs out. Returns 1 if the stash is within bounds.
 * LEAK: one bit per extra eviction, "the stash is still over its bound";
 * this only happens after a revealed overflow (docs/oram.md).
 */
static int NR_F(nr_drain)(obl_nroram *o, uint32_t budget)
{
    for (uint32_t i = 0; i < budget; i++) {
        uint64_t over = obl_ct_gt64(NR_F(nr_stash_count)(o), o->S);
        if (!OBL_DECLASSIFY_VAL(over))
            return 1;
        NR_F(nr_evict_next)(o);
    }
    uint64_t over = obl_ct_gt64(NR_F(nr_stash_count)(o), o->S);
    return !OBL_DECLASSIFY_VAL(over);
}

/* see nroram_internal.h */
obl_err NR_F(nr_put)(obl_nroram *o, uint64_t keep, uint64_t id, uint64_t pos, uint64_t new_pos)
{
    NR_META *bm = (NR_META *)o->bmeta;
    const size_t vs = o->vs;
    NR_WORD nid = NR_SEL(keep, (NR_WORD)id, NR_DUMMY);
    NR_WORD nleaf = (NR_WORD)(new_pos & (o->L - 1));

    /* Into the first free stash slot: one exists, since at most S of the
     * P = S + 1 slots are held between accesses. */
    uint64_t done = 0;
    for (uint32_t s = 0; s < o->P; s++) {
        uint64_t c = obl_ct_eq64(bm[s].id, NR_DUMMY) & (done ^ 1);
        bm[s].id = NR_SEL(c, nid, bm[s].id);
        bm[s].leaf = NR_SEL(c, nleaf, bm[s].leaf);
        obl_ct_cmov(c, o->bdata + (size_t)s * vs, o->tmp, vs);
        done |= c;
    }

    NR_F(nr_store_path)(o, pos);
    NR_F(nr_evict_next)(o);
    NR_F(nr_evict_next)(o);
    o->st.accesses++;

    uint64_t cnt = NR_F(nr_stash_count)(o);
    o->st.stash_max = obl_ct_max64(o->st.stash_max, cnt);
    if (o->track_hist) /* public flag */
        for (uint32_t k = 0; k <= o->P && k < 65; k++)
            o->st.hist[k] += obl_ct_eq64(k, cnt);

    /* LEAK: whether the stash is over its bound after this access. This is
     * the overflow event, of probability below 2^-40 at the default size
     * (docs/oram.md); revealing it is how it gets reported. */
    uint64_t over = obl_ct_gt64(cnt, o->S);
    if (OBL_DECLASSIFY_VAL(over)) {
        o->st.overflows++;
        o->full = !NR_F(nr_drain)(o, 4 * o->D + 16);
        return OBL_ERR_STASH_OVERFLOW;
    }
    return OBL_OK;
}

#undef NR_F
#undef NR_META
#undef NR_DUMMY
#undef NR_WORD
#undef NR_SEL
#undef NR_NONE
