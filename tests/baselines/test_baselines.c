/* SPDX-License-Identifier: MIT */
/*
 * Tests of the non-oblivious baselines (baselines/): the plain array against
 * a C array, the plain hash map against an obviously right model (a list of
 * keys searched linearly), both driven by the same seeded stream of random
 * operations and compared after every operation; argument checks; and
 * allocation failures through the allocator hook (the map must be unchanged
 * after a failed growth).
 */
#include "plain_array.h"
#include "plain_hashmap.h"

#include "testutil.h"

/* ------------------------------------------------------------- array -- */

static void test_array_model(uint64_t n, size_t vs, long ops)
{
    test_rng r;
    test_rng_seed(&r, T.seed ^ n ^ (vs << 32));
    test_failing_alloc fa = {.budget = -1};
    obl_allocator al = {test_fa_alloc, test_fa_free, &fa};
    plain_array *a = NULL;
    CHECK(plain_array_create(&a, n, vs, &al) == OBL_OK);
    if (!a)
        return;
    CHECK_EQ_U64(plain_array_size(a), n);
    CHECK_EQ_U64(plain_array_value_size(a), vs);
    CHECK_EQ_U64(plain_array_memory_bytes(a), fa.live_bytes);
    CHECK(plain_array_memory_bytes(a) >= n * vs);
    unsigned char *model = calloc(n, vs);
    unsigned char *buf = malloc(vs), *got = malloc(vs);
    for (long op = 0; op < ops; op++) {
        uint64_t i = test_rng_below(&r, n);
        if (test_rng_next(&r) & 1) {
            test_rng_fill(&r, buf, vs);
            CHECK(plain_array_write(a, i, buf) == OBL_OK);
            memcpy(model + i * vs, buf, vs);
        } else {
            memset(got, 0xa5, vs);
            CHECK(plain_array_read(a, i, got) == OBL_OK);
            CHECK_MEM(got, model + i * vs, vs);
        }
    }
    /* out of range: error, nothing touched */
    memset(got, 0x5a, vs);
    memset(buf, 0x11, vs);
    CHECK(plain_array_read(a, n, got) == OBL_ERR_RANGE);
    CHECK(plain_array_write(a, n, buf) == OBL_ERR_RANGE);
    CHECK(plain_array_write(a, UINT64_MAX, buf) == OBL_ERR_RANGE);
    CHECK(got[0] == 0x5a && got[vs - 1] == 0x5a);
    for (uint64_t i = 0; i < n; i++) {
        CHECK(plain_array_read(a, i, got) == OBL_OK);
        CHECK_MEM(got, model + i * vs, vs);
    }
    plain_array_destroy(a);
    CHECK_EQ_U64(fa.live, 0);
    free(model);
    free(buf);
    free(got);
}

static void test_array_args(void)
{
    plain_array *a = (plain_array *)&a; /* sentinel: must stay untouched */
    plain_array *keep = a;
    CHECK(plain_array_create(NULL, 4, 8, NULL) == OBL_ERR_INVALID_ARG);
    CHECK(plain_array_create(&a, 0, 8, NULL) == OBL_ERR_INVALID_ARG);
    CHECK(plain_array_create(&a, 4, 0, NULL) == OBL_ERR_INVALID_ARG);
    CHECK(plain_array_create(&a, UINT64_MAX / 2, 8, NULL) == OBL_ERR_TOO_LARGE);
    CHECK(a == keep);
    for (long budget = 0; budget < 2; budget++) {
        test_failing_alloc fa = {.budget = budget};
        obl_allocator al = {test_fa_alloc, test_fa_free, &fa};
        CHECK(plain_array_create(&a, 16, 8, &al) == OBL_ERR_NOMEM);
        CHECK(a == keep);
        CHECK_EQ_U64(fa.live, 0);
    }
    plain_array_destroy(NULL);
}

/* ----------------------------------------------------------- hashmap -- */

typedef struct {
    size_t ks, vs, n, cap;
    unsigned char *keys, *vals;
} model_map;

static long model_find(const model_map *m, const unsigned char *key)
{
    for (size_t i = 0; i < m->n; i++)
        if (!memcmp(m->keys + i * m->ks, key, m->ks))
            return (long)i;
    return -1;
}

static void model_put(model_map *m, const unsigned char *key, const unsigned char *val)
{
    long i = model_find(m, key);
    if (i < 0) {
        i = (long)m->n++;
        memcpy(m->keys + (size_t)i * m->ks, key, m->ks);
    }
    memcpy(m->vals + (size_t)i * m->vs, val, m->vs);
}

static void model_erase(model_map *m, long i)
{
    m->n--;
    memmove(m->keys + (size_t)i * m->ks, m->keys + m->n * m->ks, m->ks);
    memmove(m->vals + (size_t)i * m->vs, m->vals + m->n * m->vs, m->vs);
}

/* A key from a small universe (so that gets hit, puts replace and erases
 * find something) spread over all key bytes. */
static void make_key(unsigned char *key, size_t ks, uint64_t id)
{
    for (size_t i = 0; i < ks; i++)
        key[i] = (unsigned char)((id * 0x9e3779b97f4a7c15ULL) >> (8 * (i % 8))) ^ (unsigned char)(i / 8);
    if (ks < 8) { /* keep ids distinct in short keys: id < 256^ks */
        for (size_t i = 0; i < ks; i++)
            key[i] = (unsigned char)(id >> (8 * i));
    }
}

static void test_map_model(size_t ks, size_t vs, size_t cap, uint64_t universe, long ops)
{
    test_rng r;
    test_rng_seed(&r, T.seed ^ (ks << 8) ^ (vs << 20) ^ cap);
    test_failing_alloc fa = {.budget = -1};
    obl_allocator al = {test_fa_alloc, test_fa_free, &fa};
    plain_hashmap_params p = {.key_size = ks, .value_size = vs, .capacity = cap,
                              .seed = test_rng_next(&r), .alloc = &al};
    plain_hashmap *m = NULL;
    CHECK(plain_hashmap_create(&m, &p) == OBL_OK);
    if (!m)
        return;
    model_map mm = {ks, vs, 0, universe, malloc(universe * ks), malloc(universe * vs)};
    unsigned char *key = malloc(ks), *val = malloc(vs), *got = malloc(vs);
    size_t grown = 0, last_cap = plain_hashmap_capacity(m);
    for (long op = 0; op < ops; op++) {
        make_key(key, ks, test_rng_below(&r, universe));
        uint64_t what = test_rng_below(&r, 10);
        long at = model_find(&mm, key);
        if (what < 4) { /* put */
            test_rng_fill(&r, val, vs);
            int ins = -1;
            CHECK(plain_hashmap_put(m, key, val, &ins) == OBL_OK);
            CHECK(ins == (at < 0));
            model_put(&mm, key, val);
        } else if (what < 7) { /* get */
            memset(got, 0xa5, vs);
            int found = plain_hashmap_get(m, key, got);
            CHECK(found == (at >= 0));
            if (at >= 0 && found)
                CHECK_MEM(got, mm.vals + (size_t)at * vs, vs);
            CHECK(plain_hashmap_get(m, key, NULL) == found);
        } else { /* erase */
            CHECK(plain_hashmap_erase(m, key) == (at >= 0));
            if (at >= 0)
                model_erase(&mm, at);
            CHECK(plain_hashmap_get(m, key, NULL) == 0);
        }
        CHECK_EQ_U64(plain_hashmap_size(m), mm.n);
        if (plain_hashmap_capacity(m) != last_cap) {
            grown++;
            last_cap = plain_hashmap_capacity(m);
        }
        if ((op & 63) == 0)
            CHECK(plain_hashmap_validate(m));
    }
    CHECK(plain_hashmap_validate(m));
    CHECK_EQ_U64(plain_hashmap_memory_bytes(m), fa.live_bytes);
    /* everything in the model is in the map, with its value */
    for (size_t i = 0; i < mm.n; i++) {
        CHECK(plain_hashmap_get(m, mm.keys + i * ks, got) == 1);
        CHECK_MEM(got, mm.vals + i * vs, vs);
    }
    /* drain: erase all, the map ends empty and valid */
    while (mm.n) {
        CHECK(plain_hashmap_erase(m, mm.keys) == 1);
        model_erase(&mm, 0);
    }
    CHECK_EQ_U64(plain_hashmap_size(m), 0);
    CHECK(plain_hashmap_validate(m));
    if (cap == 0 && universe > 64)
        CHECK(grown > 0); /* the test exercised growth */
    plain_hashmap_destroy(m);
    CHECK_EQ_U64(fa.live, 0);
    free(mm.keys);
    free(mm.vals);
    free(key);
    free(val);
    free(got);
}

/* A full sweep: insert n distinct keys, all present; erase every other one,
 * the rest still present; re-insert. Exercises long runs and
 * backward-shift deletion at a high load. */
static void test_map_sweep(size_t n)
{
    plain_hashmap_params p = {.key_size = 8, .value_size = 8, .capacity = n, .seed = T.seed};
    plain_hashmap *m = NULL;
    CHECK(plain_hashmap_create(&m, &p) == OBL_OK);
    if (!m)
        return;
    size_t cap0 = plain_hashmap_capacity(m);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = i * 0x9e3779b97f4a7c15ULL, v = ~i;
        CHECK(plain_hashmap_put(m, &k, &v, NULL) == OBL_OK);
    }
    CHECK_EQ_U64(plain_hashmap_capacity(m), cap0); /* capacity hint honoured */
    CHECK(plain_hashmap_validate(m));
    for (uint64_t i = 0; i < n; i += 2) {
        uint64_t k = i * 0x9e3779b97f4a7c15ULL;
        CHECK(plain_hashmap_erase(m, &k) == 1);
        CHECK(plain_hashmap_erase(m, &k) == 0);
    }
    CHECK(plain_hashmap_validate(m));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = i * 0x9e3779b97f4a7c15ULL, v = 0;
        int f = plain_hashmap_get(m, &k, &v);
        CHECK(f == (int)(i & 1));
        if (f)
            CHECK_EQ_U64(v, ~i);
    }
    CHECK_EQ_U64(plain_hashmap_size(m), n / 2);
    plain_hashmap_destroy(m);
}

static void test_map_args_and_nomem(void)
{
    plain_hashmap *m = (plain_hashmap *)&m, *keep = m;
    plain_hashmap_params p = {.key_size = 8, .value_size = 8};
    CHECK(plain_hashmap_create(NULL, &p) == OBL_ERR_INVALID_ARG);
    CHECK(plain_hashmap_create(&m, NULL) == OBL_ERR_INVALID_ARG);
    p.key_size = 0;
    CHECK(plain_hashmap_create(&m, &p) == OBL_ERR_INVALID_ARG);
    p.key_size = 8;
    p.value_size = 0;
    CHECK(plain_hashmap_create(&m, &p) == OBL_ERR_INVALID_ARG);
    p.value_size = SIZE_MAX;
    CHECK(plain_hashmap_create(&m, &p) == OBL_ERR_TOO_LARGE);
    p.value_size = 8;
    p.capacity = SIZE_MAX;
    CHECK(plain_hashmap_create(&m, &p) == OBL_ERR_TOO_LARGE);
    CHECK(m == keep);
    plain_hashmap_destroy(NULL);

    /* creation fails at each of its allocations */
    for (long budget = 0; budget < 3; budget++) {
        test_failing_alloc fa = {.budget = budget};
        obl_allocator al = {test_fa_alloc, test_fa_free, &fa};
        p.capacity = 0;
        p.alloc = &al;
        CHECK(plain_hashmap_create(&m, &p) == OBL_ERR_NOMEM);
        CHECK(m == keep);
        CHECK_EQ_U64(fa.live, 0);
    }

}

/* Growth fails at its first (budget 3: control bytes) or second (budget 4:
 * slots) allocation: the put reports NOMEM and the map is unchanged. */
static void test_map_grow_nomem(long budget)
{
    test_failing_alloc fa = {.budget = budget};
    obl_allocator al = {test_fa_alloc, test_fa_free, &fa};
    plain_hashmap_params p = {.key_size = 8, .value_size = 8, .alloc = &al};
    plain_hashmap *m = NULL;
    CHECK(plain_hashmap_create(&m, &p) == OBL_OK);
    if (!m)
        return;
    size_t cap = 0, bytes = 0, i = 0;
    uint64_t k, v;
    obl_err e = OBL_OK;
    for (; i < 100000 && e == OBL_OK; i++) {
        cap = plain_hashmap_capacity(m);
        bytes = plain_hashmap_memory_bytes(m);
        k = i + 1000;
        v = i;
        e = plain_hashmap_put(m, &k, &v, NULL);
    }
    CHECK_EQ_U64(plain_hashmap_size(m), cap / 4 * 3); /* failed at the first growth */
    CHECK(e == OBL_ERR_NOMEM);
    CHECK_EQ_U64(plain_hashmap_size(m), i - 1);
    CHECK_EQ_U64(plain_hashmap_capacity(m), cap);
    CHECK_EQ_U64(plain_hashmap_memory_bytes(m), bytes);
    CHECK_EQ_U64(fa.live_bytes, bytes);
    CHECK(plain_hashmap_get(m, &k, NULL) == 0);
    CHECK(plain_hashmap_validate(m));
    for (size_t j = 0; j + 1 < i; j++) {
        uint64_t kk = j + 1000, vv = 0;
        CHECK(plain_hashmap_get(m, &kk, &vv) == 1);
        CHECK_EQ_U64(vv, j);
    }
    /* replacing an existing key needs no memory */
    k = 1000;
    v = 77;
    CHECK(plain_hashmap_put(m, &k, &v, NULL) == OBL_OK);
    plain_hashmap_destroy(m);
    CHECK_EQ_U64(fa.live, 0);
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_baselines");
    long ops = T.ct ? 3000 : 40000;
    test_array_args();
    test_array_model(1, 8, ops / 10);
    test_array_model(1000, 8, ops);
    test_array_model(777, 3, ops);
    test_array_model(300, 56, ops);
    test_array_model(64, 4096, ops / 10);
    test_map_args_and_nomem();
    test_map_grow_nomem(3);
    test_map_grow_nomem(4);
    static const size_t kv[][2] = {{8, 8}, {8, 56}, {32, 32}, {1, 1}, {4, 12}, {13, 5}, {16, 8}};
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
        uint64_t universe = kv[i][0] == 1 ? 200 : 600;
        test_map_model(kv[i][0], kv[i][1], 0, universe, ops);
        test_map_model(kv[i][0], kv[i][1], 100, universe / 4, ops / 4);
    }
    test_map_sweep(T.ct ? 2000 : 100000);
    return test_done("test_baselines");
}
