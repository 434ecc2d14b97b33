/* SPDX-License-Identifier: MIT */
/*
 * Default allocator and the accounting wrapper of alloc.h.
 */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

/* Blocks of at least OBL_HUGE_MIN bytes are aligned to, and rounded up to,
 * 2 MiB and advised for transparent huge pages (Linux, MADV_HUGEPAGE; a
 * no-op where the kernel's setting is "never"): for the ORAM trees, read at
 * random, fewer TLB misses; for the builds' working arrays, read in order,
 * far fewer page faults on fresh memory. Numbers: docs/oram.md, "Huge
 * pages". Public: the size and alignment. */
#define OBL_HUGE_MIN ((size_t)4 << 20)
#define OBL_HUGE_PAGE ((size_t)2 << 20)

static void *obl_default_alloc(void *opaque, size_t size, size_t align)
{
    (void)opaque;
    if (align < sizeof(void *))
        align = sizeof(void *);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= OBL_HUGE_MIN) {
        size_t r = (size + OBL_HUGE_PAGE - 1) & ~(OBL_HUGE_PAGE - 1);
        if (r < size)
            return NULL;
        void *p = aligned_alloc(OBL_HUGE_PAGE, r);
        if (p)
            (void)madvise(p, r, MADV_HUGEPAGE); /* advice only: failure is harmless */
        return p;
    }
#endif
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

/* see obl/obl.h */
obl_allocator obl_default_allocator(void)
{
    obl_allocator a = {obl_default_alloc, obl_default_free, NULL};
    return a;
}

void obl_alloc_init(obl_alloc_ctx *c, const obl_allocator *a)
{
    c->a = a && a->alloc && a->free ? *a : obl_default_allocator();
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
