/* SPDX-License-Identifier: MIT */
/*
 * The oblivious map's operation (obl/omap.h): the combined access,
 * compiled once per instruction-set variant (docs/dispatch.md); the map
 * calls the copy it picked when it was created (access_dispatch.c).
 *
 * One-choice hashing into buckets of B slots with an overflow stash. The
 * balls-into-bins view: n keys thrown into M buckets; a bucket that gets
 * more than B keeps the excess in the stash. Every call of obl_omap_access,
 * whatever its op, key or outcome, runs:
 *   1. one ORAM read-modify-write of the key's bucket (the index RORAM's
 *      walk and data level, ro_walk and ro_finish), whose callback (op_fn)
 *      scans the stash (reads), the bucket, applies
 *      the operation to whichever holds the key, puts a new key in the
 *      bucket's first free slot or else in the stash's first free entry,
 *      and when an erase frees a slot of the bucket, moves the bucket's
 *      first stash entry into it; then scans the stash again (writes);
 *   2. compact layout: one access of the value ORAM (omap_value_access).
 * Nothing is changed before every ORAM the call needs is known to accept
 * it (nr_ready, ro_ready); a FULL outcome changes nothing. The steps are
 * phases (omap_req_start, _index, _finish) that the batched access
 * (access_batch_impl.h) interleaves across requests.
 *
 * The stash invariant (an entry of bucket b is in the stash only while b is
 * full) holds after every operation: only an erase from b frees a slot of
 * b, and that erase pulls one of b's stash entries back. So the stash holds
 * sum_b max(0, load_b - B) entries, a function of the keys held; its size
 * comes from a Chernoff bound on that sum (omap_overflow_bound), as the
 * per-shard padding of Snoopy (Dauterman et al., SOSP 2021, section 4) is
 * computed from the binomial tail rather than guessed.
 */
#include <string.h>

#include <obl/omap.h>

#include "ct.h"
#include "common/secret.h"
#include "omap/omap_op.h"
#include "omap/op_generic_impl.h"
#include "omap/op_values_impl.h"
#include "omap/op_words_impl.h"
#include "oram/nroram_internal.h"
#include "oram/roram_internal.h"

/* The index RORAM's update callback: the operation on the key's bucket. */
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

/* The outputs of an access that failed with FULL or STATE: zeros and
 * found = 0, never a stale buffer (obl/omap.h). */
static void omap_fail_outputs(const obl_omap *m, void *value_out, uint64_t *found)
{
    if (value_out)
        memset(value_out, 0, m->vs);
    if (found)
        *found = 0;
}

/* One access in flight: its index walk, its operation context and its
 * buffers (the sequential access keeps one, in m->scratch; the batched
 * access two, access_batch_impl.h). in, out: the slot value given to and
 * taken from the index: the value (inline; zero-extended to svs bytes),
 * or the new and the old leaf (compact); vin, vout: the value. Secret:
 * everything but ws.leaf and vpos. */
typedef struct omap_req {
    op_ctx c;
    ro_walk_state ws;     /* the index walk (ws.leaf: public) */
    uint64_t b;           /* the key's bucket */
    uint64_t nl;          /* compact: the value block's new leaf */
    uint64_t vpos;        /* public; compact: the value path (omap_value_pos) */
    unsigned char *in, *out, *vin, *vout;
    /* 64 bytes, not 8: the copies and compares of m->iks bytes have vector
     * paths that gcc's bounds warning cannot rule out for a shorter array */
    _Alignas(64) unsigned char fpk[64];
} omap_req;

/* The buffers of r at buf: 2 svs + 2 vs bytes. */
static void omap_req_bind(const obl_omap *m, omap_req *r, unsigned char *buf)
{
    r->in = buf;
    r->out = r->in + m->svs;
    r->vin = r->out + m->svs;
    r->vout = r->vin + m->vs;
}

/*
 * The buffers' contents for an access with value_in (NULL: zeros).
 * Returns the new leaf (compact, drawn from the value ORAM's generator),
 * else 0. Secret: the value, the leaf.
 */
static uint64_t omap_slot_inputs(obl_omap *m, omap_req *r, const void *value_in, int compact)
{
    if (value_in)
        memcpy(r->vin, value_in, m->vs);
    else
        memset(r->vin, 0, m->vs);
    memset(r->vout, 0, m->vs);
    memset(r->in, 0, m->svs);
    memset(r->out, 0, m->svs);
    uint64_t nl = 0;
    if (compact) {
        nl = obl_nroram_random_pos(m->vo);
        st32(r->in, nl);
    } else {
        memcpy(r->in, r->vin, m->vs);
    }
    return nl;
}

/*
 * The index key (*ikey: a word map's word, omap_word, in fpk; else the key,
 * zero-extended to 8 bytes in fpk if shorter) and its bucket, returned.
 * Secret: key, fpk, the bucket.
 */
static uint64_t omap_index_key(const obl_omap *m, const void *key, unsigned char *fpk,
                               const unsigned char **ikey)
{
    *ikey = (const unsigned char *)key;
    if (m->words) { /* public */
        uint64_t w = omap_word(m, key);
        memcpy(fpk, &w, 8);
        *ikey = fpk;
        return omap_word_bucket(m, w);
    }
    if (m->ks < m->iks) { /* public */
        memcpy(fpk, key, m->ks);
        *ikey = fpk;
    }
    return omap_bucket(m, *ikey);
}

/*
 * Fingerprint mode: if restore, the index entry {fpk, in} goes back into
 * the stash's first free entry with header tag (the reserved entry
 * included). Returns 1 if it went back. Secret: every argument but m.
 */
static uint64_t omap_fp_restore(obl_omap *m, uint64_t restore, uint64_t tag,
                                const unsigned char *fpk, const unsigned char *in)
{
    uint64_t back = 0;
    for (uint32_t j = 0; j < m->Sa; j++) {
        uint64_t h = m->sh[j];
        uint64_t fr = ((h & 1) ^ 1) & (back ^ 1) & restore;
        m->sh[j] = obl_ct_select64(fr, tag, h);
        obl_ct_cmov(fr, m->skey + (size_t)j * m->iks, fpk, m->iks);
        obl_ct_cmov(fr, m->ssv + (size_t)j * m->svs, in, m->svs);
        back |= fr;
    }
    return back;
}

/*
 * Phase 1 of an access: the key's index key and bucket, and the index
 * RORAM's walk above its data level (ro_walk: it checks that the index
 * ORAM accepts the access, then updates the bucket's leaf in the position
 * levels; r->ws.leaf is the data level's path). Errors (STATE) leave the
 * map unchanged. Secret: key, r's fields but ws.leaf.
 */
static obl_err omap_req_start(obl_omap *m, omap_req *r, const void *key)
{
    memset(r->fpk, 0, sizeof(r->fpk));
    const unsigned char *ikey;
    r->b = omap_index_key(m, key, r->fpk, &ikey);
    r->c.key = ikey;
    return OBL_V(ro_walk)(m->oram, r->b, &r->ws);
}

/*
 * Phase 2: the read-modify-write of the key's bucket (the index's data
 * level, with op_fn), after omap_req_start. Returns FULL (the map is
 * unchanged: the caller zeroes the outputs), or OK / STASH_OVERFLOW with
 * the operation applied to the index; in the compact layout r->vpos is
 * then the value path (public). Secret: op, the value, r's fields.
 */
static obl_err omap_req_index(obl_omap *m, omap_req *r, uint64_t op, const void *value_in)
{
    const int compact = m->vo != NULL;
    r->nl = omap_slot_inputs(m, r, value_in, compact);
    uint64_t is_put = obl_ct_eq64(op, OBL_OMAP_PUT);
    op_ctx c = {m, r->c.key, r->in, r->out, 1 | (r->b << 1), is_put,
                obl_ct_eq64(op, OBL_OMAP_ERASE), compact ? 1 : is_put,
                obl_ct_lt64(m->count, m->capacity), 0, 0, 0, 0, 0};
    r->c = c;
    obl_err err = OBL_V(ro_finish)(m->oram, &r->ws, r->b, 0, NULL, NULL, op_fn, &r->c);
    if (err != OBL_OK && err != OBL_ERR_STASH_OVERFLOW)
        return err;
    m->st.operations++;
    m->st.oram_accesses++;
    /* LEAK: a put of a new key that found no room: the map holds capacity
     * entries, or the key's bucket and the stash are full; the public
     * capacity event OBL_ERR_FULL (obl/omap.h). Nothing was changed: the
     * key matched nowhere and no slot or entry was written. */
    if (OBL_DECLASSIFY_VAL(r->c.full)) {
        m->st.full_errors++;
        return OBL_ERR_FULL;
    }
    m->st.overflow_max = obl_ct_max64(m->st.overflow_max, r->c.occ);
    if (!compact)
        memcpy(r->vout, r->out, m->vs);
    m->count += r->c.added - r->c.removed;
    if (compact)
        r->vpos = omap_value_pos(m, &r->c);
    return err;
}

/*
 * Phase 3: in the compact layout the value ORAM's access on path r->vpos;
 * in fingerprint mode the index entry an erase took from another key goes
 * back; then the outputs. err: phase 2's result (OK or STASH_OVERFLOW).
 * Secret: r's fields, the outputs. Public: the error returned.
 */
static obl_err omap_req_finish(obl_omap *m, omap_req *r, const void *key, obl_err err,
                               void *value_out, uint64_t *found)
{
    uint64_t present = r->c.found; /* the key was in the map */
    uint64_t match = 0, collide = 0;
    if (m->vo) { /* public */
        obl_err e;
        if (m->fp) { /* public */
            uint64_t f;
            memcpy(&f, r->fpk, 8);
            e = omap_value_fp(m, &r->c, (const unsigned char *)key, f, r->vpos, r->nl, r->vin,
                              r->vout, &match, &collide);
        } else {
            e = omap_value_access(m, &r->c, r->vpos, r->nl, r->vin, r->vout);
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
        uint64_t restore = r->c.is_erase & collide;
        uint64_t back = omap_fp_restore(m, restore, r->c.tag, r->fpk, r->in);
        m->count += back;
        /* LEAK: a put of a new key whose 64-bit fingerprint is another
         * stored key's (probability about count / 2^64 per put): the public
         * capacity event OBL_ERR_FULL; the map's contents are unchanged
         * (the other key's block kept its value). And, with probability
         * about 2^-128 (the entry reserved for it held by an earlier
         * restore, and the stash full), an erase that could not put the
         * other key's entry back (OBL_ERR_STATE, docs/omap.md,
         * "Capacity events"). */
        uint64_t full = r->c.is_put & collide, lost = restore & (back ^ 1);
        uint64_t fail = full | lost;
        if (OBL_DECLASSIFY_VAL(fail)) {
            m->st.full_errors += OBL_DECLASSIFY_VAL(full);
            omap_fail_outputs(m, value_out, found);
            return OBL_DECLASSIFY_VAL(lost) ? OBL_ERR_STATE : OBL_ERR_FULL;
        }
    }
    if (value_out)
        memcpy(value_out, r->vout, m->vs);
    if (found)
        *found = present;
    return err;
}

/* see omap_internal.h: obl_omap_access in the map's variant */
obl_err OBL_V(omap_access)(obl_omap *m, uint64_t op, const void *key, const void *value_in,
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
    if (m->vo) {
        /* refuse before the index changes (public state, see oram.h) */
        obl_err e = nr_ready(m->vo);
        if (e != OBL_OK)
            return e;
    }
    omap_req r;
    omap_req_bind(m, &r, m->scratch + m->ses);
    obl_err err = omap_req_start(m, &r, key); /* refuses if the index ORAM would */
    if (err != OBL_OK)
        return err;
    err = omap_req_index(m, &r, op, value_in);
    if (err == OBL_ERR_FULL)
        omap_fail_outputs(m, value_out, found);
    if (err != OBL_OK && err != OBL_ERR_STASH_OVERFLOW)
        return err;
    return omap_req_finish(m, &r, key, err, value_out, found);
}

#include "omap/access_batch_impl.h"
