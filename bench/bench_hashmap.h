/* SPDX-License-Identifier: MIT */
/*
 * What the plain hash map baseline shares with the oblivious map's
 * benchmark type, which times the same gets on it in the same run
 * (bench/bench_omap.c).
 */
#ifndef OBL_BENCH_HASHMAP_H
#define OBL_BENCH_HASHMAP_H

#include "harness.h"
#include "plain_hashmap.h"

/*
 * The get phase on a plain hash map: Q gets of the absent keys at miss
 * (untimed warm-up), then Q gets of the keys at hit, timed from *t0 to *t1
 * (bench_now_ns), each into buf (V bytes) with two bytes of each result
 * folded into a value the compiler must keep. Keys are K bytes each,
 * contiguous. Returns how many of the timed gets found their key.
 */
uint64_t bench_plain_hashmap_gets(const plain_hashmap *m, const unsigned char *miss,
                                  const unsigned char *hit, uint64_t q, size_t kb, size_t vb,
                                  unsigned char *buf, uint64_t *t0, uint64_t *t1);

/* --fill-pct (parameter `fill`), shared by the map types (bench_omap.c). */
extern const bench_extra_flag bench_fill_flag[];

#endif /* OBL_BENCH_HASHMAP_H */
