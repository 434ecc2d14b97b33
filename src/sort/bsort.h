/* SPDX-License-Identifier: MIT */
/*
 * Private: the 64-bit-key bitonic sort and expansion of the ORAM bulk build
 * (src/sort/bsort.c). The general record sorts are in obl/sort.h.
 */
#ifndef OBL_SRC_SORT_BSORT_H
#define OBL_SRC_SORT_BSORT_H

#include <stddef.h>
#include <stdint.h>

/* Sort keys stay below 2^63 (leaf << 32 | id with leaf < 2^31, or a slot
 * number), so a comparison is the sign of a difference; this key sorts
 * after every other one and marks an empty position. */
#define OBL_BSORT_EMPTY (UINT64_MAX >> 1)

/* The arrays being sorted: keys, an optional aux word, an optional
 * payload of vs bytes per element. */
typedef struct bsort {
    uint64_t *key;
    uint64_t *aux;        /* NULL: none */
    unsigned char *pay;   /* NULL: none */
    size_t vs;
    unsigned tsh;         /* the expansion's target: key >> tsh (obl_bsort_expand) */
    size_t live;          /* obl_bsort_sort: the elements from `live` on have the
                             largest key, BUILD_EMPTY (public) */
} bsort;

/*
 * Sorts m elements (m a power of two) ascending by key: Batcher's bitonic
 * network, blocked for the L2 and the L3 (see bsort.c). Keys below 2^63;
 * positions from s->live on must hold OBL_BSORT_EMPTY. Secret: keys, aux
 * words, payloads. Public: m, s->live, the sizes.
 */
void obl_bsort_sort(const bsort *s, size_t m);

/*
 * Expansion: the elements at [base, base + n) (n a power of two), sorted by
 * target (key >> s->tsh), placed cyclically from base + z, go to their
 * targets: ORCompact's offset compaction run backwards (bsort.c).
 * Secret: z, the keys, aux words, payloads. Public: base, n.
 */
void obl_bsort_expand(const bsort *s, size_t base, size_t n, uint64_t z);

/*
 * obl_bsort_sort and obl_bsort_expand on up to two threads (threads >= 2;
 * one thread below a size where a thread costs more than it saves): the
 * same network, its independent halves on a thread each, so the result is
 * the same and each thread's addresses are a function of the sizes only.
 * Not for arrays that another thread touches at the same time.
 */
void obl_bsort_sort_par(const bsort *s, size_t m, unsigned threads);
void obl_bsort_expand_par(const bsort *s, size_t base, size_t n, uint64_t z, unsigned threads);

#ifdef OBL_TESTING
/* Tests only: the cache sizes the sort blocks for (0: the defaults). */
void obl_bsort_set_blocks(size_t l2_bytes, size_t l3_bytes);
/* Tests only: 1 plants a fault in the two-thread sort (a compare-exchange
 * left out), 0 removes it. */
void obl_bsort_set_par_fault(int on);
#endif

#endif /* OBL_SRC_SORT_BSORT_H */
