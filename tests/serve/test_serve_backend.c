/* SPDX-License-Identifier: MIT */
/*
 * The server's batch-answering path (serve/backend.h) against a plain
 * model: random batches of GET, PUT and ERASE over present and absent keys,
 * every answer (value, found, error) compared after every batch, for the
 * omap backend (requests in order) and, where built, the shard backend
 * (every request sees the map as it was before its batch). In the ct build
 * the ops, keys and values are marked secret, so memcheck checks that
 * answering a batch branches on none of them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common/secret.h"
#include "testutil.h"
#include "wire.h"

#define K 8
#define V 56
#define MAX_B 16

typedef struct model {
    uint64_t ids;
    unsigned char *present, *val;
} model;

static void model_init(model *m, uint64_t n, uint64_t ids, uint64_t seed)
{
    m->ids = ids;
    m->present = calloc(ids, 1);
    m->val = calloc(ids, V);
    for (uint64_t i = 0; i < n; i++) {
        m->present[i] = 1;
        serve_value(m->val + i * V, V, i, seed);
    }
}

/* Checks the answer to a request on id against the model. */
static void model_check(const model *m, uint64_t id, const unsigned char *out, uint64_t found,
                        obl_err err)
{
    unsigned char want[V] = {0};
    if (m->present[id])
        memcpy(want, m->val + id * V, V);
    CHECK_EQ_U64(err, OBL_OK);
    CHECK_EQ_U64(found, m->present[id]);
    CHECK_MEM(out, want, V);
}

static void model_apply(model *m, uint64_t op, uint64_t id, const unsigned char *value)
{
    if (op == SERVE_OP_PUT) {
        m->present[id] = 1;
        memcpy(m->val + id * V, value, V);
    } else if (op == SERVE_OP_ERASE) {
        m->present[id] = 0;
    }
}

/* snapshot 0: request i sees requests 0..i-1 of its batch; 1: none.
 * gets: GETs only (a backend made with gets_only). */
static void run_batches(serve_backend *be, model *m, uint64_t seed, int batches, int snapshot,
                        int gets)
{
    test_rng rng;
    test_rng_seed(&rng, T.seed);
    uint64_t ops[MAX_B], ids[MAX_B], found[MAX_B];
    unsigned char keys[MAX_B * K], vals[MAX_B * V], out[MAX_B * V];
    obl_err errs[MAX_B];
    serve_batch b = {0, ops, keys, vals, out, found, errs};
    for (int t = 0; t < batches; t++) {
        b.count = 1 + test_rng_below(&rng, MAX_B);
        for (size_t i = 0; i < b.count; i++) {
            uint64_t r = gets ? 0 : test_rng_below(&rng, 10);
            ops[i] = r < 5 ? SERVE_OP_GET : r < 8 ? SERVE_OP_PUT : SERVE_OP_ERASE;
            ids[i] = test_rng_below(&rng, m->ids);
            serve_key(keys + i * K, K, ids[i], seed);
            test_rng_fill(&rng, vals + i * V, V);
        }
        OBL_SECRET(ops, sizeof(ops));
        OBL_SECRET(keys, sizeof(keys));
        OBL_SECRET(vals, sizeof(vals));
        CHECK_EQ_U64(be->answer(be->state, &b), OBL_OK);
        OBL_DECLASSIFY(ops, sizeof(ops));
        OBL_DECLASSIFY(vals, sizeof(vals));
        OBL_DECLASSIFY(out, sizeof(out));
        OBL_DECLASSIFY(found, sizeof(found));
        for (size_t i = 0; i < b.count; i++) {
            model_check(m, ids[i], out + i * V, found[i], errs[i]);
            if (!snapshot)
                model_apply(m, ops[i], ids[i], vals + i * V);
        }
        for (size_t i = 0; snapshot && i < b.count; i++)
            model_apply(m, ops[i], ids[i], vals + i * V);
    }
}

static void test_bad_params(void)
{
    serve_backend be;
    serve_map_params p = {.n = 10, .capacity = 5, .key_bytes = K, .value_bytes = V};
    CHECK_EQ_U64(serve_backend_omap(&be, &p), OBL_ERR_INVALID_ARG); /* capacity < n */
    p = (serve_map_params){.n = 300, .capacity = 400, .key_bytes = 1, .value_bytes = V};
    CHECK_EQ_U64(serve_backend_omap(&be, &p), OBL_ERR_INVALID_ARG); /* 300 keys of 1 byte */
    CHECK_EQ_U64(serve_backend_omap(NULL, &p), OBL_ERR_INVALID_ARG);
    serve_backend_destroy(NULL);
}

/* One backend (shards 0: omap) against the model; map_seed 0: the map's
 * randomness from getrandom(2), as the server runs by default. */
static void test_backend(uint32_t shards, int gets, uint64_t map_seed)
{
    uint64_t n = T.ct ? 64 : 512, seed = T.seed ^ 0x5eed;
    serve_map_params p = {.n = n, .capacity = n + n / 2, .key_bytes = K, .value_bytes = V,
                          .key_seed = seed, .map_seed = map_seed};
    serve_backend be;
    obl_err e = shards ? serve_backend_shard(&be, &p, shards, 2, gets) : serve_backend_omap(&be, &p);
    if (shards && e == OBL_ERR_UNSUPPORTED) {
        printf("  shard backend: not built (no obl/shard.h)\n");
        return;
    }
    CHECK_EQ_U64(e, OBL_OK);
    if (e != OBL_OK)
        return;
    CHECK_EQ_U64(be.key_bytes, K);
    CHECK_EQ_U64(be.value_bytes, V);
    model m;
    model_init(&m, n, n + n / 4, seed);
    run_batches(&be, &m, seed, T.ct ? 12 : 400, shards != 0, gets);
    printf("  %s backend%s: done\n", be.name, gets ? " (gets only)" : "");
    serve_backend_destroy(&be);
    free(m.present);
    free(m.val);
}

int main(int argc, char **argv)
{
    test_init(argc, argv, "test_serve_backend");
    test_backend(0, 0, T.seed | 1);
    test_backend(2, 0, T.seed | 1);
    test_backend(2, 1, 0);
    if (!T.ct)
        test_backend(0, 0, 0);
    test_bad_params();
    return test_done("test_serve_backend");
}
