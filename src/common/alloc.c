/*
 * Default allocator and the accounting wrapper of alloc.h.
 */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

static void *obl_default_alloc(void *opaque, size_t size, size_t align)
{
    (void)opaque;
    if (align < sizeof(void *))
        align = sizeof(void *);
    /* aligned_alloc wants size to be a multiple of align */
    size_t rounded = (size + align - 1) & ~(align - 1);
    if (rounded < size)
        return NULL;
    return aligned_alloc(align, rounded ? rounded : align);
}

static void obl_default_free(void *opaque, void *ptr, size_t size)
{
    (void)opaque;
    (void)size;
    free(ptr);
}

void obl_alloc_init(obl_alloc_ctx *c, const obl_allocator *a)
{
    if (a && a->alloc && a->free) {
        c->a = *a;
    } else {
        c->a.alloc = obl_default_alloc;
        c->a.free = obl_default_free;
        c->a.opaque = NULL;
    }
    c->bytes = 0;
}

void *obl_alloc(obl_alloc_ctx *c, size_t size, size_t align)
{
    if (size == 0)
        size = 1;
    void *p = c->a.alloc(c->a.opaque, size, align);
    if (!p)
        return NULL;
    memset(p, 0, size);
    c->bytes += size;
    return p;
}

void obl_free(obl_alloc_ctx *c, void *p, size_t size)
{
    if (!p)
        return;
    if (size == 0)
        size = 1;
    obl_wipe(p, size);
    c->bytes -= size;
    c->a.free(c->a.opaque, p, size);
}

void obl_wipe(void *p, size_t len)
{
    memset(p, 0, len);
    __asm__ __volatile__("" : : "r"(p) : "memory");
}
