/* SPDX-License-Identifier: MIT */
/*
 * The non-oblivious hash map baseline: fixed-size keys and values, open
 * addressing with linear probing over a power-of-two table, backward-shift
 * deletion (no tombstones, so probe lengths do not decay under erase-heavy
 * workloads). It is the "cost of obliviousness" reference for the map
 * benchmarks (UMAP): what a lookup costs when everything may leak.
 *
 * Layout: a control byte per slot (0 empty, 0x80 | 7 hash bits full) in its
 * own array, so that a probe compares a byte before it touches a key, and a
 * slot array of [key | value]. The table grows by doubling at a load of 3/4.
 * The hash is a seeded 64-bit multiply-xorshift mix of the key words (not a
 * PRF: whoever picks the keys can degrade it; that is acceptable for a
 * baseline and is why the oblivious maps use a keyed PRF instead).
 *
 * Memory comes from the caller's obl_allocator (NULL: the C library).
 */
#ifndef OBL_BASELINES_PLAIN_HASHMAP_H
#define OBL_BASELINES_PLAIN_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>

typedef struct plain_hashmap plain_hashmap; /* opaque */

typedef struct plain_hashmap_params {
    size_t key_size;    /* bytes, >= 1 */
    size_t value_size;  /* bytes, >= 1 */
    size_t capacity;    /* entries to hold without growing (0: start small) */
    uint64_t seed;      /* hash seed */
    const obl_allocator *alloc; /* NULL: the C library */
} plain_hashmap_params;

/*
 * OBL_ERR_INVALID_ARG for NULL arguments or zero sizes, OBL_ERR_TOO_LARGE if
 * the table would overflow size_t, OBL_ERR_NOMEM if the allocator fails.
 */
obl_err plain_hashmap_create(plain_hashmap **out, const plain_hashmap_params *p) OBL_WARN_UNUSED;

/* Frees the map (NULL ok). */
void plain_hashmap_destroy(plain_hashmap *m);

/* 1 and the value in value_out (if not NULL) when key is present, else 0. */
int plain_hashmap_get(const plain_hashmap *m, const void *key, void *value_out);

/*
 * Inserts key or replaces its value. *inserted (if not NULL) is 1 for a new
 * key. OBL_ERR_NOMEM if growing failed: the map is then unchanged.
 */
obl_err plain_hashmap_put(plain_hashmap *m, const void *key, const void *value, int *inserted);

/* Removes key; 1 if it was present, else 0. */
int plain_hashmap_erase(plain_hashmap *m, const void *key);

size_t plain_hashmap_size(const plain_hashmap *m);
size_t plain_hashmap_capacity(const plain_hashmap *m); /* slots in the table */

/* Bytes held through the allocator (header, control bytes, slots). */
size_t plain_hashmap_memory_bytes(const plain_hashmap *m);

/*
 * Checks the structure's invariants (every key is reachable from its home
 * slot without crossing an empty slot, no key twice, the size matches);
 * 1 if they hold. O(capacity * probe length): for tests.
 */
int plain_hashmap_validate(const plain_hashmap *m);

#endif /* OBL_BASELINES_PLAIN_HASHMAP_H */
