/* SPDX-License-Identifier: MIT */
/*
 * obl-bench: one binary, one subcommand per benchmark type. The registry
 * below is the only list of types: a type joins the driver, `list-types`,
 * `list-cases` and so the whole suite (scripts/run.py) by one line in each of
 * the two declarations below plus its own bench_<type>.c (see docs/bench.md,
 * "Adding a benchmark type").
 */
#include "harness.h"

extern const bench_type bench_array, bench_hashmap, bench_nroram, bench_roram, bench_umap;
extern const bench_type bench_lb, bench_lb_baseline;
extern const bench_type bench_sharded, bench_batched;

static const bench_type *const bench_types[] = {
    &bench_array,   /* RORAM baseline_array */
    &bench_hashmap, /* UMAP baseline_hashmap */
    &bench_nroram, &bench_roram, /* NRORAM obl, RORAM obl (bench_oram.c) */
    &bench_umap,    /* UMAP obl (bench_omap.c) */
    &bench_lb, &bench_lb_baseline, /* LOADBALANCE obl, baseline_lb (bench_lb.c) */
    &bench_sharded, &bench_batched, /* UnorderedMap obl_sharded, obl_batched (bench_shard.c) */
};

int main(int argc, char **argv)
{
    return bench_main(argc, argv, bench_types, sizeof(bench_types) / sizeof(bench_types[0]));
}
