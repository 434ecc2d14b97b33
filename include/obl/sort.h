/* SPDX-License-Identifier: MIT */
/*
 * obl/sort.h: oblivious sorting, shuffling, compaction and expansion of
 * arrays of fixed-size records (docs/sort.md).
 *
 * A record is rec_size bytes (a multiple of 8, 8-byte aligned): a key of
 * key_size bytes (8 or 16) at its start, then the payload. Keys compare as
 * unsigned integers made of native uint64_t words, the first word the most
 * significant: an 8-byte key is one uint64_t, a 16-byte key two.
 *
 * Threat model (as the rest of obl): the adversary sees every address
 * touched and the time taken. Secret: keys, payloads, flags and the
 * permutation applied. Public: n, rec_size, key_size, the thread count,
 * and, for obl_sort_shuffled, a uniformly random permutation that is
 * independent of the data (docs/sort.md, "Shuffle, then sort").
 *
 * Threads: each call runs on at most `threads` threads (pthreads), created
 * and joined inside the call; 0 or 1 means the calling thread only. There is
 * no global state: calls on different arrays may run concurrently.
 * Randomness: the calls that need it seed their own AES-CTR generator from
 * `random` (NULL: getrandom(2)) once per call.
 *
 * Errors (public): OBL_ERR_INVALID_ARG for a NULL array with n > 0, a
 * key_size other than 8 or 16, a rec_size that is not a multiple of 8 or
 * below key_size; OBL_ERR_TOO_LARGE when n >= 2^32 or n * (rec_size + 64)
 * exceeds SIZE_MAX; OBL_ERR_NOMEM;
 * OBL_ERR_RANDOM. On an error the array is unchanged.
 */
#ifndef OBL_SORT_H
#define OBL_SORT_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>

#ifdef __cplusplus
extern "C" {
#endif

OBL_API_BEGIN

typedef struct obl_sort_params {
    size_t rec_size;                /* bytes per record: multiple of 8, >= key_size */
    size_t key_size;                /* 8 or 16 */
    unsigned threads;               /* 0 or 1: the calling thread only */
    obl_random_fn random;           /* NULL: getrandom(2) */
    void *random_opaque;
    const obl_allocator *alloc;     /* NULL: obl_default_allocator() */
} obl_sort_params;

/*
 * Sorts the n records ascending by key with Batcher's bitonic network for
 * any n (Batcher 1968; the arbitrary-n form of Lang), recursive, so that
 * every sub-network runs while it fits in the caches. Equal keys end in an
 * unspecified order.
 * Secret: keys, payloads. Public: n, the sizes. The trace is a function of
 * n, rec_size and threads only. No memory is allocated.
 */
obl_err obl_sort_bitonic(void *recs, size_t n, const obl_sort_params *p) OBL_WARN_UNUSED;

/*
 * Permutes the n records uniformly at random: ORShuffle (Sasy, Johnson,
 * Goldberg, CCS 2022, section 5): mark a uniformly random half, compact it
 * to the front with obl_compact, recurse on both halves.
 * Secret: the records and the permutation. Public: n, the sizes.
 */
obl_err obl_shuffle(void *recs, size_t n, const obl_sort_params *p) OBL_WARN_UNUSED;

/*
 * Sorts by key: obl_shuffle of the records tagged with their original
 * indices, then a non-oblivious comparison sort (merge sort) of the keys
 * with the original indices as tie-breakers. Its branches and addresses
 * reveal the permutation from the shuffled order to the sorted one, which
 * is uniformly random whatever the keys (equal keys included), because
 * the (key, original index) pairs are distinct: docs/sort.md explains why.
 * Scratch: n * (rec_size + 60) bytes.
 * Secret: keys, payloads. Public: n, the sizes, that random permutation.
 */
obl_err obl_sort_shuffled(void *recs, size_t n, const obl_sort_params *p) OBL_WARN_UNUSED;

/*
 * Sorts by key with the fastest oblivious method for n and rec_size (a
 * public choice; docs/sort.md, "Which sort"): for n a power of two and
 * records of at most 64 bytes, the records are copied into columns and
 * sorted with obl_sort_columns (n * rec_size bytes of scratch); otherwise
 * obl_sort_bitonic. obl_sort_shuffled was slower at every size measured.
 */
obl_err obl_sort(void *recs, size_t n, const obl_sort_params *p) OBL_WARN_UNUSED;

/*
 * Sorts records of at most 64 bytes by key for any n with the column
 * network and no padding: the largest power-of-two prefix (m records) as
 * columns, the other n - m records by the record network, then one merge
 * (docs/sort.md, "Which sort"). scratch: m * rec_size bytes for the
 * columns, or NULL (or fewer bytes) to allocate them. Equal keys end in an
 * unspecified order. INVALID_ARG for records over 64 bytes.
 * Secret: keys, payloads. Public: n, the sizes, threads.
 */
obl_err obl_sort_split(void *recs, size_t n, const obl_sort_params *p, uint64_t *scratch,
                       size_t scratch_bytes) OBL_WARN_UNUSED;

/*
 * Sorts n rows held as ncol columns of 64-bit words (cols[c][i] is word c
 * of row i) by the key in the first key_words columns (1 or 2, the first
 * most significant): Batcher's bitonic network on the columns, four rows
 * per AVX2 compare-exchange where the build has it, blocked for the L2.
 * n must be a power of two (pad with rows of larger keys), ncol <= 8.
 * Equal keys end in an unspecified order. No memory is allocated.
 * Secret: every column. Public: n, ncol, key_words, threads.
 */
obl_err obl_sort_columns(uint64_t *const *cols, size_t ncol, size_t key_words, size_t n,
                         unsigned threads) OBL_WARN_UNUSED;

/*
 * Order-preserving tight compaction: the records whose flag is 1 move to
 * the front, in their original order; the others fill the rest in an
 * unspecified order. flags[i] is 0 or 1 (any other value is a misuse).
 * *count (may be NULL) receives the number of flags set: a secret output.
 * Algorithm: ORCompact (Sasy, Johnson, Goldberg, CCS 2022, section 4).
 * Secret: records, flags, *count. Public: n, the sizes.
 */
obl_err obl_compact(void *recs, size_t n, const uint8_t *flags, size_t *count,
                    const obl_sort_params *p) OBL_WARN_UNUSED;

/*
 * Expansion, the inverse of obl_compact with the same flags: with m the
 * number of flags set, the first m records go, in order, to the positions
 * whose flag is 1 (the j-th record to the j-th such position); the other
 * records fill the other positions in an unspecified order.
 * Secret: records, flags. Public: n, the sizes.
 */
obl_err obl_expand(void *recs, size_t n, const uint8_t *flags,
                   const obl_sort_params *p) OBL_WARN_UNUSED;

OBL_API_END

#ifdef __cplusplus
}
#endif

#endif /* OBL_SORT_H */
