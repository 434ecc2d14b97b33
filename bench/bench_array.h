/* SPDX-License-Identifier: MIT */
/*
 * What the plain-array baseline shares with the ORAM benchmark types, which
 * time the same reads on it in the same run (bench/bench_oram.c).
 */
#ifndef OBL_BENCH_ARRAY_H
#define OBL_BENCH_ARRAY_H

#include "harness.h"
#include "plain_array.h"

/*
 * The timed read phase on a plain array: Q reads at idx[0..Q) into buf (of
 * V bytes), each result folded into a value the compiler must keep;
 * recorded with bench_record_phase() under the given names (qps_name may be
 * NULL). Returns the latency in us.
 */
double bench_plain_array_reads(bench_case *c, const plain_array *a, const uint64_t *idx,
                               unsigned char *buf, const char *latency_name,
                               const char *qps_name);

/* A key/value size of a default plan. */
typedef struct bench_kv {
    uint64_t key_bytes, value_bytes;
} bench_kv;

/*
 * The key/value sizes of the default plans of nroram and roram
 * (bench/bench_oram.c), at every N. The array's plan runs at each of them,
 * at every N too, so that every ORAM row of the tables has its baseline
 * measured in the same run (scripts/obllib/tables.py matches N, Key_bytes
 * and Value_bytes).
 */
extern const bench_kv bench_nroram_plan_kv[];
extern const size_t bench_nroram_plan_nkv;
extern const bench_kv bench_roram_plan_kv[];
extern const size_t bench_roram_plan_nkv;

#endif /* OBL_BENCH_ARRAY_H */
