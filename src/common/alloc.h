/* SPDX-License-Identifier: MIT */
/*
 * Internal allocation through the caller's obl_allocator (or the C library),
 * with overflow-checked size arithmetic. Every structure keeps a copy of its
 * allocator and counts the bytes it holds, so that memory is reported exactly
 * and freed with the size it was allocated with.
 */
#ifndef OBL_SRC_ALLOC_H
#define OBL_SRC_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>

typedef struct obl_alloc_ctx {
    obl_allocator a;   /* copy of the caller's allocator, or the default */
    size_t bytes;      /* bytes currently held through this context */
} obl_alloc_ctx;

/* Initialise from the caller's allocator; NULL selects aligned_alloc/free. */
void obl_alloc_init(obl_alloc_ctx *c, const obl_allocator *a);

/* The alignment to ask for memory that is read at random (ORAM trees): the
 * default allocator gives large such blocks huge pages (alloc.c). */
#define OBL_ALIGN_RANDOM ((size_t)4096)

/* size bytes aligned to align (power of two, <= 4096), or NULL. Zeroed. */
void *obl_alloc(obl_alloc_ctx *c, size_t size, size_t align);

/* Free what obl_alloc returned, with its size; wipes it first. NULL ok. */
void obl_free(obl_alloc_ctx *c, void *p, size_t size);

/* *out = a * b, returns 0 on overflow. */
static inline int obl_mul_ok(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static inline int obl_add_ok(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* Wipe memory in a way the compiler may not remove. */
void obl_wipe(void *p, size_t len);

#endif /* OBL_SRC_ALLOC_H */
