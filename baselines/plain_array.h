/* SPDX-License-Identifier: MIT */
/*
 * The non-oblivious array baseline: N fixed-size values, index -> value, one
 * contiguous allocation. It is the "cost of obliviousness" reference for the
 * ORAM benchmarks (RORAM, NRORAM): what an access costs when the index may
 * leak. Nothing here is constant-time, and nothing here handles secrets.
 *
 * Memory comes from the caller's obl_allocator (NULL: the C library), like
 * every obl structure, so that the benchmark counts bytes the same way.
 */
#ifndef OBL_BASELINES_PLAIN_ARRAY_H
#define OBL_BASELINES_PLAIN_ARRAY_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>

typedef struct plain_array plain_array; /* opaque */

/*
 * n values of value_size bytes each, all zero. OBL_ERR_INVALID_ARG for a NULL
 * out, n == 0 or value_size == 0; OBL_ERR_TOO_LARGE if n * value_size
 * overflows; OBL_ERR_NOMEM if the allocator fails. *out is untouched on error.
 */
obl_err plain_array_create(plain_array **out, uint64_t n, size_t value_size,
                           const obl_allocator *alloc) OBL_WARN_UNUSED;

/* Frees the array (NULL ok). */
void plain_array_destroy(plain_array *a);

/* value_out = a[i]. OBL_ERR_RANGE if i >= n (value_out untouched). */
obl_err plain_array_read(const plain_array *a, uint64_t i, void *value_out);

/* a[i] = value. OBL_ERR_RANGE if i >= n (the array is unchanged). */
obl_err plain_array_write(plain_array *a, uint64_t i, const void *value);

uint64_t plain_array_size(const plain_array *a);
size_t plain_array_value_size(const plain_array *a);

/* Bytes held through the allocator (header included). */
size_t plain_array_memory_bytes(const plain_array *a);

#endif /* OBL_BASELINES_PLAIN_ARRAY_H */
