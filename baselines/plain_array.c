/* SPDX-License-Identifier: MIT */
/*
 * The plain array baseline (see plain_array.h): a header and one
 * cache-line-aligned block of n * value_size bytes. Reads and writes are a
 * bounds check and a memcpy; 8-byte values take a word move so that the
 * common case does not pay for a variable-length memcpy call.
 */
#include "plain_array.h"

#include <string.h>

#include "common/alloc.h"

struct plain_array {
    obl_alloc_ctx mem;
    unsigned char *data;
    uint64_t n;
    size_t value_size;
    size_t data_bytes;
};

obl_err plain_array_create(plain_array **out, uint64_t n, size_t value_size,
                           const obl_allocator *alloc)
{
    if (!out || n == 0 || value_size == 0)
        return OBL_ERR_INVALID_ARG;
    size_t bytes;
    if (n > SIZE_MAX || !obl_mul_ok((size_t)n, value_size, &bytes))
        return OBL_ERR_TOO_LARGE;
    obl_alloc_ctx mem;
    obl_alloc_init(&mem, alloc);
    plain_array *a = obl_alloc(&mem, sizeof(*a), _Alignof(plain_array));
    if (!a)
        return OBL_ERR_NOMEM;
    unsigned char *data = obl_alloc(&mem, bytes, 64);
    if (!data) {
        obl_free(&mem, a, sizeof(*a));
        return OBL_ERR_NOMEM;
    }
    a->data = data;
    a->n = n;
    a->value_size = value_size;
    a->data_bytes = bytes;
    a->mem = mem;
    *out = a;
    return OBL_OK;
}

void plain_array_destroy(plain_array *a)
{
    if (!a)
        return;
    obl_alloc_ctx mem = a->mem;
    obl_free(&mem, a->data, a->data_bytes);
    obl_free(&mem, a, sizeof(*a));
}

obl_err plain_array_read(const plain_array *a, uint64_t i, void *value_out)
{
    if (i >= a->n)
        return OBL_ERR_RANGE;
    const unsigned char *p = a->data + (size_t)i * a->value_size;
    if (a->value_size == 8)
        memcpy(value_out, p, 8);
    else
        memcpy(value_out, p, a->value_size);
    return OBL_OK;
}

obl_err plain_array_write(plain_array *a, uint64_t i, const void *value)
{
    if (i >= a->n)
        return OBL_ERR_RANGE;
    unsigned char *p = a->data + (size_t)i * a->value_size;
    if (a->value_size == 8)
        memcpy(p, value, 8);
    else
        memcpy(p, value, a->value_size);
    return OBL_OK;
}

uint64_t plain_array_size(const plain_array *a) { return a->n; }
size_t plain_array_value_size(const plain_array *a) { return a->value_size; }

size_t plain_array_memory_bytes(const plain_array *a) { return a->mem.bytes; }
