/* SPDX-License-Identifier: MIT */
/*
 * Statistical timing test of the release library (dudect.h), natively on
 * each constant-time variant the machine runs: NRORAM access, RORAM
 * read/write, map get/put/erase, each with a fixed secret against random
 * secrets (key or index, operation, hit or miss, value), obl_sort,
 * obl_sort_shuffled and obl_compact (zero records and flags against random
 * ones; for the sort also against all-ones records), the control kernel of
 * the sort's finding (fwd_kernel.h), and a negative control that must be
 * caught: an NRORAM read followed by a planted branch on its secret
 * hit/miss bit.
 *
 *   test_timing [-s SEED] [--long] [--control | --findings] [--only OP]
 *               [--variant V] [--batch N] [--batches N]
 * Exit 0 iff no operation shows |t| > 10 (with --control: iff every
 * control does; --findings runs the leaks found and not yet fixed). The
 * short run (the default) is a ctest of the optimised builds; --long
 * (minutes) is for releases (docs/timing.md).
 * Adding an operation (the sort, compaction and load-balancer primitives,
 * say) takes a state, an input struct, gen and measure: see the table in
 * main.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <obl/omap.h>
#include <obl/oram.h>
#include <obl/sort.h>

#include "dudect.h"
#include "fwd_kernel.h"

#define DD_T_FAIL 10.0

/* Public randomness is drawn by the library per call for both classes
 * (new leaves); what the caller does around a timed call (positions,
 * inputs) touches the same kind of memory for both classes. */

static uint64_t dd_mix(uint64_t x) /* a bijection: distinct keys from distinct i */
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dULL;
    return x ^ (x >> 33);
}

/* ----------------------------------------------------------------- NRORAM */

#define NR_CAP ((uint64_t)1 << 14)

typedef struct {
    obl_nroram *o;
    uint64_t *pos;   /* the caller's positions of ids 0 .. 2 * NR_CAP - 1 */
    uint64_t errors;
} nr_state;

typedef struct {
    uint64_t id, touch, op, value;
} nr_input;

static void *nr_setup(uint64_t seed)
{
    nr_state *s = (nr_state *)calloc(1, sizeof(*s));
    obl_nroram_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = NR_CAP;
    p.value_size = 8;
    p.use_seed = 1;
    p.seed = seed;
    s->pos = (uint64_t *)calloc(2 * NR_CAP, sizeof(uint64_t));
    if (!s->pos || obl_nroram_create(&s->o, &p) != OBL_OK) {
        free(s->pos);
        free(s);
        return NULL;
    }
    /* ids 0 .. NR_CAP / 2 stored; the rest absent with fresh positions */
    for (uint64_t id = 0; id < 2 * NR_CAP; id++) {
        uint64_t v = dd_mix(id);
        if (id <= NR_CAP / 2)
            s->errors += obl_nroram_insert(s->o, id, &v, &s->pos[id]) != OBL_OK;
        else
            s->pos[id] = obl_nroram_random_pos(s->o);
    }
    return s;
}

static uint64_t nr_errors(const void *st) { return ((const nr_state *)st)->errors; }

static void nr_teardown(void *st)
{
    nr_state *s = (nr_state *)st;
    obl_nroram_destroy(s->o);
    free(s->pos);
    free(s);
}

/* The caller's positions touched around a call: class 1 reads and writes
 * its id's (a random line of the table), class 0 those of id 0 (a line in
 * cache) and of a random id, so that both bring one random line of the
 * table into the cache and push the same amount of the ORAM out of it
 * (without the second line the random class measured 4-5 cycles slower:
 * |t| 15-40). */
static void nr_touch(nr_input *x, int cls, test_rng *r)
{
    uint64_t t = test_rng_below(r, 2 * NR_CAP);
    x->touch = cls ? x->id : t;
}

/* Class 0: read id 0 (stored). Class 1: any op on any id of 1 .. NR_CAP - 1
 * (stored or not): at most NR_CAP ids are ever stored. */
static void nr_gen_access(void *st, int cls, void *in, test_rng *r)
{
    (void)st;
    nr_input *x = (nr_input *)in;
    x->value = test_rng_next(r);
    x->id = cls ? 1 + test_rng_below(r, NR_CAP - 1) : 0;
    x->op = cls ? test_rng_below(r, 3) : OBL_ORAM_READ;
    nr_touch(x, cls, r);
}

/* Class 0: read id 0 (a hit). Class 1: read an id never stored (a miss). */
static void nr_gen_hit(void *st, int cls, void *in, test_rng *r)
{
    (void)st;
    nr_input *x = (nr_input *)in;
    x->value = test_rng_next(r);
    x->id = cls ? NR_CAP + test_rng_below(r, NR_CAP) : 0;
    x->op = OBL_ORAM_READ;
    nr_touch(x, cls, r);
}

/* The planted leak: about 50 cycles of work on a branch the secret
 * hit/miss bit takes, next to an access of a few thousand. */
#define DD_PLANT_SPIN 16

static inline void dd_planted(uint64_t found)
{
    if (found) { /* LEAK on purpose: the negative control */
        uint64_t x = found;
        for (int i = 0; i < DD_PLANT_SPIN; i++)
            __asm__ volatile("imul %0, %0" : "+r"(x));
    }
}

/* One access; with plant (a constant), the negative control's branch.
 * The measured calls have no branch on found at all: even an empty one
 * costs the random class mispredictions when hits and misses mix
 * (measured: |t| 20-25 at 4-5 cycles). */
static inline uint64_t nr_measure_impl(void *st, void *in, int plant)
{
    nr_state *s = (nr_state *)st;
    nr_input *x = (nr_input *)in;
    /* the caller's bookkeeping, untimed: the id's position, and the one
     * nr_touch chose */
    uint64_t pos = s->pos[x->id], tp = s->pos[x->touch];
    uint64_t np = obl_nroram_random_pos(s->o), out = 0, found = 0;
    uint64_t t0 = dd_t0();
    obl_err e = obl_nroram_access(s->o, x->id, pos, np, x->op, &x->value, &out, &found);
    if (plant)
        dd_planted(found);
    uint64_t t1 = dd_t1();
    /* the new position whether or not the block is kept: never revealed,
     * so it is a fresh leaf for an absent id */
    s->pos[x->touch] = tp; /* first: touch may be id */
    s->pos[x->id] = np;
    s->errors += e != OBL_OK && e != OBL_ERR_STASH_OVERFLOW;
    return t1 - t0;
}

static uint64_t nr_measure(void *st, void *in) { return nr_measure_impl(st, in, 0); }

static uint64_t nr_measure_control(void *st, void *in) { return nr_measure_impl(st, in, 1); }

/* ------------------------------------------------------------------ RORAM */

#define RO_N ((uint64_t)1 << 16)

typedef struct {
    obl_roram *r;
    uint64_t errors;
} ro_state;

typedef struct {
    uint64_t index, is_write, value;
} ro_input;

static void *ro_setup(uint64_t seed)
{
    ro_state *s = (ro_state *)calloc(1, sizeof(*s));
    obl_roram_params p;
    memset(&p, 0, sizeof(p));
    p.n = RO_N;
    p.value_size = 8;
    p.use_seed = 1;
    p.seed = seed;
    if (obl_roram_create(&s->r, &p) != OBL_OK) {
        free(s);
        return NULL;
    }
    return s;
}

static uint64_t ro_errors(const void *st) { return ((const ro_state *)st)->errors; }

static void ro_teardown(void *st)
{
    ro_state *s = (ro_state *)st;
    obl_roram_destroy(s->r);
    free(s);
}

/* Class 0: read index 0. Class 1: read or write any index. */
static void ro_gen(void *st, int cls, void *in, test_rng *r)
{
    (void)st;
    ro_input *x = (ro_input *)in;
    x->value = test_rng_next(r);
    x->index = cls ? test_rng_below(r, RO_N) : 0;
    x->is_write = cls ? test_rng_below(r, 2) : 0;
}

static uint64_t ro_measure(void *st, void *in)
{
    ro_state *s = (ro_state *)st;
    ro_input *x = (ro_input *)in;
    uint64_t out = 0;
    uint64_t t0 = dd_t0();
    obl_err e = obl_roram_access(s->r, x->index, x->is_write, &x->value, &out);
    uint64_t t1 = dd_t1();
    s->errors += e != OBL_OK && e != OBL_ERR_STASH_OVERFLOW;
    return t1 - t0;
}

/* -------------------------------------------------------------------- map */

#define MAP_CAP ((uint64_t)1 << 12)

typedef struct {
    obl_omap *m;
    size_t vs;
    uint64_t errors;
} map_state;

typedef struct {
    uint64_t op, key;
    unsigned char value[64];
} map_input;

/* Keys: dd_mix(i); i = 0 .. MAP_CAP - 1 may be stored (key 0 always, half
 * of the rest from the start), i >= MAP_CAP never. */
static void *map_setup(uint64_t seed, size_t vs, uint32_t layout)
{
    map_state *s = (map_state *)calloc(1, sizeof(*s));
    obl_omap_params p;
    memset(&p, 0, sizeof(p));
    p.capacity = MAP_CAP;
    p.key_size = 8;
    p.value_size = vs;
    p.layout = layout;
    p.use_seed = 1;
    p.seed = seed;
    s->vs = vs;
    if (obl_omap_create(&s->m, &p) != OBL_OK) {
        free(s);
        return NULL;
    }
    unsigned char v[64] = {1};
    for (uint64_t i = 0; i < MAP_CAP; i += 2) {
        uint64_t k = dd_mix(i);
        s->errors += obl_omap_put(s->m, &k, v, NULL) != OBL_OK;
    }
    return s;
}

static void *map_setup8(uint64_t seed) { return map_setup(seed, 8, OBL_OMAP_LAYOUT_AUTO); }
static void *map_setup56(uint64_t seed) { return map_setup(seed, 56, OBL_OMAP_LAYOUT_AUTO); }

static uint64_t map_errors(const void *st) { return ((const map_state *)st)->errors; }

static void map_teardown(void *st)
{
    map_state *s = (map_state *)st;
    obl_omap_destroy(s->m);
    free(s);
}

/* Class 0: get key 0 (stored). Class 1: get, put or erase of any key but
 * key 0 that may be stored (hit or miss). */
static void map_gen_access(void *st, int cls, void *in, test_rng *r)
{
    (void)st;
    map_input *x = (map_input *)in;
    for (int w = 0; w < 8; w++) {
        uint64_t v = test_rng_next(r);
        memcpy(x->value + 8 * w, &v, 8);
    }
    x->key = dd_mix(cls ? 1 + test_rng_below(r, MAP_CAP - 1) : 0);
    x->op = cls ? test_rng_below(r, 3) : OBL_OMAP_GET;
}

/* Class 0: get key 0 (a hit). Class 1: get a key never stored (a miss). */
static void map_gen_hit(void *st, int cls, void *in, test_rng *r)
{
    (void)st;
    map_input *x = (map_input *)in;
    memset(x->value, 0, sizeof(x->value));
    x->key = dd_mix(cls ? MAP_CAP + test_rng_below(r, MAP_CAP) : 0);
    x->op = OBL_OMAP_GET;
}

static uint64_t map_measure(void *st, void *in)
{
    map_state *s = (map_state *)st;
    map_input *x = (map_input *)in;
    unsigned char out[64];
    uint64_t found = 0;
    uint64_t t0 = dd_t0();
    obl_err e = obl_omap_access(s->m, x->op, &x->key, x->value, out, &found);
    uint64_t t1 = dd_t1();
    s->errors += e != OBL_OK && e != OBL_ERR_STASH_OVERFLOW;
    return t1 - t0;
}

/* ------------------------------------------------ sort and compaction */

/* SORT_N records of 16 bytes (an 8-byte key, 8 bytes of payload): a
 * power of two, so obl_sort takes its column form. An input is a class
 * and a seed; the records (and flags) are written from them before the
 * timed call, into the same buffer for both classes, by the same
 * branch-free code: all zeros for class 0; for class 1 random words, or
 * all ones (`ones`, fixed per operation) where every key is equal, so
 * that both classes make the same comparisons and no swap (the control
 * that tells a data-dependent decision from data-dependent hardware:
 * docs/timing.md, "Findings"). */
#define SORT_N 256

typedef struct {
    _Alignas(64) uint64_t recs[2 * SORT_N]; /* whole lines, as the library's buffers */
    uint8_t flags[SORT_N];
    uint64_t ones; /* class 1: 0 random records, ~0 all-ones records */
    uint64_t errors;
} sort_state;

typedef struct {
    uint64_t cls, seed;
} sort_input;

static void *sort_setup_pattern(uint64_t ones)
{
    sort_state *s = (sort_state *)aligned_alloc(64, sizeof(sort_state));
    if (!s)
        return NULL;
    memset(s, 0, sizeof(*s));
    s->ones = ones;
    return s;
}

static void *sort_setup(uint64_t seed)
{
    (void)seed;
    return sort_setup_pattern(0);
}

static void *sort_setup_ones(uint64_t seed)
{
    (void)seed;
    return sort_setup_pattern(~(uint64_t)0);
}

static uint64_t sort_errors(const void *st) { return ((const sort_state *)st)->errors; }

static void sort_teardown(void *st) { free(st); }

static void sort_gen(void *st, int cls, void *in, test_rng *r)
{
    (void)st;
    sort_input *x = (sort_input *)in;
    x->cls = (uint64_t)cls;
    x->seed = test_rng_next(r);
}

/* The records and flags of an input (untimed; no branch on the class: a
 * class-dependent branch here changes the branch history the timed call
 * starts with, which alone gave |t| up to 30 in a sort of 200 cycles). */
static void sort_fill(sort_state *s, const sort_input *x)
{
    test_rng r;
    test_rng_seed(&r, x->seed);
    uint64_t keep = 0 - x->cls, ones = s->ones; /* class 0: zeros */
    for (size_t i = 0; i < 2 * SORT_N; i++)
        s->recs[i] = ((test_rng_next(&r) & ~ones) | ones) & keep;
    for (size_t i = 0; i < SORT_N; i++)
        s->flags[i] = (uint8_t)(((test_rng_next(&r) & ~ones) | ones) & keep & 1);
}

static const obl_sort_params sort_params = {16, 8, 1, NULL, NULL, NULL};

static uint64_t sort_measure(void *st, void *in)
{
    sort_state *s = (sort_state *)st;
    sort_fill(s, (const sort_input *)in);
    uint64_t t0 = dd_t0();
    obl_err e = obl_sort(s->recs, SORT_N, &sort_params);
    uint64_t t1 = dd_t1();
    s->errors += e != OBL_OK;
    return t1 - t0;
}

/* The control kernel (fwd_kernel.h): FWD_PASSES passes of span 8 over the
 * records' words as two columns of SORT_N, zeros against all ones (no
 * swap in either class), as the sort compiled them (reload) and with the
 * column pointers in registers. */
#define FWD_PASSES 25

static uint64_t fwd_measure_impl(void *st, void *in, int reload)
{
    sort_state *s = (sort_state *)st;
    sort_fill(s, (const sort_input *)in);
    uint64_t *const cols[2] = {s->recs, s->recs + SORT_N};
    uint64_t t0 = dd_t0();
    dd_fwd_kernel(cols, SORT_N, FWD_PASSES, reload);
    uint64_t t1 = dd_t1();
    return t1 - t0;
}

static uint64_t fwd_measure_reload(void *st, void *in) { return fwd_measure_impl(st, in, 1); }

static uint64_t fwd_measure_registers(void *st, void *in) { return fwd_measure_impl(st, in, 0); }

static uint64_t shuf_measure(void *st, void *in)
{
    sort_state *s = (sort_state *)st;
    sort_fill(s, (const sort_input *)in);
    uint64_t t0 = dd_t0();
    obl_err e = obl_sort_shuffled(s->recs, SORT_N, &sort_params);
    uint64_t t1 = dd_t1();
    s->errors += e != OBL_OK;
    return t1 - t0;
}

static uint64_t compact_measure(void *st, void *in)
{
    sort_state *s = (sort_state *)st;
    sort_fill(s, (const sort_input *)in);
    size_t count = 0;
    uint64_t t0 = dd_t0();
    obl_err e = obl_compact(s->recs, SORT_N, s->flags, &count, &sort_params);
    uint64_t t1 = dd_t1();
    s->errors += e != OBL_OK;
    return t1 - t0;
}

/* ------------------------------------------------------------- the tests */

/* Kinds of case: what a run selects (--control, --findings) and what
 * passes. */
enum {
    DD_CHECK = 0,   /* the short and long runs: passes at |t| <= DD_T_FAIL */
    DD_CONTROL = 1, /* --control, a negative control: passes at |t| > DD_T_FAIL */
    DD_FINDING = 2  /* --findings: a leak this test found and that is not
                       fixed yet (docs/timing.md); passes once it is, and
                       then moves to DD_CHECK */
};

typedef struct {
    dd_op op;
    int kind;
    unsigned shrink;     /* batches this many times smaller (a slow operation) */
    const char *finding; /* the variants (names and spaces) in which it is a
                            DD_FINDING, or NULL */
    const char *only;    /* the variants it runs in, or NULL: all */
} dd_case;

/* 1 if the space-separated list names variant v. */
static int dd_listed(const char *list, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, " ");
        if (len == n && !strncmp(p, v, n))
            return 1;
        p += len + (p[len] == ' ');
    }
    return 0;
}

#define NR_OP(name, gen, measure)                                                    \
    {name, sizeof(nr_input), nr_setup, gen, measure, nr_errors, nr_teardown}
#define RO_OP(name) {name, sizeof(ro_input), ro_setup, ro_gen, ro_measure, ro_errors, ro_teardown}
#define SORT_OP(name, setup, measure)                                                \
    {name, sizeof(sort_input), setup, sort_gen, measure, sort_errors, sort_teardown}
#define MAP_OP(name, setup, gen)                                                     \
    {name, sizeof(map_input), setup, gen, map_measure, map_errors, map_teardown}

static const dd_case CASES[] = {
    {NR_OP("nroram.access", nr_gen_access, nr_measure), DD_CHECK, 1, NULL, NULL},
    {NR_OP("nroram.hit", nr_gen_hit, nr_measure), DD_CHECK, 1, NULL, NULL},
    {RO_OP("roram.access"), DD_CHECK, 1, NULL, NULL},
    {MAP_OP("map8.access", map_setup8, map_gen_access), DD_CHECK, 1, NULL, NULL},
    {MAP_OP("map8.hit", map_setup8, map_gen_hit), DD_CHECK, 1, NULL, NULL},
    {MAP_OP("map56.access", map_setup56, map_gen_access), DD_CHECK, 1, NULL, NULL},
    /* sort.ones is the control of the column sort's finding (docs/timing.md,
     * "Findings"): zeros against all-ones records, the same comparisons
     * and no swap in both classes */
    {SORT_OP("sort", sort_setup, sort_measure), DD_CHECK, 1, NULL, NULL},
    {SORT_OP("sort.ones", sort_setup_ones, sort_measure), DD_CHECK, 1, NULL, NULL},
    /* the control kernel: the pass as compiled before the fix (a finding
     * while the CPU forwards so), and with the pointers in registers */
    {SORT_OP("fwd.reload", sort_setup_ones, fwd_measure_reload), DD_CHECK, 1, "avx512",
     "avx512"},
    {SORT_OP("fwd.registers", sort_setup_ones, fwd_measure_registers), DD_CHECK, 1, NULL,
     "avx512"},
    {SORT_OP("compact", sort_setup, compact_measure), DD_CHECK, 1, NULL, NULL},
    /* ten times the cycles of sort; the leak it had showed |t| > 200 at
     * the full batch size, so a quarter of it still catches that */
    {SORT_OP("sort_shuffled", sort_setup, shuf_measure), DD_CHECK, 4, NULL, NULL},
    {NR_OP("control.hit_branch", nr_gen_hit, nr_measure_control), DD_CONTROL, 1, NULL, NULL},
};

/*
 * The constant-time variants this machine can run, and a way to make the
 * structures created next use one: the library picks a structure's variant
 * at create time, capped by OBL_CT_VARIANT (docs/dispatch.md). A variant the
 * CPU (or a single-variant native build) cannot run reads back as another
 * name and is left out.
 */
static const char *const DD_ISA[] = {"avx512", "avx2", "portable"};

static int dd_use_variant(const char *name)
{
    if (setenv("OBL_CT_VARIANT", name, 1) != 0)
        return 0;
    return strcmp(name, obl_ct_variant()) == 0;
}

static int dd_variants(const char **names, int max)
{
    int n = 0;
    for (size_t i = 0; i < sizeof(DD_ISA) / sizeof(DD_ISA[0]) && n < max; i++)
        if (dd_use_variant(DD_ISA[i]))
            names[n++] = DD_ISA[i];
    if (n == 0 && max > 0) /* a native build: its one variant, whatever its name */
        names[n++] = obl_ct_variant();
    unsetenv("OBL_CT_VARIANT");
    return n;
}

int main(int argc, char **argv)
{
    uint64_t seed = 20261206, batch = (uint64_t)1 << 15, batches = 4;
    int kind = DD_CHECK;
    const char *only = NULL, *variant = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--long")) {
            batch = (uint64_t)1 << 16;
            batches = 256;
        } else if (!strcmp(argv[i], "--control"))
            kind = DD_CONTROL;
        else if (!strcmp(argv[i], "--findings"))
            kind = DD_FINDING;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--variant") && i + 1 < argc)
            variant = argv[++i];
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc)
            batches = strtoull(argv[++i], NULL, 0);
    }
    /* The control must be detected on every variant: four times the samples
     * double its |t|, so that a noisy minute cannot hide the planted branch. */
    if (kind == DD_CONTROL)
        batches *= 4;
    printf("test_timing: seed %" PRIu64 ", %" PRIu64 " x %" PRIu64
           " measurements per operation after a warm-up batch (replay with -s %" PRIu64 ")\n",
           seed, batches, batch, seed);
    const char *vars[8];
    int nv = dd_variants(vars, 8), bad = 0;
    for (int v = 0; v < nv; v++) {
        if (variant && strcmp(variant, vars[v]))
            continue;
        if (!dd_use_variant(vars[v])) {
            printf("variant %s: cannot be selected\n", vars[v]);
            bad++;
            continue;
        }
        for (size_t c = 0; c < sizeof(CASES) / sizeof(CASES[0]); c++) {
            const dd_case *k = &CASES[c];
            int ck = dd_listed(k->finding, vars[v]) ? DD_FINDING : k->kind;
            if (ck != kind || (only && strcmp(only, k->op.name)) ||
                (k->only && (!dd_listed(k->only, vars[v]) || !dd_fwd_available())))
                continue;
            uint64_t b = batch / k->shrink;
            dd_result r = dd_run(&k->op, seed + c, b, batches);
            int leak = r.max_t > DD_T_FAIL;
            int ok = !r.failed_setup && !r.errors && (kind == DD_CONTROL ? leak : !leak);
            printf("timing: %-7s %-19s |t| = %7.2f (%s%d) n = %" PRIu64 "/%" PRIu64
                   " mean cycles %.0f/%.0f%s: %s\n",
                   vars[v], k->op.name, r.max_t, r.max_test ? "crop " : "all ", r.max_test,
                   r.n[0], r.n[1], r.mean[0], r.mean[1], r.errors ? " (errors)" : "",
                   ok ? "ok" : kind == DD_CONTROL ? "NOT DETECTED" : "LEAK");
            fflush(stdout);
            bad += !ok;
        }
    }
    printf("test_timing: %s\n", bad ? "FAIL" : "ok");
    return bad ? 1 : 0;
}
