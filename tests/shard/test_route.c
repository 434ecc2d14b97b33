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
 * Keys of 8 and 32 bytes (those share every word but the last in groups
 * of four); every split is checked to send each distinct key once to its
 * shard. Longer keys' fingerprints zeroed (shard_route.test_fp 1): the
 * split's exact check must see the collisions and sort by all key words;
 * its control (test_fp 2, collisions ignored) must send a key twice.
 * Trace equality: two batches of the same size and different keys
 * (duplicates, all in one shard) give the same trace of split and join;
 * two different S b give different ones.
 * With --ct the keys and answers are secret for memcheck.
 */
#include "common/secret.h"
#include "common/trace.h"
#include "shard/shard_internal.h"
#include "testutil.h"

#define MAXKS 32
#define VS 56

/* The key bytes of the running test (8 or 32). */
static size_t KS = 8;

/* Key id's KS bytes: one word, the id; or every word but the last shared
 * by the ids of a group of four, the last the id. */
static void key_of(uint64_t id, unsigned char *out)
{
    for (size_t j = 0; j + 1 < KS / 8; j++) {
        uint64_t w = (id >> 2) * 0x9E3779B97F4A7C15ull + j;
        memcpy(out + 8 * j, &w, 8);
    }
    memcpy(out + KS - 8, &id, 8);
}

static uint64_t id_of(const unsigned char *key)
{
    uint64_t id;
    memcpy(&id, key + KS - 8, 8);
    return id;
}

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
    x->r.kw = KS / 8;
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
            uint64_t k = id_of(bf->keys + from * KS), d = bf->dummy[from] & 1;
            if (keyed) {
                memcpy(bf->akeys + to * KS, bf->keys + from * KS, KS);
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
                    unsigned char t[MAXKS];
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
    unsigned char kb[MAXKS];
    for (size_t i = 0; i < B; i++) {
        uint64_t k;
        do {
            k = 1 + test_rng_below(rng, kind == KEYS_FEW ? 3 : u);
            /* some in shard 0, whatever u */
            k += kind == KEYS_ONE_SHARD ? test_rng_below(rng, 1u << 16) << 32 : 0;
            key_of(k, kb);
        } while (kind == KEYS_ONE_SHARD && shard_route_shard_of(&x->r, kb));
        keys[i] = k;
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The split's contract: every real slot of shard s holds a key of shard
 * s, and the real slots hold each distinct key of the batch (ids, B)
 * exactly once. 1 if so. */
static int split_right(route *x, const shard_bufs *bf, size_t S, size_t b, const uint64_t *ids,
                       size_t B)
{
    uint64_t *got = malloc((S * b + 1) * 8), *want = malloc(B * 8);
    CHECK(got && want);
    size_t n = 0, m = 0;
    int ok = got && want;
    for (size_t j = 0; ok && j < S * b; j++) {
        if (bf->dummy[j] & 1)
            continue;
        ok &= shard_route_shard_of(&x->r, bf->keys + j * KS) == j / b;
        got[n++] = id_of(bf->keys + j * KS);
    }
    if (ok) {
        memcpy(want, ids, B * 8);
        qsort(got, n, 8, cmp_u64);
        qsort(want, B, 8, cmp_u64);
        for (size_t i = 0; i < B; i++)
            if (!m || want[m - 1] != want[i])
                want[m++] = want[i];
        ok = n == m && !memcmp(got, want, n * 8);
    }
    free(got);
    free(want);
    return ok;
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
    unsigned char *kb = malloc(B * KS);
    CHECK(keys && found && w && bytes && vout && kb);
    shard_bufs bf = {w, w + S * b, w + 2 * S * b, bytes, NULL, bytes + 2 * S * b * KS,
                     bytes + S * b * KS, w + 3 * S * b,
                     keyed == ANS_INDEXED ? w + 4 * S * b : NULL};
    make_keys(rng, x, keys, B, u, kind);
    for (size_t i = 0; i < B; i++)
        key_of(keys[i], kb + i * KS);
    OBL_SECRET(kb, B * KS);
    obl_err e = shard_route_split(&x->r, B, b, NULL, kb, NULL, &bf);
    int ok = -1;
    if (e == OBL_OK) {
        if (!keyed) {
            bf.akeys = bf.keys;
            bf.adummy = bf.dummy;
        }
        OBL_DECLASSIFY(bf.keys, S * b * KS);
        OBL_DECLASSIFY(bf.dummy, S * b * 8);
        int split_ok = split_right(x, &bf, S, b, keys, B);
        engine(rng, &bf, S, b, keyed);
        if (control && !corrupt(&bf, S, b, keyed))
            control = 0;
        OBL_SECRET(bf.akeys, S * b * KS);
        OBL_SECRET(bf.adummy, S * b * 8);
        if (bf.aidx)
            OBL_SECRET(bf.aidx, S * b * 8);
        OBL_SECRET(bf.vout, S * b * VS);
        OBL_SECRET(bf.found, S * b * 8);
        e = shard_route_join(&x->r, B, b, kb, &bf, vout, found);
        CHECK(e == OBL_OK);
        OBL_DECLASSIFY(kb, B * KS);
        OBL_DECLASSIFY(vout, B * VS);
        OBL_DECLASSIFY(found, B * 8);
        ok = e == OBL_OK && split_ok && answers_right(keys, B, vout, found);
        if (control) /* the control must fail */
            ok = !ok;
    } else {
        CHECK(e == OBL_ERR_FULL);
    }
    free(keys);
    free(kb);
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
                        (kind == KEYS_ONE_SHARD && B > 1000) ||
                        (KS > 8 && (keyed == ANS_KEYED || B > 5000)))
                        continue;
                    route x;
                    route_init(&x, Ss[si], 1 + (unsigned)(bi % 2) * !T.ct, B * 31 + si);
                    int ok = 1;
                    for (int rep = 0; rep < 2; rep++)
                        ok &= one_batch(rng, &x, B, 2 * B + 1, kind, keyed, 0) == 1;
                    CHECK(ok);
                    if (!ok)
                        fprintf(stderr, "  KS %zu B %zu S %u kind %d keyed %d\n", KS, B,
                                Ss[si], kind, keyed);
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
    if (KS == 8)
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

/* Longer keys: fingerprints zeroed (test_fp 1), every two keys of a shard
 * collide, and the split must still send each key once (the exact check's
 * sort); with the collisions ignored (test_fp 2, the control) it must
 * not. Answers in any order need their indices (INVALID_ARG without). */
static void collide(test_rng *rng)
{
    for (unsigned S = 1; S <= 3; S++)
        for (int fp = 1; fp <= 2; fp++) {
            route x;
            route_init(&x, S, 1, 7 + S);
            x.r.test_fp = fp;
            int r = 1;
            for (int rep = 0; rep < 3; rep++)
                r &= one_batch(rng, &x, T.ct ? 30 : 200, 20, KEYS_RANDOM, ANS_INDEXED, 0);
            CHECK(r == (fp == 1));
            shard_route_release(&x.r);
        }
    route x;
    route_init(&x, 2, 1, 9);
    size_t B = 10, b = shard_route_b(B, 2, 40);
    uint64_t w[5 * 2 * 10];
    unsigned char kb[10 * MAXKS], bytes[2 * 10 * (2 * MAXKS + VS)], vout[10 * VS];
    shard_bufs bf = {w, w + 2 * b, w + 4 * b, bytes, NULL, bytes + 4 * b * KS, bytes + 2 * b * KS,
                     w + 6 * b, NULL};
    CHECK(b <= 10);
    for (size_t i = 0; i < B; i++)
        key_of(1 + i, kb + i * KS);
    CHECK(shard_route_split(&x.r, B, b, NULL, kb, NULL, &bf) == OBL_OK);
    memset(bf.akeys, 0, 2 * b * KS);
    memset(bf.adummy, 0, 2 * b * 8);
    memset(bf.found, 0, 2 * b * 8);
    memset(bf.vout, 0, 2 * b * VS);
    CHECK(shard_route_join(&x.r, B, b, kb, &bf, vout, w + 8 * b) == OBL_ERR_INVALID_ARG);
    shard_route_release(&x.r);
}

/* Traces of split and join of two get batches of B on S shards with
 * different keys (different = 1: must be equal; the second batch's keys
 * of the kind `other`: KEYS_FEW, many duplicates, or KEYS_ONE_SHARD), or
 * of the same keys with one more slot per shard in the second (a control:
 * must differ). 1 equal, 0 not, -1 without tracing. */
static int traces_equal(size_t B, unsigned S, int keyed, int different, int other)
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
        unsigned char bytes[64 * 4 * (2 * MAXKS + VS)], vout[64 * VS], kb[64 * MAXKS];
        CHECK(B <= 64 && S * b <= 64 * 4);
        shard_bufs bf = {w, w + S * b, w + 2 * S * b, bytes, NULL, bytes + 2 * S * b * KS,
                         bytes + S * b * KS, w + 3 * S * b,
                         keyed == ANS_INDEXED ? w + 4 * S * b : NULL};
        int kind = k && different ? other : KEYS_RANDOM;
        make_keys(&rng, &x, keys, B, 1000, kind);
        for (size_t i = 8; kind == KEYS_ONE_SHARD && i < B; i++) /* 8 keys: fit in b */
            keys[i] = keys[i % 8];
        for (size_t i = 0; i < B; i++)
            key_of(keys[i], kb + i * KS);
        obl_trace_begin(&t[k]);
        CHECK(shard_route_split(&x.r, B, b, NULL, kb, NULL, &bf) == OBL_OK);
        if (!keyed) {
            bf.akeys = bf.keys;
            bf.adummy = bf.dummy;
        }
        obl_trace_end();
        engine(&rng, &bf, S, b, keyed);
        obl_trace_begin(&t[k]);
        CHECK(shard_route_join(&x.r, B, b, kb, &bf, vout, found) == OBL_OK);
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
        if (KS > 8 && keyed == ANS_KEYED)
            continue;
        for (int other = KEYS_FEW; other <= KEYS_ONE_SHARD; other++) {
            CHECK(traces_equal(60, 2, keyed, 1, other) == want);
            CHECK(traces_equal(50, 3, keyed, 1, other) == want);
        }
    }
    if (KS == 8)
        CHECK(traces_equal(60, 2, ANS_KEYED, 0, 0) == (want == 1 ? 0 : -1)); /* sees the balancer */
    CHECK(traces_equal(60, 2, ANS_INDEXED, 0, 0) == (want == 1 ? 0 : -1));
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_route");
    test_rng rng;
    test_rng_seed(&rng, T.seed);
    for (KS = 8; KS <= 32; KS += 24) {
        joins(&rng);
        control(&rng);
        traces();
    }
    KS = 32;
    collide(&rng);
    return test_done("test_route");
}
