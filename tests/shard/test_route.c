/* SPDX-License-Identifier: MIT */
/*
 * Tests of the sharded map's balancer (src/shard/route.c) on its own: get
 * batches with duplicates, misses and all keys in one shard are split,
 * answered from a model as an engine would (answers in request order, as
 * the omaps give them, or shuffled within each shard with their keys,
 * with or without their request indices, as the scan gives them, with
 * garbage in the dummies' answers), joined, and every request's answer
 * checked. A negative control swaps two answers' keys or indices (the join
 * must then answer wrongly, and the check must see it).
 * Trace equality: two batches of the same size and different keys give
 * the same trace of split and join; two different S b give different ones.
 * With --ct the keys and answers are secret for memcheck.
 */
#include "common/secret.h"
#include "common/trace.h"
#include "shard/shard_internal.h"
#include "testutil.h"

#define KS 8
#define VS 56

/* The sanitizers' build (-O0): batches up to 1000. */
#if defined(__SANITIZE_ADDRESS__)
#define ROUTE_SANITIZE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ROUTE_SANITIZE 1
#endif
#endif
#ifndef ROUTE_SANITIZE
#define ROUTE_SANITIZE 0
#endif

/* The model: key k is present iff k % 3 != 0, with value bytes val(k, i). */
static int present(uint64_t k) { return k % 3 != 0; }
static unsigned char val(uint64_t k, size_t i) { return (unsigned char)(k * 7 + i * 13 + 1); }

typedef struct {
    shard_route r;
    obl_alloc_ctx ac;
    obl_prg g;
} route;

static void route_init(route *x, unsigned S, unsigned threads, uint64_t seed)
{
    memset(x, 0, sizeof *x);
    obl_alloc_init(&x->ac, NULL);
    obl_prg_init_seed(&x->g, seed);
    x->r.k0 = obl_prg_u64(&x->g);
    x->r.k1 = obl_prg_u64(&x->g);
    x->r.S = S;
    x->r.ks = KS;
    x->r.kw = 1;
    x->r.vs = VS;
    x->r.vs8 = (VS + 7) & ~(size_t)7;
    x->r.ac = &x->ac;
    x->r.prg = &x->g;
    x->r.threads = threads;
}

/* How the engine hands its answers over: in request order (the omaps),
 * or each shard's permuted at random with their keys and dummy flags, and
 * their request indices (shard_bufs.aidx, the scan) or without. */
enum { ANS_ORDER, ANS_KEYED, ANS_INDEXED };

/* Answers every slot of bf from the model, shard by shard, handed over as
 * keyed says (ANS_*). Dummies answer garbage. */
static void engine(test_rng *rng, const shard_bufs *bf, size_t S, size_t b, int keyed)
{
    size_t *perm = malloc(b * sizeof *perm);
    CHECK(perm != NULL);
    for (size_t s = 0; perm && s < S; s++) {
        for (size_t i = 0; i < b; i++)
            perm[i] = i;
        for (size_t i = b; keyed && i > 1; i--) {
            size_t j = (size_t)test_rng_below(rng, i), t = perm[i - 1];
            perm[i - 1] = perm[j];
            perm[j] = t;
        }
        for (size_t i = 0; i < b; i++) {
            size_t from = s * b + i, to = s * b + perm[i];
            uint64_t k, d = bf->dummy[from] & 1;
            memcpy(&k, bf->keys + from * KS, KS);
            if (keyed) {
                memcpy(bf->akeys + to * KS, &k, KS);
                bf->adummy[to] = d;
            }
            if (keyed == ANS_INDEXED)
                bf->aidx[to] = i;
            bf->found[to] = d ? test_rng_next(rng) : (uint64_t)present(k);
            for (size_t v = 0; v < VS; v++)
                bf->vout[to * VS + v] = d ? (unsigned char)test_rng_next(rng)
                                          : present(k) ? val(k, v) : 0;
        }
    }
    free(perm);
}

/* Request i's answer against the model; 1 if all right. */
static int answers_right(const uint64_t *keys, size_t B, const unsigned char *vout,
                         const uint64_t *found)
{
    int ok = 1;
    for (size_t i = 0; i < B; i++) {
        ok &= found[i] == (uint64_t)present(keys[i]);
        for (size_t v = 0; v < VS; v++)
            ok &= vout[i * VS + v] == (present(keys[i]) ? val(keys[i], v) : 0);
    }
    return ok;
}

/* Swaps the keys (indexed: the request indices) of two real answers with
 * different found flags in one shard (the negative control); 0 if there
 * are none. */
static int corrupt(const shard_bufs *bf, size_t S, size_t b, int keyed)
{
    for (size_t s = 0; s < S; s++)
        for (size_t i = s * b; i < (s + 1) * b; i++)
            for (size_t j = i + 1; j < (s + 1) * b; j++)
                if (!bf->adummy[i] && !bf->adummy[j] && bf->found[i] != bf->found[j]) {
                    if (keyed == ANS_INDEXED) {
                        uint64_t x = bf->aidx[i];
                        bf->aidx[i] = bf->aidx[j];
                        bf->aidx[j] = x;
                        return 1;
                    }
                    unsigned char t[KS];
                    memcpy(t, bf->akeys + i * KS, KS);
                    memcpy(bf->akeys + i * KS, bf->akeys + j * KS, KS);
                    memcpy(bf->akeys + j * KS, t, KS);
                    return 1;
                }
    return 0;
}

enum { KEYS_RANDOM, KEYS_FEW, KEYS_ONE_SHARD };

/* B request keys from a universe of u keys; KEYS_ONE_SHARD: keys that
 * all map to shard 0. */
static void make_keys(test_rng *rng, route *x, uint64_t *keys, size_t B, uint64_t u, int kind)
{
    for (size_t i = 0; i < B; i++) {
        uint64_t k;
        do {
            k = 1 + test_rng_below(rng, kind == KEYS_FEW ? 3 : u);
            k += kind == KEYS_ONE_SHARD ? test_rng_below(rng, 64) << 32 : 0; /* some in shard 0 */
        } while (kind == KEYS_ONE_SHARD && shard_route_shard_of(&x->r, (unsigned char *)&k));
        keys[i] = k;
    }
}

/* One batch through split, engine and join: 1 if every answer is right,
 * 0 if not, -1 if the split found a shard over b (public FULL). control:
 * the engine's keyed answers corrupted (corrupt). */
static int one_batch(test_rng *rng, route *x, size_t B, uint64_t u, int kind, int keyed,
                     int control)
{
    size_t S = x->r.S, b = shard_route_b(B, x->r.S, 40);
    if (kind == KEYS_ONE_SHARD && b < B && u) /* room for them all (u = 0: none) */
        b = B;
    u = u ? u : (uint64_t)1 << 40;
    uint64_t *keys = malloc(B * 8), *found = malloc(B * 8), *w = calloc(5 * S * b, 8);
    unsigned char *bytes = calloc(S * b, 2 * KS + VS), *vout = malloc(B * VS);
    CHECK(keys && found && w && bytes && vout);
    shard_bufs bf = {w, w + S * b, w + 2 * S * b, bytes, NULL, bytes + 2 * S * b * KS,
                     bytes + S * b * KS, w + 3 * S * b,
                     keyed == ANS_INDEXED ? w + 4 * S * b : NULL};
    make_keys(rng, x, keys, B, u, kind);
    OBL_SECRET(keys, B * 8);
    obl_err e = shard_route_split(&x->r, B, b, NULL, (unsigned char *)keys, NULL, &bf);
    int ok = -1;
    if (e == OBL_OK) {
        if (!keyed) {
            bf.akeys = bf.keys;
            bf.adummy = bf.dummy;
        }
        OBL_DECLASSIFY(bf.keys, S * b * KS);
        OBL_DECLASSIFY(bf.dummy, S * b * 8);
        engine(rng, &bf, S, b, keyed);
        if (control && !corrupt(&bf, S, b, keyed))
            control = 0;
        OBL_SECRET(bf.akeys, S * b * KS);
        OBL_SECRET(bf.adummy, S * b * 8);
        if (bf.aidx)
            OBL_SECRET(bf.aidx, S * b * 8);
        OBL_SECRET(bf.vout, S * b * VS);
        OBL_SECRET(bf.found, S * b * 8);
        e = shard_route_join(&x->r, B, b, (unsigned char *)keys, &bf, vout, found);
        CHECK(e == OBL_OK);
        OBL_DECLASSIFY(keys, B * 8);
        OBL_DECLASSIFY(vout, B * VS);
        OBL_DECLASSIFY(found, B * 8);
        ok = e == OBL_OK && answers_right(keys, B, vout, found);
        if (control) /* the control must fail */
            ok = !ok;
    } else {
        CHECK(e == OBL_ERR_FULL);
    }
    free(keys);
    free(found);
    free(w);
    free(bytes);
    free(vout);
    return ok;
}

/* Batches of several sizes, shard counts and key mixes, answers in
 * request order and keyed. */
static void joins(test_rng *rng)
{
    static const size_t Bs[] = {1, 2, 3, 7, 64, 100, 1000, 5000, 20000};
    static const unsigned Ss[] = {1, 2, 3, 15, 64}; /* 64: the merge form (route.c) */
    for (size_t bi = 0; bi < sizeof Bs / sizeof *Bs; bi++)
        for (size_t si = 0; si < 5; si++)
            for (int kind = 0; kind < 3; kind++)
                for (int keyed = 0; keyed < 3; keyed++) {
                    size_t B = Bs[bi];
                    if ((T.ct && B > 100) || (ROUTE_SANITIZE && B > 1000) ||
                        (kind == KEYS_ONE_SHARD && B > 1000))
                        continue;
                    route x;
                    route_init(&x, Ss[si], 1 + (unsigned)(bi % 2) * !T.ct, B * 31 + si);
                    int ok = 1;
                    for (int rep = 0; rep < 2; rep++)
                        ok &= one_batch(rng, &x, B, 2 * B + 1, kind, keyed, 0) == 1;
                    CHECK(ok);
                    if (!ok)
                        fprintf(stderr, "  B %zu S %u kind %d keyed %d\n", B, Ss[si], kind,
                                keyed);
                    shard_route_release(&x.r);
                }
}

/* The negative control: a keyed answer under the wrong key is caught.
 * And a shard with more than b distinct keys: FULL, in both forms of the
 * split (S <= 16 and S > 16). */
static void control(test_rng *rng)
{
    route x;
    route_init(&x, 2, 1, 5);
    CHECK(one_batch(rng, &x, 100, 150, KEYS_RANDOM, ANS_KEYED, 1) == 1);
    CHECK(one_batch(rng, &x, 100, 150, KEYS_RANDOM, ANS_INDEXED, 1) == 1);
    shard_route_release(&x.r);
    static const unsigned Ss[] = {2, 15, 64};
    for (int i = 0; i < 3; i++) {
        route_init(&x, Ss[i], 1, 6);
        CHECK(one_batch(rng, &x, 300, 0, KEYS_ONE_SHARD, 0, 0) == -1);
        CHECK(one_batch(rng, &x, 300, 600, KEYS_RANDOM, 0, 0) == 1); /* then as before */
        shard_route_release(&x.r);
    }
}

/* Traces of split and join of two get batches of B on S shards with
 * different keys (different = 1: must be equal), or of the same keys with
 * one more slot per shard in the second (a control: must differ).
 * 1 equal, 0 not, -1 without tracing. */
static int traces_equal(size_t B, unsigned S, int keyed, int different)
{
    obl_trace t[2];
    CHECK(obl_trace_init(&t[0], 1u << 22) && obl_trace_init(&t[1], 1u << 22));
    for (int k = 0; k < 2; k++) {
        test_rng rng;
        test_rng_seed(&rng, T.seed + (different ? (uint64_t)k * 99 : 0));
        route x;
        route_init(&x, S, 1, 3);
        size_t b = shard_route_b(B, S, 40) + (size_t)(!different && k);
        uint64_t keys[64], found[64], w[5 * 64 * 4];
        unsigned char bytes[64 * 4 * (2 * KS + VS)], vout[64 * VS];
        CHECK(B <= 64 && S * b <= 64 * 4);
        shard_bufs bf = {w, w + S * b, w + 2 * S * b, bytes, NULL, bytes + 2 * S * b * KS,
                         bytes + S * b * KS, w + 3 * S * b,
                         keyed == ANS_INDEXED ? w + 4 * S * b : NULL};
        make_keys(&rng, &x, keys, B, k && different ? 3 : 1000, KEYS_RANDOM);
        obl_trace_begin(&t[k]);
        CHECK(shard_route_split(&x.r, B, b, NULL, (unsigned char *)keys, NULL, &bf) == OBL_OK);
        if (!keyed) {
            bf.akeys = bf.keys;
            bf.adummy = bf.dummy;
        }
        obl_trace_end();
        engine(&rng, &bf, S, b, keyed);
        obl_trace_begin(&t[k]);
        CHECK(shard_route_join(&x.r, B, b, (unsigned char *)keys, &bf, vout, found) == OBL_OK);
        obl_trace_end();
        shard_route_release(&x.r);
    }
    int eq = obl_trace_enabled() ? obl_trace_equal(&t[0], &t[1]) : -1;
    CHECK(eq == -1 || t[0].n > 0);
    obl_trace_free(&t[0]);
    obl_trace_free(&t[1]);
    return eq;
}

static void traces(void)
{
    int want = obl_trace_enabled() ? 1 : -1;
    for (int keyed = 0; keyed < 3; keyed++) {
        CHECK(traces_equal(60, 2, keyed, 1) == want);
        CHECK(traces_equal(50, 3, keyed, 1) == want);
    }
    CHECK(traces_equal(60, 2, ANS_KEYED, 0) == (want == 1 ? 0 : -1)); /* sees the balancer */
    CHECK(traces_equal(60, 2, ANS_INDEXED, 0) == (want == 1 ? 0 : -1));
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_route");
    test_rng rng;
    test_rng_seed(&rng, T.seed);
    joins(&rng);
    control(&rng);
    traces();
    return test_done("test_route");
}
