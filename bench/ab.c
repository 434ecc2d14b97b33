/* SPDX-License-Identifier: MIT */
/*
 * obl-ab: two versions of the library in one process, their rounds
 * alternating (docs/bench.md, "Two libraries in one process"). On a VM whose speed changes
 * from one stretch of minutes to the next, binaries run in turn compare two
 * stretches; rounds that alternate in one process compare the libraries.
 *
 * scripts/ab.sh builds an older revision's libobl.a with every global
 * symbol renamed old_<name> (objcopy --redefine-syms) and links it beside
 * the current one. Built by CMake, this program links the current library
 * twice over (OBL_AB_SELF: old_<name> is <name>), which measures the noise
 * floor of the method and keeps the program compiling (ctest runs it small).
 *
 *   obl-ab nroram N VALUE_BYTES POS_BYTES ROUNDS   reads, 20,000 per round
 *   obl-ab roram  N VALUE_BYTES ROUNDS             reads, 20,000 per round
 *   obl-ab umap   N VALUE_BYTES ROUNDS BUILDS      builds of 0.8 N pairs (8-byte
 *                                                  keys), then gets, 5,000 per round
 *
 * Output: per version the median and quartiles of the rounds, and the
 * ratio new / old of the medians. OBL_AB_NEW_FIRST=1 creates the new
 * version's structure first (below). OBL_AB_PLACEMENTS=K (default 1)
 * creates the two structures K times, ROUNDS rounds each, the version
 * created first alternating, and pools the K * ROUNDS rounds: where a
 * structure's memory lands moves its speed by more than most changes
 * (ab_placements). Exit status 2 on bad usage, 1 on an error of either
 * library.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <obl/omap.h>
#include <obl/oram.h>

#include "harness.h"

#ifdef OBL_AB_SELF
#define OLD(name) name
#else
#define OLD(name) old_##name
obl_err old_obl_nroram_create(obl_nroram **out, const obl_nroram_params *p);
obl_err old_obl_nroram_insert(obl_nroram *o, uint64_t id, const void *value, uint64_t *pos_out);
uint64_t old_obl_nroram_random_pos(obl_nroram *o);
obl_err old_obl_nroram_access(obl_nroram *o, uint64_t id, uint64_t pos, uint64_t new_pos,
                              uint64_t op, const void *in, void *out, uint64_t *found);
void old_obl_nroram_destroy(obl_nroram *o);
obl_err old_obl_roram_create(obl_roram **out, const obl_roram_params *p);
obl_err old_obl_roram_read(obl_roram *o, uint64_t index, void *value_out);
void old_obl_roram_destroy(obl_roram *o);
obl_err old_obl_omap_build(obl_omap **out, const obl_omap_params *p, const void *keys,
                           const void *values, uint64_t n);
obl_err old_obl_omap_get(obl_omap *m, const void *key, void *value_out, uint64_t *found);
void old_obl_omap_destroy(obl_omap *m);
#endif

#define AB_MAX_ROUNDS 1000

/* 1: the new version's structure is created first. The structure created
 * second can be faster or slower for reasons of placement alone, so
 * scripts/ab.sh runs both orders (docs/bench.md, "Two libraries in one
 * process"). */
static int ab_new_first;

/* Pairs of structures created, one after the other (OBL_AB_PLACEMENTS).
 * The same code's read time differs from one structure to the next (where
 * the VM backs its memory, it seems); fresh pairs spread that over both
 * versions (docs/bench.md, "Two libraries in one process"). */
static int ab_placements = 1;

/* Which version placement pl creates first. */
static int ab_first(int pl) { return (pl & 1) ^ ab_new_first; }

/* Prints the medians and quartiles (bench_summarize) of t[0] (old) and
 * t[1] (new), R each, taken on pls pairs of structures. */
static void report(const char *what, double t[2][AB_MAX_ROUNDS], int R, int pls)
{
    bench_stats st[2];
    if (pls > 1)
        printf("%s, %d rounds in %d placements:", what, R, pls);
    else
        printf("%s, %d rounds:", what, R);
    for (int v = 0; v < 2; v++) {
        st[v] = bench_summarize(t[v], R);
        printf(" %s %.4g [%.4g-%.4g]", v ? "new" : "old", st[v].median, st[v].q1, st[v].q3);
    }
    printf("  new/old %.3f\n", st[1].median / st[0].median);
}

/* One operation of version v (0 old, 1 new) on random number rnd;
 * non-zero on an error. */
typedef int (*ab_op)(void *ctx, int v, uint64_t rnd);

/* R rounds of Q operations per version, the version that goes first
 * alternating; both see the same random numbers. t[v][off + r]:
 * microseconds per operation. Returns non-zero if an operation failed. */
static int ab_rounds(int R, int Q, ab_op op, void *ctx, double t[2][AB_MAX_ROUNDS], int off)
{
    bench_rng x, y;
    bench_rng_seed(&x, 1);
    y = x;
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < 2; k++) {
            int v = (k + r) & 1;
            y = x; /* both versions replay the round's numbers */
            uint64_t t0 = bench_now_ns();
            for (int q = 0; q < Q; q++)
                if (op(ctx, v, bench_rng_next(&y)))
                    return 1;
            t[v][off + r] = bench_us_per_op(t0, bench_now_ns(), (uint64_t)Q);
        }
        x = y;
    }
    return 0;
}

/* Creates version v's structure of placement pl in ctx (non-zero on an
 * error); destroys version v's structure, if any, and forgets it. */
typedef int (*ab_make)(void *ctx, int v, int pl);
typedef void (*ab_drop)(void *ctx, int v);

/* ab_placements pairs of structures, each pair created in the order
 * ab_first(pl), measured for R rounds of Q operations (ab_rounds) and
 * destroyed before the next: t[v] gets R * ab_placements rounds. Returns
 * non-zero on an error, leaving the pair to the caller's ab_drop. */
static int ab_placed(int R, int Q, ab_make make, ab_drop drop, ab_op op, void *ctx,
                     double t[2][AB_MAX_ROUNDS])
{
    for (int pl = 0; pl < ab_placements; pl++) {
        for (int i = 0; i < 2; i++)
            if (make(ctx, i ^ ab_first(pl), pl))
                return 1;
        if (ab_rounds(R, Q, op, ctx, t, pl * R))
            return 1;
        for (int v = 0; v < 2; v++)
            drop(ctx, v);
    }
    return 0;
}

typedef struct {
    obl_nroram *o[2];
    uint64_t *pos[2];
    unsigned char *buf;
    uint64_t n;
    size_t vs;
    uint32_t pb;
    uint64_t next[2]; /* the id each version reads next */
} ab_nr;

/* Reads the id drawn at the call before and prefetches the position of the
 * one drawn now, as obl-bench's nroram type does (docs/bench.md, "The
 * caller's positions"). */
static int ab_nroram_read(void *ctx, int v, uint64_t rnd)
{
    ab_nr *c = (ab_nr *)ctx;
    uint64_t id = c->next[v], np, f;
    obl_err e;
    c->next[v] = rnd % c->n;
    __builtin_prefetch(&c->pos[v][c->next[v]]);
    if (v) {
        np = obl_nroram_random_pos(c->o[1]);
        e = obl_nroram_access(c->o[1], id, c->pos[1][id], np, OBL_ORAM_READ, NULL, c->buf, &f);
    } else {
        np = OLD(obl_nroram_random_pos)(c->o[0]);
        e = OLD(obl_nroram_access)(c->o[0], id, c->pos[0][id], np, OBL_ORAM_READ, NULL, c->buf,
                                   &f);
    }
    c->pos[v][id] = np;
    return e != OBL_OK;
}

/* ab_make: a tree of n blocks, each id inserted with its own value */
static int ab_nroram_make(void *ctx, int v, int pl)
{
    ab_nr *c = (ab_nr *)ctx;
    obl_nroram_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = c->n;
    p.value_size = c->vs;
    p.pos_bytes = c->pb;
    p.use_seed = 1;
    p.seed = 5 + (uint64_t)pl;
    if ((v ? obl_nroram_create : OLD(obl_nroram_create))(&c->o[v], &p) != OBL_OK)
        return 1;
    for (uint64_t id = 0; id < c->n; id++) {
        memcpy(c->buf, &id, c->vs < 8 ? c->vs : 8);
        if ((v ? obl_nroram_insert : OLD(obl_nroram_insert))(c->o[v], id, c->buf,
                                                              &c->pos[v][id]) != OBL_OK)
            return 1;
    }
    return 0;
}

static void ab_nroram_drop(void *ctx, int v)
{
    ab_nr *c = (ab_nr *)ctx;
    (v ? obl_nroram_destroy : OLD(obl_nroram_destroy))(c->o[v]);
    c->o[v] = NULL;
}

static int ab_nroram(uint64_t n, size_t vs, uint32_t pb, int R)
{
    ab_nr c = {{NULL, NULL}, {NULL, NULL}, calloc(1, vs < 8 ? 8 : vs), n, vs, pb, {0, 0}};
    static double t[2][AB_MAX_ROUNDS];
    int rc = 1;
    if (!c.buf)
        return 1;
    for (int v = 0; v < 2; v++)
        if (!(c.pos[v] = malloc(n * sizeof(uint64_t))))
            goto out;
    if (ab_placed(R, 20000, ab_nroram_make, ab_nroram_drop, ab_nroram_read, &c, t))
        goto out;
    report("nroram read us", t, R * ab_placements, ab_placements);
    rc = 0;
out:
    for (int v = 0; v < 2; v++) {
        ab_nroram_drop(&c, v);
        free(c.pos[v]);
    }
    free(c.buf);
    if (rc)
        fprintf(stderr, "obl-ab: nroram failed\n");
    return rc;
}

typedef struct {
    obl_roram *o[2];
    unsigned char *buf;
    uint64_t n;
    size_t vs;
} ab_ro;

static int ab_roram_read(void *ctx, int v, uint64_t rnd)
{
    ab_ro *c = (ab_ro *)ctx;
    return (v ? obl_roram_read : OLD(obl_roram_read))(c->o[v], rnd % c->n, c->buf) != OBL_OK;
}

/* ab_make: an array of n zero values */
static int ab_roram_make(void *ctx, int v, int pl)
{
    ab_ro *c = (ab_ro *)ctx;
    obl_roram_params p;
    memset(&p, 0, sizeof(p));
    p.n = c->n;
    p.value_size = c->vs;
    p.use_seed = 1;
    p.seed = 5 + (uint64_t)pl;
    return (v ? obl_roram_create : OLD(obl_roram_create))(&c->o[v], &p) != OBL_OK;
}

static void ab_roram_drop(void *ctx, int v)
{
    ab_ro *c = (ab_ro *)ctx;
    (v ? obl_roram_destroy : OLD(obl_roram_destroy))(c->o[v]);
    c->o[v] = NULL;
}

static int ab_roram(uint64_t n, size_t vs, int R)
{
    ab_ro c = {{NULL, NULL}, calloc(1, vs), n, vs};
    static double t[2][AB_MAX_ROUNDS];
    int rc = 1;
    if (!c.buf)
        return 1;
    if (ab_placed(R, 20000, ab_roram_make, ab_roram_drop, ab_roram_read, &c, t))
        goto out;
    report("roram read us", t, R * ab_placements, ab_placements);
    rc = 0;
out:
    for (int v = 0; v < 2; v++)
        ab_roram_drop(&c, v);
    free(c.buf);
    if (rc)
        fprintf(stderr, "obl-ab: roram failed\n");
    return rc;
}

typedef struct {
    obl_omap *m[2];
    const obl_omap_params *p;
    const uint64_t *keys;
    const unsigned char *vals;
    unsigned char *out;
    uint64_t n;
} ab_map;

static int ab_umap_get(void *ctx, int v, uint64_t rnd)
{
    ab_map *c = (ab_map *)ctx;
    uint64_t f;
    return (v ? obl_omap_get : OLD(obl_omap_get))(c->m[v], &c->keys[rnd % c->n], c->out, &f) !=
           OBL_OK;
}

/* ab_make: a map built from the n pairs (the same seed in every
 * placement, as before placements existed) */
static int ab_umap_make(void *ctx, int v, int pl)
{
    ab_map *c = (ab_map *)ctx;
    (void)pl;
    return (v ? obl_omap_build : OLD(obl_omap_build))(&c->m[v], c->p, c->keys, c->vals, c->n) !=
           OBL_OK;
}

static void ab_umap_drop(void *ctx, int v)
{
    ab_map *c = (ab_map *)ctx;
    (v ? obl_omap_destroy : OLD(obl_omap_destroy))(c->m[v]);
    c->m[v] = NULL;
}

static int ab_umap(uint64_t cap, size_t vs, int R, int builds)
{
    uint64_t n = cap / 5 * 4;
    if (n == 0)
        n = 1;
    uint64_t *keys = malloc(n * sizeof(uint64_t));
    unsigned char *vals = calloc(n, vs), *out = calloc(1, vs);
    obl_omap_params p;
    ab_map c = {{NULL, NULL}, &p, keys, vals, out, n};
    static double t[2][AB_MAX_ROUNDS];
    int rc = 1;
    if (!keys || !vals || !out)
        goto out;
    bench_rng kr;
    bench_rng_seed(&kr, 2);
    for (uint64_t i = 0; i < n; i++) {
        keys[i] = bench_rng_next(&kr);
        memcpy(vals + i * vs, &keys[i], vs < 8 ? vs : 8);
    }
    memset(&p, 0, sizeof(p));
    p.capacity = cap;
    p.key_size = 8;
    p.value_size = vs;
    p.use_seed = 1;
    p.seed = 9;
    /* builds: each a fresh structure already, timed, versions alternating */
    for (int r = 0; r < builds; r++) {
        for (int k = 0; k < 2; k++) {
            int v = (k + r) & 1;
            uint64_t t0 = bench_now_ns();
            if (ab_umap_make(&c, v, r))
                goto out;
            t[v][r] = (double)(bench_now_ns() - t0) * 1e-9;
            ab_umap_drop(&c, v);
        }
    }
    if (builds > 0)
        report("umap build s", t, builds, 1);
    if (ab_placed(R, 5000, ab_umap_make, ab_umap_drop, ab_umap_get, &c, t))
        goto out;
    report("umap get us", t, R * ab_placements, ab_placements);
    rc = 0;
out:
    for (int v = 0; v < 2; v++)
        ab_umap_drop(&c, v);
    free(keys);
    free(vals);
    free(out);
    if (rc)
        fprintf(stderr, "obl-ab: umap failed\n");
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: obl-ab nroram N VALUE_BYTES POS_BYTES ROUNDS\n"
                    "       obl-ab roram N VALUE_BYTES ROUNDS\n"
                    "       obl-ab umap N VALUE_BYTES ROUNDS BUILDS\n"
                    "(ROUNDS 1 .. %d in all placements; environment: OBL_AB_NEW_FIRST=1,\n"
                    " OBL_AB_PLACEMENTS=K; see bench/ab.c and scripts/ab.sh)\n",
            AB_MAX_ROUNDS);
    return 2;
}

int main(int argc, char **argv)
{
    const char *nf = getenv("OBL_AB_NEW_FIRST"), *pe = getenv("OBL_AB_PLACEMENTS");
    ab_new_first = nf && nf[0] == '1';
    if (pe)
        ab_placements = atoi(pe);
    if (argc < 5 || ab_placements < 1 || ab_placements > AB_MAX_ROUNDS)
        return usage();
    uint64_t n = strtoull(argv[2], NULL, 0);
    size_t vs = (size_t)strtoull(argv[3], NULL, 0);
    int last = atoi(argv[argc - 1]);
    if (n == 0 || vs == 0 || vs > OBL_ORAM_MAX_VALUE_SIZE)
        return usage();
    if (!strcmp(argv[1], "nroram") && argc == 6) {
        int R = atoi(argv[5]);
        uint32_t pb = (uint32_t)atoi(argv[4]);
        if (R < 1 || R > AB_MAX_ROUNDS / ab_placements || (pb != 4 && pb != 8))
            return usage();
        return ab_nroram(n, vs, pb, R);
    }
    if (!strcmp(argv[1], "roram") && argc == 5) {
        if (last < 1 || last > AB_MAX_ROUNDS / ab_placements)
            return usage();
        return ab_roram(n, vs, last);
    }
    if (!strcmp(argv[1], "umap") && argc == 6) {
        int R = atoi(argv[4]);
        if (R < 1 || R > AB_MAX_ROUNDS / ab_placements || last < 0 || last > AB_MAX_ROUNDS)
            return usage();
        return ab_umap(n, vs, R, last);
    }
    return usage();
}
